/**
 * `npm run bench:writes -- --store DIR [--notes 20000] [--batch 1000] [--single 200] [--seed S] [--json]`
 *
 * Write rates at the size of an existing store, against the raw floor at the same size, in the
 * same run. DIR is a folder `bench:perf --cache` built (its `memory.db` and `floor.db`): building
 * a million-note store takes the better part of an hour on a busy two-core machine, while this
 * measures the commit path at that size in minutes. Both files are copied first (DIR is only
 * read), and the store is opened once before anything is timed (an older schema is upgraded then;
 * the upgrade's time is reported on its own).
 *
 * Then, with notes the store does not hold yet (the corpus of `bench:perf`, from the store's size on):
 * 1. `--notes` notes through `commitMany` in batches of `--batch` (synchronous=FULL, one fsync per batch);
 * 2. the same notes into the floor file the way `bench:perf` fills it: a bare `(rowid, text)` table
 *    plus the FTS5 table with the same columns and tokenizer, raw statements, one transaction
 *    (canonical form and index columns computed inside the timing, the corpus generated outside);
 * 3. `--single` more notes, one `commit` each (one fsync each).
 * Rates are reported per wall second and per CPU second (`process.cpuUsage`): on a loaded
 * machine the CPU figures are close to what a quiet one gives. With `--json` the last line is one
 * JSON object.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { BlockStore } from '../lib/store/store.ts'
import { cjkIndexText, withoutCjk } from '../lib/text/cjk.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { corpus } from './corpus.ts'
import { cpuMs, nowMs, round } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: '' },
    notes: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '1000' },
    single: { type: 'string', default: '200' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean', default: false },
  },
})
const NOTES = positive('notes')
const BATCH = positive('batch')
const SINGLE = positive('single')
const SEED = positive('seed')
if (args.store === '' || !existsSync(join(args.store, 'memory.db')) || !existsSync(join(args.store, 'floor.db'))) {
  throw new Error('--store must name a folder built by `bench:perf --cache` (with memory.db and floor.db)')
}

function positive(name: 'notes' | 'batch' | 'single' | 'seed'): number {
  const value = Number(args[name])
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer, got ${String(args[name])}`)
  return value
}

function log(line: string): void {
  if (args.json) console.error(line)
  else console.log(line)
}

/** Wall and CPU time of `fn`, in ms. */
function timed(fn: () => void): { wall: number, cpu: number } {
  const cpu0 = process.cpuUsage()
  const t0 = nowMs()
  fn()
  return { wall: nowMs() - t0, cpu: cpuMs(cpu0) }
}

const load = loadavg()[0]!
const dir = mkdtempSync(join(tmpdir(), 'stablemem-writes-'))
try {
  for (const file of ['memory.db', 'floor.db']) copyFileSync(join(args.store, file), join(dir, file))
  let store: BlockStore | undefined
  const upgrade = timed(() => { store = new BlockStore(join(dir, 'memory.db')) })
  const writer = store!
  const size = writer.count()
  const gen = corpus(SEED)
  const texts: string[] = []
  for (let i = 0; i < NOTES + SINGLE; i++) texts.push(gen.block(size + i).text)
  log(`store of ${size} notes (opened in ${Math.round(upgrade.wall)} ms); appending ${NOTES} batched (${BATCH}) and ${SINGLE} single`)

  // 1. Batched commits through the package's path.
  const batched = { wall: 0, cpu: 0 }
  for (let from = 0; from < NOTES; from += BATCH) {
    const inputs = texts.slice(from, Math.min(NOTES, from + BATCH)).map((text) => ({ text, source: 'bench' }))
    const t = timed(() => { writer.commitMany(inputs) })
    batched.wall += t.wall
    batched.cpu += t.cpu
  }

  // 2. The floor at the same size, filled as bench:perf fills it. The corpus is generated before
  // either timing here; bench:perf's floor times its generation too, which makes that floor slower.
  const floor = new DatabaseSync(join(dir, 'floor.db'))
  floor.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -65536')
  const floorSize = Number((floor.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n)
  const insertText = floor.prepare('INSERT INTO b (rowid, text) VALUES (?, ?)')
  const insertFts = floor.prepare('INSERT INTO f (rowid, latin, cjk) VALUES (?, ?, ?)')
  const raw = timed(() => {
    floor.exec('BEGIN')
    for (let i = 0; i < NOTES; i++) {
      const text = canonicalText(texts[i]!)
      insertText.run(floorSize + i + 1, text)
      insertFts.run(floorSize + i + 1, withoutCjk(text), cjkIndexText(text))
    }
    floor.exec('COMMIT')
  })
  floor.close()

  // 3. Single commits, one transaction and one fsync each.
  const single = timed(() => { for (let i = NOTES; i < NOTES + SINGLE; i++) writer.commit({ text: texts[i]!, source: 'bench' }) })
  writer.close()

  const perS = (n: number, ms: number) => Math.round(n / (ms / 1000))
  const result = {
    bench: 'writes',
    store_notes: size,
    floor_notes: floorSize,
    notes: NOTES,
    batch: BATCH,
    open_ms: round(upgrade.wall),
    batch_commit_per_s: perS(NOTES, batched.wall),
    floor_commit_per_s: perS(NOTES, raw.wall),
    batch_vs_floor: round(batched.wall > 0 ? raw.wall / batched.wall : Number.NaN, 2),
    batch_commit_cpu_per_s: perS(NOTES, batched.cpu),
    floor_commit_cpu_per_s: perS(NOTES, raw.cpu),
    batch_vs_floor_cpu: round(raw.cpu / batched.cpu, 2),
    commit_per_s: perS(SINGLE, single.wall),
    commit_cpu_per_s: perS(SINGLE, single.cpu),
    load_1m: round(load, 2),
    load_1m_end: round(loadavg()[0]!, 2),
  }
  log(`batched: ${result.batch_commit_per_s}/s (${result.batch_commit_cpu_per_s}/s CPU); floor ${result.floor_commit_per_s}/s (${result.floor_commit_cpu_per_s}/s CPU): ` +
    `${result.batch_vs_floor}× wall, ${result.batch_vs_floor_cpu}× CPU; single ${result.commit_per_s}/s (${result.commit_cpu_per_s}/s CPU)`)
  if (args.json) console.log(JSON.stringify(result))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
