/**
 * `npm run bench:key-designs -- --store DIR [--notes 32000] [--merge-every 16000] [--batch 1000] [--rounds 2] [--json]`
 *
 * What the commit path's two random-key indexes (the unique content id, the near-duplicate key)
 * cost against `bench:writes`' floor, and what a log-structured key index would give back, in
 * one run at the size of an existing store. DIR is a folder `bench:perf --cache` built; its
 * `floor.db` and `memory.db` are only read. A copy's rows are given their content ids and near keys once (the store's
 * functions; untimed, then VACUUM), so every index below starts as full as the store's.
 *
 * Each design then appends the same `--notes` notes in transactions of `--batch` (WAL,
 * synchronous=FULL, one fsync each) with raw prepared statements, writing what `bench:writes`'
 * floor writes (block row with its id and near key, membership row, FTS5 row after the batch's
 * block rows) plus the design's own index work:
 * - `floor`: nothing more (`bench:writes`' floor);
 * - `unique_id`: a UNIQUE index on the content id (a floor that keeps the index every
 *   content-addressed store needs);
 * - `btree`: the store's schema today: that index, an index on the near key, and the near-key
 *   lookup before each insert;
 * - `log_btree`: both keys log-structured with b-tree tables: each new key goes into a small
 *   "recent" table, lookups read the recent table and the main one, and every `--merge-every`
 *   notes the recent table is merged into the main one in key order and emptied;
 * - `log_memory`: the lower bound of any log-structured design: the recent keys cost no write at
 *   all (kept in memory; the block row is the log), each note only looks its two keys up in the
 *   main tables, and the merge inserts the recent rows' keys into them in key order;
 * - `lookups`: `log_memory` without its merges (the two main-table reads a note costs, alone),
 *   so `log_memory` − `lookups` is what the merges cost.
 * Beside them, `store`: the same notes through the package's `commitMany` (batches of `--batch`)
 * on a copy of DIR's `memory.db`, so every design and the floor have the store's own rate in
 * the same run (`bench:writes` measures the store against the floor alone).
 * Merges run inside the timed span at their real frequency (`--notes` should be a multiple of
 * `--merge-every`, so the span ends on a merge). Designs alternate for `--rounds` rounds; the
 * report gives CPU µs per note (`process.cpuUsage`, close to a quiet machine's under load) and
 * wall µs per note for each, and each design's floor ÷ design CPU ratio, per round and over all rounds.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { blockId } from '../lib/store/block-id.ts'
import { BlockStore } from '../lib/store/store.ts'
import { indexColumns } from '../lib/store/fts-columns.ts'
import { nearKey } from '../lib/text/near-key.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { jsonWanted, requirePerfCache, progressLog, wholeFlag } from './args.ts'
import { corpus } from './corpus.ts'
import { cpuMs, nowMs, round } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: '' },
    notes: { type: 'string', default: '32000' },
    'merge-every': { type: 'string', default: '16000' },
    batch: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '2' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const NOTES = wholeFlag('notes', args.notes)
const MERGE_EVERY = wholeFlag('merge-every', args['merge-every'])
const BATCH = wholeFlag('batch', args.batch)
const ROUNDS = wholeFlag('rounds', args.rounds)
const SEED = wholeFlag('seed', args.seed)
requirePerfCache(args.store)

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0)
}

/** One note as the floor writes it: rowid, content id, canonical text, near key. */
type Write = (rowid: number, id: string, text: string, near: string) => void

/** A key-index design: its tables (created untimed), its per-note write and its per-batch step. */
interface Design {
  setup: string
  write: (db: DatabaseSync) => Write
  afterBatch?: (db: DatabaseSync) => void
}

/** The floor's block and membership rows (`bench:writes`' floor). */
function rows(db: DatabaseSync): Write {
  const row = db.prepare(`INSERT INTO b (rowid, id, text, source, scene, semantic_type, created_at, updated_at, near_key, layer)
    VALUES (?, ?, ?, 'bench', '', '', ?, ?, ?, 'stable')`)
  const member = db.prepare("INSERT INTO m (block_rowid, scope, created_at) VALUES (?, 'global', ?)")
  return (rowid, id, text, near) => {
    const now = Date.now()
    row.run(rowid, id, text, now, now, near)
    member.run(rowid, now)
  }
}

/** Main key tables filled from every existing row, in key order (the state right after a merge). */
const MAIN_TABLES = `
  CREATE TABLE id_main (id TEXT PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO id_main SELECT id, rowid FROM b ORDER BY id;
  CREATE TABLE near_main (key TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (key, rid)) WITHOUT ROWID;
  INSERT INTO near_main SELECT near_key, rowid FROM b ORDER BY near_key, rowid;`

/** Notes appended since the last merge, for the designs that merge. */
let recent = 0
/** The recent keys of `log_memory` (the rows above the mark hold them; no table is written). */
const recentIds = new Set<string>()
const recentNear = new Map<string, number>()
let mark = 0
/** Merges run in the current design's timed span. */
let merges = 0

