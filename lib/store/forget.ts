/**
 * Forgetting for real: hard deletion of notes with everything that refers to them, and the
 * clean-up that makes their bytes unrecoverable from the store file, its WAL and its shared-memory
 * file. `BlockStore.forget` and `BlockStore.vacuum` delegate here.
 *
 * "Gone" (docs/reliability.md): in one transaction the block rows, their full-text entries, their
 * vectors, every edge that touches them (both directions) and the vector centroids they were part
 * of are deleted. The full-text index has FTS5's `secure-delete` option (set by a migration), so
 * deleting a row removes its terms and positions from the index pages themselves; a forget of many
 * notes at once instead deletes without it, whichever is cheaper (`indexDeletion`), and leaves the
 * old index segments' bytes to the scrub (lib/store/scrub.ts): the call returns once the notes are
 * invisible everywhere, with `bytesPending`, unless `wait`. The connection runs with
 * `PRAGMA secure_delete = ON`, so every freed cell and page is overwritten with zeros. After the
 * commit (or the scrub), a TRUNCATE checkpoint copies the zeroed pages into the file and empties
 * the WAL, which still held the old page images. A tombstone (the
 * content address only, never the text) keeps an older export from bringing the note back.
 *
 * The parts: the shapes (`forget-types.ts`, re-exported here), the target checks
 * (`forget-target.ts`), the set-based deletion of a large forget (`forget-bulk.ts`) and the
 * removal of index entries (`forget-index.ts`).
 */
import { BULK_NOTES, dependentsOf, detachTrigger, foreignKeysOn, moveScopeCounts, quoteId, type Dependent } from './forget-bulk.ts'
import { deleteIndexEntries } from './forget-index.ts'
import { checkOrigin, parseTarget } from './forget-target.ts'
import type { ForgetFilter, ForgetHost, ForgetOptions, ForgetResult, ForgetTarget, VacuumResult } from './forget-types.ts'
import { DERIVED_FROM } from './layers.ts'
import { normalizeSceneKey } from './scene-key.ts'
import { BLOCK_COUNT_DELETE_TRIGGER } from './schema.ts'
import { SCOPE_COUNT_DELETE_TRIGGER } from './scope-counts.ts'
import { clearWal, recordScrub, scrub } from './scrub.ts'
import type { Block } from './types.ts'

export type { ForgetFilter, ForgetHost, ForgetOptions, ForgetResult, ForgetTarget, VacuumResult }

/**
 * Deletes the target notes in one transaction (see the module comment for what goes with them),
 * then empties the WAL. An empty filter and a malformed target are refused before anything is
 * read; ids that are not stored are reported in `unknown`.
 */
export function forgetBlocks(host: ForgetHost, target: ForgetTarget, options: ForgetOptions = {}): ForgetResult {
  const selection = parseTarget(target)
  const restore = options.restoreSuperseded ?? true
  const withDuplicates = options.withDuplicates ?? true
  const dryRun = options.dryRun ?? false
  const origin = checkOrigin(options.origin ?? '')
  const { db } = host
  // Keyed by rowid, the order the notes are read and deleted in; the index on id serves every `IN (SELECT id …)` below.
  db.exec('CREATE TEMP TABLE IF NOT EXISTS stablemem_forget (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, derived INTEGER NOT NULL DEFAULT 0)')
  const dependents = dependentsOf(host)
  // With every dependent deleted set-based (see `dependentsOf`), SQLite's own cascade would only
  // look again, once per note and table. `foreign_keys` changes only outside a transaction and
  // recompiles the connection's statements, so a forget that may take many notes (a filter or a
  // long list) switches it off for its transaction and back on after.
  const cascadeOff = !dryRun && dependents !== null && (selection.kind === 'filter' || selection.ids.length >= BULK_NOTES) && foreignKeysOn(host)
  if (cascadeOff) db.exec('PRAGMA foreign_keys = OFF')
  let result: ForgetResult
  let scrubNow = false
  try {
    db.exec('BEGIN IMMEDIATE')
    db.exec('DELETE FROM temp.stablemem_forget')
    let unknown: string[] = []
    if (selection.kind === 'ids') {
      host.stmt('forget.pickIds', `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid)
        SELECT id, rowid FROM blocks WHERE id IN (SELECT value FROM json_each(?))`).run(JSON.stringify(selection.ids))
      const found = new Set((host.stmt('forget.picked', 'SELECT id FROM temp.stablemem_forget').all() as Array<{ id: string }>).map((r) => String(r.id)))
      unknown = selection.ids.filter((id) => !found.has(id))
      if (withDuplicates && found.size > 0) {
        host.fillNearKeys()
        host.stmt('forget.pickDuplicates', `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid)
          SELECT b.id, b.rowid FROM blocks b WHERE b.near_key IN (
            SELECT k.near_key FROM temp.stablemem_forget f CROSS JOIN blocks k ON k.rowid = f.rid WHERE k.near_key <> '')`).run()
      }
    } else {
      for (const { sql, params } of filterSql(selection.filter)) db.prepare(sql).run(...params)
    }
    const derived = pickDerived(host)
    const { deleted, rids } = readDeleted(host)
    const restored = restore ? respliceSuccessors(host, deleted) : []
    const everything = selection.kind === 'filter' && selection.filter.all === true
    const { bytesPending, inlineScrub, ...counts } = dryRun ? { ...countRefs(host), bytesPending: false, inlineScrub: false }
      : deleteRefs(host, { origin, everything, dependents, deleted, rids })
    db.exec(dryRun ? 'ROLLBACK' : 'COMMIT')
    scrubNow = inlineScrub
    result = { deleted, unknown, restored, derived, ...counts, dryRun, walCleared: false, bytesPending }
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK')
    throw error
  } finally {
    if (cascadeOff) db.exec('PRAGMA foreign_keys = ON')
  }
  if (result.bytesPending && (options.wait === true || scrubNow)) {
    const scrubbed = scrub(host)
    result.bytesPending = scrubbed.pending
    result.walCleared = scrubbed.walCleared
  } else if (!dryRun && result.deleted.length > 0 && !result.bytesPending) {
    result.walCleared = clearWal(db, host.busyTimeoutMs)
  }
  return result
}

