/**
 * The full-text index's share of a large forget, measured for several index designs side by side
 * on copies of one store (bench/forget.ts, step 4b), each rebuilt in its design and vacuumed
 * before the clock starts, so the candidates start from the same kind of file. Only the index work differs
 * between the ways forget could remove a batch of notes' entries, so each candidate runs exactly
 * that work, the commit and the TRUNCATE checkpoint on its own copy, and is reported against the
 * current way (`rewrite`) in the same run. Each candidate also states whether it keeps forget's
 * guarantee (no term of a forgotten note left in the file or WAL: a few sentinel rows, indexed on
 * the copy only and forgotten with the notes, are looked for in the raw bytes) and whether
 * recall's exact-symbol queries (phrases of several tokens) still run on it.
 */
import { copyFileSync, readFileSync, rmSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { indexColumns } from '../lib/store/fts-columns.ts'
import { cpuMs, nowMs, round } from './stats.ts'

/** One way of removing the selected notes' entries from the index. */
interface Candidate {
  name: string
  /** What it is, for the report. */
  note: string
  /** Rebuilds the copy's index in this design before the clock starts (undefined: the store's own index). */
  index?: string
  /**
   * The index is merged into one segment before the clock starts, as a rebuilt one is. A rebuilt
   * design is compared with this code on a merged index, and this code with the previous code on
   * the index as the commits left it (several segments), where automerge has work to skip.
   */
  merged?: boolean
  /** The candidate its ratio is taken against (undefined: the first). */
  baseline?: string
  /** The index work of the forget, inside the transaction. */
  remove(db: DatabaseSync, rows: ReadonlyArray<{ rid: number, text: string }>): void
}

const option = (db: DatabaseSync, name: string, value: number) =>
  db.prepare('INSERT INTO blocks_fts (blocks_fts, rank) VALUES (?, ?)').run(name, BigInt(value))

/** The 'delete' command for every row, naming its indexed columns (what a contentless index needs). */
function deleteNamed(db: DatabaseSync, rows: ReadonlyArray<{ rid: number, text: string }>): void {
  const remove = db.prepare("INSERT INTO blocks_fts (blocks_fts, rowid, latin, cjk) VALUES ('delete', ?, ?, ?)")
  for (const r of rows) remove.run(r.rid, ...indexColumns(r.text))
}

/** forget's rewrite way: secure-delete off, the deletes held in memory, the whole-index rewrite; automerge on or off meanwhile. */
function rewrite(db: DatabaseSync, rows: ReadonlyArray<{ rid: number, text: string }>, automerge: boolean): void {
  option(db, 'secure-delete', 0)
  option(db, 'hashsize', 256 << 20)
  if (!automerge) option(db, 'automerge', 0)
  deleteNamed(db, rows)
  db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
  if (!automerge) option(db, 'automerge', 4)
  option(db, 'hashsize', 1 << 20)
  option(db, 'secure-delete', 1)
}

const TOKENIZE = "tokenize = 'porter unicode61 remove_diacritics 2'"
const COLUMNS = 'stablemem_fts_latin(text), stablemem_fts_cjk(text)'

/** The candidates, the previous code's way first (the baseline of the ratios). */
export const CANDIDATES: readonly Candidate[] = [
  {
    name: 'rewrite_automerge',
    note: 'the previous code: secure-delete off, a delete per note naming its columns, then the whole-index rewrite (optimize)',
    remove(db, rows) { rewrite(db, rows, true) },
  },
  {
    name: 'rewrite',
    note: 'this code: the same with automerge off until the rewrite (the flush of the deletes merges no segment the rewrite then rewrites again)',
    remove(db, rows) { rewrite(db, rows, false) },
  },
  {
    name: 'rewrite_merged',
    note: 'this code on an index merged into one segment first: the baseline of the designs below, whose rebuilt index is one segment too',
    merged: true,
    remove(db, rows) { rewrite(db, rows, false) },
  },
  {
    name: 'secure_delete',
    note: "FTS5's secure-delete for every note, no rewrite (what one-note forgets do)",
    merged: true,
    baseline: 'rewrite_merged',
    remove(db, rows) {
      option(db, 'hashsize', 256 << 20)
      deleteNamed(db, rows)
      db.exec('SAVEPOINT flush; RELEASE flush') // the deletes are applied when the pending changes are flushed
      option(db, 'hashsize', 1 << 20)
    },
  },
  {
    name: 'contentless_delete',
    baseline: 'rewrite_merged',
    note: 'contentless_delete=1: DELETE by rowid (no tokenizing, only tombstones), then the rewrite; a one-note forget would need the rewrite too',
    index: `CREATE VIRTUAL TABLE blocks_fts USING fts5(latin, cjk, content = '', contentless_delete = 1, ${TOKENIZE})`,
    remove(db, rows) {
      db.prepare('DELETE FROM blocks_fts WHERE rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rows.map((r) => r.rid)))
      db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
    },
  },
  {
    name: 'external_content',
    baseline: 'rewrite_merged',
    note: 'external content (the two columns kept in a table): DELETE by rowid reads them back and tokenizes them as before, then the rewrite',
    index: `CREATE TABLE blocks_fts_cols (rowid INTEGER PRIMARY KEY, latin TEXT, cjk TEXT);
      INSERT INTO blocks_fts_cols (rowid, latin, cjk) SELECT rowid, ${COLUMNS} FROM blocks;
      CREATE VIRTUAL TABLE blocks_fts USING fts5(latin, cjk, content = 'blocks_fts_cols', content_rowid = 'rowid', ${TOKENIZE})`,
    remove(db, rows) {
      option(db, 'hashsize', 256 << 20)
      db.prepare('DELETE FROM blocks_fts WHERE rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rows.map((r) => r.rid)))
      db.prepare('DELETE FROM blocks_fts_cols WHERE rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rows.map((r) => r.rid)))
      db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
      option(db, 'hashsize', 1 << 20)
    },
  },
  {
    name: 'detail_column',
    baseline: 'rewrite_merged',
    note: 'detail=column (no positions): deletes and rewrite as this code; recall\'s multi-token phrases (exact symbols) are refused',
    index: `CREATE VIRTUAL TABLE blocks_fts USING fts5(latin, cjk, content = '', detail = column, ${TOKENIZE})`,
    remove(db, rows) {
      option(db, 'hashsize', 256 << 20)
      deleteNamed(db, rows)
      db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
      option(db, 'hashsize', 1 << 20)
    },
  },
]

/** One candidate's measurement. */
export interface CandidateResult {
  name: string
  note: string
  /** The index work, the commit and the checkpoint, in ms. */
  cpu_ms: number
  wall_ms: number
  /** CPU against its baseline candidate in the same run (the previous code's way, or `rewrite_merged`). */
  cpu_ratio: number
  baseline: string
  /** No sentinel term of a forgotten note is left in the file or WAL after the checkpoint. */
  bytes_gone: boolean
  /** An exact-symbol phrase query (`latin : "10.0.0.1"`, several tokens) runs on this index. */
  phrase_queries: boolean
  /** Index pages (rows of blocks_fts_data) after the forget. */
  index_pages: number
}

/** Index-only rows forgotten with the notes; their terms occur nowhere else. */
const SENTINEL_TEXT = 'sentinel zqxvorbelith 鼹鼷鼸'
const SENTINEL_ROWS = 5
/** What the byte scan looks for: the terms' tails, which survive FTS5's prefix compression of terms. */
const SENTINEL_NEEDLES = ['vorbelith', '鼷', '鼸']

/**
 * Runs every candidate on its own copy of `path` (a store file with an empty WAL), forgetting the
 * notes `scene` holds.
 */
export function measureCandidates(path: string, scene: string): CandidateResult[] {
  const results: CandidateResult[] = []
  for (const candidate of CANDIDATES) {
    const copy = `${path}.${candidate.name}`
    copyFileSync(path, copy)
    const db = new DatabaseSync(copy)
    try {
      db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA secure_delete = ON; PRAGMA cache_size = -65536')
      if (candidate.index !== undefined) {
        db.function('stablemem_fts_latin', { deterministic: true }, (text) => indexColumns(String(text))[0])
        db.function('stablemem_fts_cjk', { deterministic: true }, (text) => indexColumns(String(text))[1])
        db.exec(`BEGIN; DROP TABLE blocks_fts; ${candidate.index};`)
        if (!candidate.index.includes('content_rowid')) db.exec(`INSERT INTO blocks_fts (rowid, latin, cjk) SELECT rowid, ${COLUMNS} FROM blocks`)
        else db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('rebuild')")
        db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize'); COMMIT")
      } else if (candidate.merged === true) {
        db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
      }
      // Every copy is compacted, so each candidate starts from the same kind of file (a rebuilt
      // index would otherwise sit in the pages the old one freed).
      db.exec('VACUUM')
      db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
      const rows = db.prepare('SELECT rowid AS rid, text FROM blocks WHERE scene = ? ORDER BY rowid').all(scene) as Array<{ rid: number, text: string }>
      const top = Number((db.prepare('SELECT max(rowid) AS m FROM blocks').get() as { m: number }).m)
      const sentinels = Array.from({ length: SENTINEL_ROWS }, (_, i) => ({ rid: top + 1 + i, text: SENTINEL_TEXT }))
      const index = db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
      if (candidate.index?.includes('content_rowid')) {
        const cols = db.prepare('INSERT INTO blocks_fts_cols (rowid, latin, cjk) VALUES (?, ?, ?)')
        for (const r of sentinels) cols.run(r.rid, ...indexColumns(r.text))
      }
      for (const r of sentinels) index.run(r.rid, ...indexColumns(r.text))
      db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
      rows.push(...sentinels)
      db.prepare('SELECT count(*) FROM blocks_fts_data').get() // the index's first pages read, as in a store that has been queried
      const wall = nowMs()
      const cpu = cpuMs()
      db.exec('BEGIN IMMEDIATE')
      candidate.remove(db, rows)
      db.exec('COMMIT')
      db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
      const spent = { cpu_ms: cpuMs() - cpu, wall_ms: nowMs() - wall }
      let phrase = true
      try { db.prepare(`SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'latin : "10.0.0.1"' LIMIT 1`).all() } catch { phrase = false }
      const pages = Number((db.prepare('SELECT count(*) AS n FROM blocks_fts_data').get() as { n: number }).n)
      db.close()
      const file = Buffer.concat([readFileSync(copy), readFileSync(`${copy}-wal`, { flag: 'a+' })])
      const gone = SENTINEL_NEEDLES.every((needle) => !file.includes(Buffer.from(needle, 'utf8')))
      const baseline = results.find((r) => r.name === candidate.baseline) ?? results[0]
      results.push({
        name: candidate.name, note: candidate.note, cpu_ms: Math.round(spent.cpu_ms), wall_ms: Math.round(spent.wall_ms),
        cpu_ratio: baseline === undefined ? 1 : round(spent.cpu_ms / baseline.cpu_ms, 3), baseline: baseline?.name ?? candidate.name,
        bytes_gone: gone, phrase_queries: phrase, index_pages: pages,
      })
    } finally {
      if (db.isOpen) db.close()
      for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true })
    }
  }
  return results
}