const DESIGNS: Record<string, Design> = {
  floor: { setup: '', write: rows },
  unique_id: { setup: 'CREATE UNIQUE INDEX b_id ON b(id)', write: rows },
  btree: {
    setup: 'CREATE UNIQUE INDEX b_id ON b(id); CREATE INDEX b_near ON b(near_key)',
    write: (db) => {
      const write = rows(db)
      const find = db.prepare('SELECT rowid FROM b WHERE near_key = ? AND id <> ? ORDER BY rowid LIMIT 1')
      return (rowid, id, text, near) => {
        find.get(near, id)
        write(rowid, id, text, near)
      }
    },
  },
  log_btree: {
    setup: `${MAIN_TABLES}
      CREATE TABLE id_recent (id TEXT PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE near_recent (key TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (key, rid)) WITHOUT ROWID;`,
    write: (db) => {
      const write = rows(db)
      const has = db.prepare('SELECT EXISTS (SELECT 1 FROM id_main WHERE id = ?1) OR EXISTS (SELECT 1 FROM id_recent WHERE id = ?1) AS x')
      const find = db.prepare('SELECT min(rid) AS r FROM (SELECT rid FROM near_main WHERE key = ?1 UNION ALL SELECT rid FROM near_recent WHERE key = ?1)')
      const addId = db.prepare('INSERT INTO id_recent (id, rid) VALUES (?, ?)')
      const addNear = db.prepare('INSERT INTO near_recent (key, rid) VALUES (?, ?)')
      return (rowid, id, text, near) => {
        has.get(id)
        find.get(near)
        write(rowid, id, text, near)
        addId.run(id, rowid)
        addNear.run(near, rowid)
        recent++
      }
    },
    afterBatch: (db) => {
      if (recent < MERGE_EVERY) return
      db.exec(`INSERT INTO id_main SELECT id, rid FROM id_recent ORDER BY id; DELETE FROM id_recent;
        INSERT INTO near_main SELECT key, rid FROM near_recent ORDER BY key, rid; DELETE FROM near_recent;`)
      recent = 0
      merges++
    },
  },
  lookups: {
    setup: MAIN_TABLES,
    write: (db) => {
      const write = rows(db)
      const has = db.prepare('SELECT 1 AS x FROM id_main WHERE id = ?')
      const find = db.prepare('SELECT rid FROM near_main WHERE key = ? LIMIT 1')
      return (rowid, id, text, near) => {
        has.get(id)
        find.get(near)
        write(rowid, id, text, near)
      }
    },
  },
  log_memory: {
    setup: MAIN_TABLES,
    write: (db) => {
      const write = rows(db)
      const has = db.prepare('SELECT 1 AS x FROM id_main WHERE id = ?')
      const find = db.prepare('SELECT rid FROM near_main WHERE key = ? LIMIT 1')
      recentIds.clear()
      recentNear.clear()
      mark = Number((db.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n)
      return (rowid, id, text, near) => {
        if (!recentIds.has(id)) has.get(id)
        if (!recentNear.has(near)) find.get(near)
        write(rowid, id, text, near)
        recentIds.add(id)
        if (!recentNear.has(near)) recentNear.set(near, rowid)
        recent++
      }
    },
    afterBatch: (db) => {
      if (recent < MERGE_EVERY) return
      db.prepare('INSERT INTO id_main SELECT id, rowid FROM b WHERE rowid > ? ORDER BY id').run(mark)
      db.prepare('INSERT INTO near_main SELECT near_key, rowid FROM b WHERE rowid > ? ORDER BY near_key, rowid').run(mark)
      mark = Number((db.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n)
      recentIds.clear()
      recentNear.clear()
      recent = 0
      merges++
    },
  },
}

const load = loadavg()[0]!
const dir = mkdtempSync(join(tmpdir(), 'stablemem-key-designs-'))
try {
  // The floor file with every row keyed as the store keys it (untimed).
  const keyed = join(dir, 'keyed.db')
  copyFileSync(join(args.store, 'floor.db'), keyed)
  const t0 = nowMs()
  const prep = new DatabaseSync(keyed)
  prep.function('stablemem_id', { deterministic: true }, (text) => blockId(String(text)))
  prep.function('stablemem_near', { deterministic: true }, (text) => nearKey(canonicalText(String(text))))
  const have = new Set((prep.prepare('PRAGMA table_info(b)').all() as Array<{ name: string }>).map((c) => String(c.name)))
  for (const column of ['id TEXT', 'source TEXT', 'scene TEXT', 'semantic_type TEXT', 'created_at INTEGER', 'updated_at INTEGER', 'near_key TEXT', 'layer TEXT']) {
    if (!have.has(column.split(' ')[0]!)) prep.exec(`ALTER TABLE b ADD COLUMN ${column}`)
  }
  prep.exec(`CREATE TABLE IF NOT EXISTS m (block_rowid INTEGER NOT NULL, scope TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (block_rowid, scope)) WITHOUT ROWID`)
  prep.exec("INSERT INTO f (f, rank) VALUES ('secure-delete', 1)")
  prep.exec(`UPDATE b SET id = stablemem_id(text), near_key = stablemem_near(text), source = 'bench', scene = '', semantic_type = '',
    created_at = 0, updated_at = 0, layer = 'stable' WHERE id IS NULL`)
  prep.exec("INSERT OR IGNORE INTO m (block_rowid, scope, created_at) SELECT rowid, 'global', 0 FROM b")
  prep.exec('VACUUM') // rows grown in place by the update are packed again, as the store's rows written whole are
  const size = Number((prep.prepare('SELECT max(rowid) AS n FROM b').get() as { n: number }).n)
  prep.close()
  log(`keyed the floor's ${size} rows in ${Math.round(nowMs() - t0)} ms; ${NOTES} notes per design, merge every ${MERGE_EVERY}, ${ROUNDS} rounds`)

  const gen = corpus(SEED)
  const texts: string[] = []
  for (let i = 0; i < NOTES; i++) texts.push(canonicalText(gen.block(size + i).text))

  const results: Record<string, Array<{ cpu_us: number, wall_us: number, merges: number }>> = {}
  const record = (round_: number, name: string, cpu: number, wall: number): void => {
    const sample = { cpu_us: round(cpu * 1000 / NOTES, 1), wall_us: round(wall * 1000 / NOTES, 1), merges }
    ;(results[name] ??= []).push(sample)
    log(`round ${round_ + 1} ${name}: ${sample.cpu_us} µs CPU, ${sample.wall_us} µs wall a note, ${merges} merges`)
  }
  for (let round_ = 0; round_ < ROUNDS; round_++) {
    // The package's own commit path on a copy of the store, opened (and upgraded if older) before the timing.
    const storeFile = join(dir, 'store.db')
    for (const suffix of ['', '-wal', '-shm']) rmSync(storeFile + suffix, { force: true })
    copyFileSync(join(args.store, 'memory.db'), storeFile)
    const store = new BlockStore(storeFile)
    merges = 0
    const storeCpu0 = process.cpuUsage()
    const storeWall0 = nowMs()
    for (let from = 0; from < NOTES; from += BATCH) store.commitMany(texts.slice(from, Math.min(NOTES, from + BATCH)).map((text) => ({ text, source: 'bench' })))
    record(round_, 'store', cpuMs(storeCpu0), nowMs() - storeWall0)
    store.close()
    for (const [name, design] of Object.entries(DESIGNS)) {
      const file = join(dir, 'design.db')
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
      copyFileSync(keyed, file)
      const db = new DatabaseSync(file)
      db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -65536; PRAGMA secure_delete = ON')
      if (design.setup !== '') db.exec(design.setup)
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
      const write = design.write(db)
      const fts: StatementSync = db.prepare('INSERT INTO f (rowid, latin, cjk) VALUES (?, ?, ?)')
      recent = 0
      merges = 0
      const cpu0 = process.cpuUsage()
      const wall0 = nowMs()
      for (let from = 0; from < NOTES; from += BATCH) {
        db.exec('BEGIN IMMEDIATE')
        const batch = texts.slice(from, Math.min(NOTES, from + BATCH))
        // The content id, the near key and the index columns are computed inside the timing, as in bench:writes' floor.
        batch.forEach((text, j) => write(size + from + j + 1, blockId(text), text, nearKey(text)))
        batch.forEach((text, j) => fts.run(size + from + j + 1, ...indexColumns(text)))
        design.afterBatch?.(db)
        db.exec('COMMIT')
      }
      record(round_, name, cpuMs(cpu0), nowMs() - wall0)
      db.close()
    }
  }

  const floor = results.floor!
  const designs: Record<string, unknown> = {}
  for (const [name, samples] of Object.entries(results)) {
    const ratios = samples.map((s, i) => round(floor[i]!.cpu_us / s.cpu_us, 2))
    designs[name] = {
      cpu_us_per_note: samples.map((s) => s.cpu_us),
      wall_us_per_note: samples.map((s) => s.wall_us),
      merges: samples[0]!.merges,
      floor_vs_design_cpu: ratios,
      // Over every round: total floor CPU ÷ total design CPU.
      floor_vs_design_cpu_all: round(sum(floor.map((s) => s.cpu_us)) / sum(samples.map((s) => s.cpu_us)), 2),
    }
  }
  const result = { bench: 'key-designs', floor_notes: size, notes: NOTES, batch: BATCH, merge_every: MERGE_EVERY, rounds: ROUNDS, designs, load_1m: round(load, 2), load_1m_end: round(loadavg()[0]!, 2) }
  if (asJson) console.log(JSON.stringify(result))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