/**
 * Compacts the full-text index into one segment, rebuilds the file without free pages (SQLite `VACUUM`, which
 * also drops any free-page residue left by releases before secure deletion) and empties the WAL.
 */
export function vacuumStore(host: ForgetHost): VacuumResult {
  const bytesBefore = host.fileBytes()
  host.db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
  scrub(host) // the index is one segment now: a pending scrub only needs its record cleared
  host.db.exec('VACUUM')
  const walCleared = clearWal(host.db, host.busyTimeoutMs)
  return { bytesBefore, bytesAfter: host.fileBytes(), walCleared }
}

/**
 * The statements that put a filter's notes into the selection. A scene names the notes saved with
 * it and those attached to it (docs/scenes.md): one statement for each, the second reading the
 * scene's refs and meeting the blocks only for notes the first did not already select. (One
 * statement with an OR over both looked every note up twice and merged the two rowid lists.)
 */
function filterSql(filter: ForgetFilter): Array<{ sql: string, params: Array<string | number> }> {
  const clauses: string[] = []
  const params: Array<string | number> = []
  if (filter.source !== undefined) { clauses.push('b.source = ?'); params.push(filter.source) }
  if (filter.before !== undefined) { clauses.push('b.created_at < ?'); params.push(filter.before as number) }
  const and = clauses.map((c) => ` AND ${c}`).join('')
  if (filter.scene === undefined) {
    return [{ sql: `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid) SELECT b.id, b.rowid FROM blocks b${clauses.length === 0 ? '' : ` WHERE ${clauses.join(' AND ')}`}`, params }]
  }
  const key = normalizeSceneKey(filter.scene)
  return [
    { sql: `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid) SELECT b.id, b.rowid FROM blocks b WHERE b.scene = ? AND b.scene <> ''${and}`, params: [key, ...params] },
    {
      sql: `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid) SELECT b.id, b.rowid FROM scenes s JOIN scene_refs r ON r.scene_id = s.id
        CROSS JOIN blocks b ON b.id = r.block_id WHERE s.key = ? AND r.block_id NOT IN (SELECT id FROM temp.stablemem_forget)${and}`,
      params: [key, ...params],
    },
  ]
}

/**
 * Adds to the selection every fact distilled from a selected note (a `derived_from` edge from the
 * fact to it), then the facts distilled from those, until none is left; returns their ids. A
 * fact keeps the words of the note it came from, so forgetting the note without it would leave
 * what the user asked to forget in recall, export and the team layer.
 */
