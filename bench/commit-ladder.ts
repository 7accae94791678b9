/**
 * `npm run bench:commit-ladder -- --store DIR [--notes 20000] [--batch 1000] [--rounds 2] [--json]`
 *
 * Where a batched commit's time goes, from `bench:perf`'s floor up to the package, one piece at a
 * time, in one run. DIR is a folder `bench:perf --cache` built (its `memory.db` and `floor.db`; only
 * read: every step appends the same `--notes` new notes to a fresh copy). Each step does what the
 * one before it did plus one thing, so the difference between two steps is that thing's cost:
 *
 * - `bare`: `bench:perf`'s floor (issue 18's definition): a `(rowid, text)` row and the FTS5 row,
 *   every note in ONE transaction, on a copy of `floor.db` (canonical form and index columns inside the timing);
 * - `bare_batched`: the same rows in durable transactions of `--batch` (WAL, synchronous=FULL);
 * - on a copy of `memory.db` (the store's schema, its near-key index dropped), the store's block row
 *   with its unique content-id index, and its FTS5 row after the batch's block rows (`rows_fts`);
 * - `plus_near_index`: the near-key index kept;
 * - `plus_membership`: the membership row and the count fold;
 * - `plus_near_lookup`: the near-duplicate lookup before each insert;
 * - `plus_js`: the package's JS per note inside the timing (canonical form, secrets scan, content
 *   id, near key, index columns), computed before the timing in the steps above;
 * - `store`: the package's own `commitMany`.
 * CPU µs a note per step (`process.cpuUsage`), steps alternated over `--rounds`; the median decides.
 * With `--json` the last line is one JSON object.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { applySecretsPolicy } from '../lib/secrets.ts'
import { blockId } from '../lib/store/block-id.ts'
import { indexColumns } from '../lib/store/fts-columns.ts'
import { BlockStore } from '../lib/store/store.ts'
import { cjkIndexText, withoutCjk } from '../lib/text/cjk.ts'
import { nearKey } from '../lib/text/near-key.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { jsonWanted, requirePerfCache, progressLog, wholeFlag } from './args.ts'
import { corpus } from './corpus.ts'
import { cpuMs, percentile, round } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: '' },
    notes: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '2' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const NOTES = wholeFlag('notes', args.notes)
const BATCH = wholeFlag('batch', args.batch)
const ROUNDS = wholeFlag('rounds', args.rounds)
const SEED = wholeFlag('seed', args.seed)
requirePerfCache(args.store)

/** The store-file steps, in ladder order: each adds one piece to the one before. */
const STORE_STEPS = ['rows_fts', 'plus_near_index', 'plus_membership', 'plus_near_lookup', 'plus_js'] as const
type StoreStep = typeof STORE_STEPS[number]
const STEPS = ['bare', 'bare_batched', ...STORE_STEPS, 'store'] as const
type Step = typeof STEPS[number]

