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
 * 2. the floor: the same notes into a copy of the floor file with raw prepared statements and
 *    nothing else, written as the store writes them: the same block row (the same columns and
 *    values: content id, canonical text, tags, times, near-duplicate key, layer), the same
 *    membership row, the same FTS5 row (same columns, tokenizer and options), in transactions of
 *    `--batch` notes, each made durable the same way (WAL, synchronous=FULL, one fsync per batch).
 *    What the floor leaves out is what the package adds: validation and the secrets scan, the
 *    unique content-id index and the near-key index with their lookups, the count. The canonical
 *    form, the two hashes and the index columns are computed inside its timing (the row needs
 *    them); the corpus is generated outside both timings;
 * 3. for continuity with earlier runs, the bare floor `bench:perf` measures: a `(rowid, text)` row
 *    and the FTS5 row only, all notes in one transaction (`bare_floor_*`);
 * 4. `--single` more notes, one `commit` each (one fsync each).
 * Rates are reported per wall second and per CPU second (`process.cpuUsage`): on a loaded
 * machine the CPU figures are close to what a quiet one gives. With `--json` the last line is one
 * JSON object.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { blockId } from '../lib/store/block-id.ts'
import { indexColumns } from '../lib/store/fts-columns.ts'
import { BlockStore } from '../lib/store/store.ts'
import { cjkIndexText, withoutCjk } from '../lib/text/cjk.ts'
import { nearKey } from '../lib/text/near-key.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { exitOnHelp, jsonWanted, progressLog, requirePerfCache, wholeFlag } from './args.ts'
import { corpus } from './corpus.ts'
import { cpuMs, nowMs, round } from './stats.ts'

const USAGE = 'npm run bench:writes -- --store DIR [--notes 20000] [--batch 1000] [--single 200] [--seed S] [--json]\n\nWrite rates at the size of an existing store (DIR: a folder `bench:perf --cache` built) against a like-for-like raw floor in the same run.'
exitOnHelp(USAGE)
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
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const NOTES = wholeFlag('notes', args.notes)
const BATCH = wholeFlag('batch', args.batch)
const SINGLE = wholeFlag('single', args.single)
const SEED = wholeFlag('seed', args.seed)
requirePerfCache(args.store)

/**
 * Makes the floor file write what the store writes: its bare `(rowid, text)` table gets the block
 * row's other columns (ALTER TABLE ADD COLUMN rewrites no row; earlier rows keep NULLs, only
 * appended rows are timed), a membership table shaped like the store's, and FTS5's
 * `secure-delete` option, which the store's index has.
 */
function likeTheStore(db: DatabaseSync): void {
  const have = new Set((db.prepare('PRAGMA table_info(b)').all() as Array<{ name: string }>).map((c) => String(c.name)))
  const columns = ['id TEXT', 'source TEXT', 'scene TEXT', 'semantic_type TEXT', 'created_at INTEGER', 'updated_at INTEGER', 'near_key TEXT', 'layer TEXT']
  for (const column of columns) if (!have.has(column.split(' ')[0]!)) db.exec(`ALTER TABLE b ADD COLUMN ${column}`)
  db.exec(`CREATE TABLE IF NOT EXISTS m (block_rowid INTEGER NOT NULL, scope TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (block_rowid, scope)) WITHOUT ROWID`)
  db.exec("INSERT INTO f (f, rank) VALUES ('secure-delete', 1)")
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

  // 2. The floor at the same size: the same rows as the store writes, raw, in the same batches.
  const floor = new DatabaseSync(join(dir, 'floor.db'))
  floor.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -65536')
  const floorSize = Number((floor.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n)
  likeTheStore(floor)
  const insertRow = floor.prepare(`INSERT INTO b (rowid, id, text, source, scene, semantic_type, created_at, updated_at, near_key, layer)
    VALUES (?, ?, ?, ?, '', '', ?, ?, ?, 'stable')`)
  const insertMember = floor.prepare("INSERT INTO m (block_rowid, scope, created_at) VALUES (?, 'global', ?)")
  const insertFts = floor.prepare('INSERT INTO f (rowid, latin, cjk) VALUES (?, ?, ?)')
  const raw = timed(() => {
    for (let from = 0; from < NOTES; from += BATCH) {
      const now = Date.now()
      floor.exec('BEGIN IMMEDIATE')
      const batch = texts.slice(from, Math.min(NOTES, from + BATCH)).map(canonicalText)
      // Block rows first, then index rows, as commit orders them.
      batch.forEach((text, j) => {
        insertRow.run(floorSize + from + j + 1, blockId(text), text, 'bench', now, now, nearKey(text))
        insertMember.run(floorSize + from + j + 1, now)
      })
      batch.forEach((text, j) => insertFts.run(floorSize + from + j + 1, ...indexColumns(text)))
      floor.exec('COMMIT')
    }
  })

  // 3. The bare floor of `bench:perf` (continuity): text and FTS5 row only, one transaction.
  const insertBare = floor.prepare('INSERT INTO b (rowid, text) VALUES (?, ?)')
  const bare = timed(() => {
    floor.exec('BEGIN')
    for (let i = 0; i < NOTES; i++) {
      const text = canonicalText(texts[i]!)
      insertBare.run(floorSize + NOTES + i + 1, text)
      insertFts.run(floorSize + NOTES + i + 1, withoutCjk(text), cjkIndexText(text))
    }
    floor.exec('COMMIT')
  })
  floor.close()

  // 4. Single commits, one transaction and one fsync each.
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
    bare_floor_commit_per_s: perS(NOTES, bare.wall),
    bare_floor_commit_cpu_per_s: perS(NOTES, bare.cpu),
    batch_vs_bare_floor_cpu: round(bare.cpu / batched.cpu, 2),
    batch_cpu_us_per_note: round(batched.cpu * 1000 / NOTES, 1),
    floor_cpu_us_per_note: round(raw.cpu * 1000 / NOTES, 1),
    commit_per_s: perS(SINGLE, single.wall),
    commit_cpu_per_s: perS(SINGLE, single.cpu),
    load_1m: round(load, 2),
    load_1m_end: round(loadavg()[0]!, 2),
  }
  log(`batched: ${result.batch_commit_per_s}/s (${result.batch_commit_cpu_per_s}/s CPU); floor ${result.floor_commit_per_s}/s (${result.floor_commit_cpu_per_s}/s CPU): ` +
    `${result.batch_vs_floor}× wall, ${result.batch_vs_floor_cpu}× CPU; bare floor ${result.bare_floor_commit_cpu_per_s}/s CPU; single ${result.commit_per_s}/s (${result.commit_cpu_per_s}/s CPU)`)
  if (asJson) console.log(JSON.stringify(result))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