function pickDerived(host: ForgetHost): string[] {
  const pick = host.stmt('forget.pickDerived', `INSERT OR IGNORE INTO temp.stablemem_forget (id, rid, derived)
    SELECT b.id, b.rowid, 1 FROM temp.stablemem_forget f
    CROSS JOIN edges e ON e.target_kind = 'block' AND e.target_id = f.id AND e.type = '${DERIVED_FROM}' AND e.source_kind = 'block'
    CROSS JOIN blocks b ON b.id = e.source_id`)
  while (Number(pick.run().changes) > 0) { /* one more generation of facts */ }
  return (host.stmt('forget.derived', 'SELECT id FROM temp.stablemem_forget WHERE derived = 1 ORDER BY rid').all() as Array<{ id: string }>).map((r) => String(r.id))
}

/**
 * The selected notes, oldest first, and their rowids in the same order (read once, for the report
 * and the index deletes). The selection is the outer loop (CROSS JOIN): ordered by rowid, the
 * planner would otherwise walk the whole block table to meet one note.
 */
function readDeleted(host: ForgetHost): { deleted: Block[], rids: number[] } {
  const statement = host.stmt('forget.read', `SELECT b.id, b.text, b.source, b.scene, b.semantic_type, b.created_at, b.updated_at,
    b.access_count, b.last_access_at, b.superseded_by, b.rowid FROM temp.stablemem_forget f CROSS JOIN blocks b ON b.rowid = f.rid ORDER BY f.rid`)
  statement.setReturnArrays(true) // rows as arrays: cheaper to materialise than objects
  const rows = statement.all() as unknown as unknown[][]
  const deleted: Block[] = new Array(rows.length)
  const rids: number[] = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!
    deleted[i] = {
      id: String(r[0]), text: String(r[1]), source: String(r[2]), scene: String(r[3]), semanticType: String(r[4]),
      createdAt: Number(r[5]), updatedAt: Number(r[6]), accessCount: Number(r[7]),
      lastAccessAt: r[8] === null ? null : Number(r[8]), supersededBy: r[9] === null ? null : String(r[9]),
    }
    rids[i] = Number(r[10])
  }
  return { deleted, rids }
}

/**
 * Splices forgotten notes out of supersede chains: a kept note that a forgotten one superseded
 * now points at the forgotten note's own successor (following chains through several forgotten
 * notes), or becomes current when there is none. Returns the notes that became current.
 */