const dir = mkdtempSync(join(tmpdir(), 'stablemem-ladder-'))
const load = loadavg()[0]!
try {
  const probe = new DatabaseSync(join(args.store, 'memory.db'), { readOnly: true })
  const size = Number((probe.prepare('SELECT max(rowid) AS n FROM blocks').get() as { n: number }).n)
  probe.close()
  const gen = corpus(SEED)
  const texts: string[] = []
  for (let i = 0; i < NOTES; i++) texts.push(gen.block(size + i).text)
  // What the JS of a commit computes, done before the timing for the steps that leave it out.
  const ready = texts.map((text) => {
    const canonical = canonicalText(text)
    return { text: canonical, id: blockId(canonical), near: nearKey(canonical), columns: indexColumns(canonical) }
  })
  const file = join(dir, 'step.db')
  const fresh = (name: 'memory.db' | 'floor.db'): void => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
    copyFileSync(join(args.store!, name), file)
  }

  /** `bench:perf`'s floor rows on a copy of its floor file, in one transaction or in batches. */
  const bare = (batched: boolean): number => {
    fresh('floor.db')
    const db = new DatabaseSync(file)
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -65536')
    const from = Number((db.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n) + 1
    const insertText = db.prepare('INSERT INTO b (rowid, text) VALUES (?, ?)')
    const insertFts = db.prepare('INSERT INTO f (rowid, latin, cjk) VALUES (?, ?, ?)')
    const cpu0 = process.cpuUsage()
    db.exec('BEGIN IMMEDIATE')
    for (let i = 0; i < NOTES; i++) {
      if (batched && i > 0 && i % BATCH === 0) db.exec('COMMIT; BEGIN IMMEDIATE')
      const text = canonicalText(texts[i]!)
      insertText.run(from + i, text)
      insertFts.run(from + i, withoutCjk(text), cjkIndexText(text))
    }
    db.exec('COMMIT')
    const cpu = cpuMs(cpu0)
    db.close()
    return cpu
  }

  /** The store's rows, raw, up to and including `step`'s piece. */
  const storeRows = (step: StoreStep): number => {
    const upTo = STORE_STEPS.indexOf(step)
    const has = (piece: StoreStep): boolean => STORE_STEPS.indexOf(piece) <= upTo
    fresh('memory.db')
    new BlockStore(file).close() // any schema upgrade happens here, untimed
    const db = new DatabaseSync(file)
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON; PRAGMA cache_size = -65536')
    if (!has('plus_near_index')) db.exec('DROP INDEX blocks_near_key')
    const insert = db.prepare(`INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at, near_key, layer)
      VALUES (?, ?, 'bench', '', '', ?, ?, ?, 'stable') ON CONFLICT(id) DO NOTHING`)
    const member = db.prepare("INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, 'global', ?) ON CONFLICT DO NOTHING")
    const fold = db.prepare(`UPDATE block_count SET n = n + (SELECT count(*) FROM blocks WHERE rowid > mark),
      mark = max(mark, coalesce((SELECT max(rowid) FROM blocks), 0))`)
    const lookup = db.prepare('SELECT id FROM blocks WHERE near_key = ? AND id <> ? AND superseded_by IS NULL ORDER BY rowid LIMIT 1')
    const index = db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
    const cpu0 = process.cpuUsage()
    for (let from = 0; from < NOTES; from += BATCH) {
      const now = Date.now()
      db.exec('BEGIN IMMEDIATE')
      const indexed: Array<[number | bigint, [string, string]]> = []
      for (let i = from; i < Math.min(NOTES, from + BATCH); i++) {
        let note = ready[i]!
        if (has('plus_js')) {
          const masked = applySecretsPolicy(canonicalText(texts[i]!), 'redact').text
          note = { text: masked, id: blockId(masked), near: nearKey(masked), columns: indexColumns(masked) }
        }
        if (has('plus_near_lookup')) lookup.get(note.near, note.id)
        const inserted = insert.run(note.id, note.text, now, now, note.near)
        if (has('plus_membership')) member.run(inserted.lastInsertRowid, now)
        indexed.push([inserted.lastInsertRowid, note.columns])
      }
      if (has('plus_membership')) fold.run()
      for (const [rowid, columns] of indexed) index.run(rowid, ...columns)
      db.exec('COMMIT')
    }
    const cpu = cpuMs(cpu0)
    db.close()
    return cpu
  }

  /** The package's own batched commit. */
  const store = (): number => {
    fresh('memory.db')
    const writer = new BlockStore(file)
    let cpu = 0
    for (let from = 0; from < NOTES; from += BATCH) {
      const inputs = texts.slice(from, Math.min(NOTES, from + BATCH)).map((text) => ({ text, source: 'bench' }))
      const cpu0 = process.cpuUsage()
      writer.commitMany(inputs)
      cpu += cpuMs(cpu0)
    }
    writer.close()
    return cpu
  }

  const samples = new Map<Step, number[]>(STEPS.map((step) => [step, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (const step of STEPS) {
      const cpu = step === 'bare' ? bare(false) : step === 'bare_batched' ? bare(true) : step === 'store' ? store() : storeRows(step)
      samples.get(step)!.push(round(cpu * 1000 / NOTES, 1))
    }
    log(`round ${r + 1}: ${STEPS.map((step) => `${step} ${samples.get(step)!.at(-1)}`).join(', ')} (CPU µs a note)`)
  }
  const median = (step: Step): number => round(percentile(samples.get(step)!, 50), 1)
  const result = {
    bench: 'commit-ladder',
    store_notes: size,
    notes: NOTES,
    batch: BATCH,
    rounds: ROUNDS,
    cpu_us_per_note: Object.fromEntries(STEPS.map((step) => [step, samples.get(step)])),
    median_cpu_us_per_note: Object.fromEntries(STEPS.map((step) => [step, median(step)])),
    /** Each step's median minus the one before it: what that piece adds to a note. */
    added_us_per_note: Object.fromEntries(STEPS.slice(1).map((step, i) => [step, round(median(step) - median(STEPS[i]!), 1)])),
    store_vs_bare_cpu: round(median('bare') / median('store'), 2),
    load_1m: round(load, 2),
    load_1m_end: round(loadavg()[0]!, 2),
  }
  if (asJson) console.log(JSON.stringify(result))
  else log(JSON.stringify(result.added_us_per_note))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