function respliceSuccessors(host: ForgetHost, deleted: readonly Block[]): string[] {
  const affected = host.stmt('forget.affected', `SELECT id, superseded_by FROM blocks WHERE superseded_by IN (SELECT id FROM temp.stablemem_forget)
    AND rowid NOT IN (SELECT rid FROM temp.stablemem_forget)`).all() as Array<{ id: string, superseded_by: string }>
  if (affected.length === 0) return []
  const successor = new Map(deleted.map((b) => [b.id, b.supersededBy]))
  const update = host.stmt('forget.resplice', 'UPDATE blocks SET superseded_by = ? WHERE id = ?')
  const edge = host.stmt('forget.resupersede', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
    VALUES ('block', ?, 'block', ?, 'supersedes', ?) ON CONFLICT DO NOTHING`)
  const restored: string[] = []
  const now = host.now()
  for (const row of affected) {
    let next: string | null = String(row.superseded_by)
    const seen = new Set<string>()
    while (next !== null && successor.has(next) && !seen.has(next)) {
      seen.add(next)
      next = successor.get(next)!
    }
    if (next !== null && successor.has(next)) next = null // a cycle made only of forgotten notes
    update.run(next, row.id)
    if (next === null) restored.push(String(row.id))
    else edge.run(next, row.id, now)
  }
  return restored
}

function countRefs(host: ForgetHost): { edges: number, vectors: number } {
  const row = host.stmt('forget.countRefs', `SELECT
    (SELECT count(*) FROM edges WHERE (source_kind = 'block' AND source_id IN (SELECT id FROM temp.stablemem_forget))
      OR (target_kind = 'block' AND target_id IN (SELECT id FROM temp.stablemem_forget))) AS edges,
    (SELECT count(*) FROM vectors WHERE block_id IN (SELECT id FROM temp.stablemem_forget)) AS vectors`).get() as { edges: number, vectors: number }
  return { edges: Number(row.edges), vectors: Number(row.vectors) }
}

/** What `deleteRefs` deletes and records. */
interface Deletion {
  origin: string
  /** Every note goes: the index is emptied in one step. */
  everything: boolean
  dependents: readonly Dependent[] | null
  /** The selected notes and their rowids, as `readDeleted` read them. */
  deleted: readonly Block[]
  rids: readonly number[]
}

/**
 * Deletes the selected notes and everything that refers to them, and writes their tombstones;
 * `bytesPending` when the index's bytes are left to the scrub (recorded in the same transaction),
 * `inlineScrub` when the store is small enough for the scrub to run before the call returns.
 */
function deleteRefs(host: ForgetHost, { origin, everything, dependents, deleted, rids }: Deletion): { edges: number, vectors: number, bytesPending: boolean, inlineScrub: boolean } {
  const run = (key: string, sql: string, ...params: Array<string | number>): number => Number(host.stmt(key, sql).run(...params).changes)
  let edges = run('forget.edgesOut', `DELETE FROM edges WHERE source_kind = 'block' AND source_id IN (SELECT id FROM temp.stablemem_forget)`)
  edges += run('forget.edgesIn', `DELETE FROM edges WHERE target_kind = 'block' AND target_id IN (SELECT id FROM temp.stablemem_forget)`)
  // A centroid is the mean of its space's vectors, so it carries a trace of every note in it; it is
  // rebuilt from the remaining vectors after the next vector write.
  run('forget.centroids', `DELETE FROM centroids WHERE (model, dims) IN (SELECT DISTINCT model, dims FROM vectors
    WHERE block_id IN (SELECT id FROM temp.stablemem_forget))`)
  const vectors = run('forget.vectors', 'DELETE FROM vectors WHERE block_id IN (SELECT id FROM temp.stablemem_forget)')
  const way = everything ? undefined : deleteIndexEntries(host, deleted, rids)
  const bytesPending = way?.deletion === 'rewrite'
  if (everything) host.db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('delete-all')")
  if (bytesPending) recordScrub(host, deleted.length, host.now(), origin)
  run('forget.tombstones', `INSERT INTO tombstones (id, forgotten_at, origin) SELECT id, ?, ? FROM temp.stablemem_forget WHERE true
    ON CONFLICT(id) DO UPDATE SET forgotten_at = excluded.forgotten_at, origin = excluded.origin`, host.now(), origin)
  // The scope counts' delete trigger runs twice per membership deleted; a large forget moves the
  // counts once instead (`moveScopeCounts`), while its memberships are deleted below.
  const bulk = deleted.length >= BULK_NOTES
  const scopeTrigger = bulk && dependents?.some((d) => d.table === 'memberships') === true
    ? detachTrigger(host, 'scope_count_delete', SCOPE_COUNT_DELETE_TRIGGER) : undefined
  const lowerScopeMark = scopeTrigger !== undefined && moveScopeCounts(host)
  for (const d of dependents ?? []) {
    if (d.table === 'vectors') continue // deleted above, and counted for the report
    const keys = d.parentColumn === 'rowid' || d.parentColumn === 'id' ? `SELECT ${d.parentColumn === 'rowid' ? 'rid' : 'id'} FROM temp.stablemem_forget`
      : `SELECT ${quoteId(d.parentColumn)} FROM blocks WHERE rowid IN (SELECT rid FROM temp.stablemem_forget)`
    run(`forget.dependent ${d.table}.${d.column}`, `DELETE FROM ${quoteId(d.table)} WHERE ${quoteId(d.column)} IN (${keys})`)
  }
  if (scopeTrigger !== undefined) {
    if (lowerScopeMark) run('forget.scopeMark', 'UPDATE scope_count_mark SET mark = min(mark, coalesce((SELECT max(block_rowid) FROM memberships), 0))')
    host.db.exec(scopeTrigger)
  }
  const countTrigger = bulk ? detachTrigger(host, 'block_count_delete_marked', BLOCK_COUNT_DELETE_TRIGGER) : undefined
  run('forget.blocks', 'DELETE FROM blocks WHERE rowid IN (SELECT rid FROM temp.stablemem_forget)')
  if (countTrigger !== undefined) {
    run('forget.count', `UPDATE block_count SET n = n - (SELECT count(*) FROM temp.stablemem_forget WHERE rid <= mark),
      mark = min(mark, coalesce((SELECT max(rowid) FROM blocks), 0))`)
    host.db.exec(countTrigger)
  }
  return { edges, vectors, bytesPending, inlineScrub: bytesPending && way.indexed < DEFER_SCRUB_FROM }
}

/**
 * From this many indexed notes up, a large forget leaves the index rewrite to the scrub after it
 * returns; below, the rewrite costs less than ~100 ms (about 5 µs an indexed note) and runs
 * before the call returns, so a small store always forgets with its bytes gone at return.
 */
export const DEFER_SCRUB_FROM = 20_000

