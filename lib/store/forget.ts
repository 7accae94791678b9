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
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { isBlockId } from './block-id.ts'
import { indexColumns } from './fts-columns.ts'
import { DERIVED_FROM } from './layers.ts'
import { normalizeSceneKey } from './scene-key.ts'
import { BLOCK_COUNT_DELETE_TRIGGER } from './schema.ts'
import { SCOPE_COUNT_DELETE_TRIGGER } from './scope-counts.ts'
import { clearWal, recordScrub, scrub } from './scrub.ts'
import type { Block } from './types.ts'

/** A filter over stored notes. Several fields narrow together (AND); `all` must stand alone. */
export interface ForgetFilter {
  scene?: string
  source?: string
  /** Notes created strictly before this time (ms since the epoch, a Date or an ISO 8601 string). */
  before?: number | string | Date
  /** Every note. Must be given explicitly: an empty filter is refused. */
  all?: true
}

/** What to forget: one id, a list of ids, or a filter. */
export type ForgetTarget = string | readonly string[] | ForgetFilter

/** How to forget. */
export interface ForgetOptions {
  /**
   * A note that a forgotten note had superseded becomes current again (default true), so
   * forgetting a wrong correction brings back what it replaced. `false`: it stays retired.
   */
  restoreSuperseded?: boolean
  /** Near-duplicates (same `nearKey`) of the notes named by id go too (default true). */
  withDuplicates?: boolean
  /** Only report what would be deleted; nothing changes. */
  dryRun?: boolean
  /** Who asked, kept with the tombstones (e.g. `cli`, `tool session s1 turn 3`). */
  origin?: string
  /**
   * Return only when the bytes are gone (default false). A forget of many notes otherwise returns
   * once they are invisible everywhere, with `bytesPending`, and leaves the index's bytes to the
   * scrub (lib/store/scrub.ts); a small forget always returns with its bytes gone.
   */
  wait?: boolean
}

/** What one `forget` did (or, with `dryRun`, would do). */
export interface ForgetResult {
  /** The notes deleted, oldest first. */
  deleted: Block[]
  /** Ids asked for that are not stored (not an error; the rest were forgotten). */
  unknown: string[]
  /** Older notes that were superseded by a forgotten note and are current again. */
  restored: string[]
  /**
   * Facts distilled from a forgotten note (cooling's `derived_from` edges, followed to the end),
   * forgotten with it; their blocks are in `deleted` too. What was learned from a note goes with it.
   */
  derived: string[]
  /** Edges and vectors deleted with the notes. */
  edges: number
  vectors: number
  dryRun: boolean
  /**
   * True when the WAL was emptied after the commit, so no old page image is left anywhere. False
   * when another process kept reading the WAL for the whole wait; the next checkpoint (or
   * `stablemem vacuum`) completes it.
   */
  walCleared: boolean
  /**
   * True when the notes are gone from every read but their index entries' bytes are still on disk,
   * waiting for the scrub (a large forget without `wait`; `BlockStore.scrub`, lib/store/scrub.ts).
   */
  bytesPending: boolean
}

/** What `vacuum` did. */
export interface VacuumResult {
  /** Store file plus WAL, in bytes, before and after. */
  bytesBefore: number
  bytesAfter: number
  walCleared: boolean
}

/** What the store lends this module. */
export interface ForgetHost {
  db: DatabaseSync
  stmt(key: string, sql: string): StatementSync
  now(): number
  /** Keys notes that have no near-duplicate key yet (see `NearKeys.fill`). */
  fillNearKeys(): void
  /** Store file plus WAL size in bytes. */
  fileBytes(): number
  /** The connection's busy timeout, restored after the checkpoint's shorter waits. */
  busyTimeoutMs: number
}

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

/** A checked forget target. */
export type Selection = { kind: 'ids', ids: string[] } | { kind: 'filter', filter: ForgetFilter }

/** Checks the target's shape; every refusal names what is wrong (also for the team layer's forget, `lib/team/forget.ts`). */
export function parseTarget(target: ForgetTarget): Selection {
  if (typeof target === 'string') return { kind: 'ids', ids: [checkId(target, 'id')] }
  if (Array.isArray(target)) {
    if (target.length === 0) throw new StableMemError('invalid_input', 'forget: the id list is empty')
    return { kind: 'ids', ids: [...new Set(target.map((id, i) => checkId(id, `ids[${i}]`)))] }
  }
  if (target === null || typeof target !== 'object') {
    throw new StableMemError('invalid_input', 'forget: the target must be an id, a list of ids or a filter ({scene}, {source}, {before} or {all: true})')
  }
  const filter = target as Record<string, unknown>
  const known = ['scene', 'source', 'before', 'all']
  const unknownKeys = Object.keys(filter).filter((k) => !known.includes(k))
  if (unknownKeys.length > 0) throw new StableMemError('invalid_input', `forget: unknown filter field ${unknownKeys[0]} (use scene, source, before or all)`)
  const given = known.filter((k) => filter[k] !== undefined)
  if (given.length === 0) throw new StableMemError('invalid_input', 'forget: the filter is empty; to forget every note pass {all: true}')
  if (filter.all !== undefined) {
    if (filter.all !== true) throw new StableMemError('invalid_input', 'forget: all must be true')
    if (given.length > 1) throw new StableMemError('invalid_input', 'forget: all cannot be combined with another filter field')
    return { kind: 'filter', filter: { all: true } }
  }
  const out: ForgetFilter = {}
  for (const field of ['scene', 'source'] as const) {
    const value = filter[field]
    if (value === undefined) continue
    if (typeof value !== 'string' || value.trim() === '') throw new StableMemError('invalid_input', `forget: ${field} must be a non-empty string`)
    out[field] = value.normalize('NFC').trim()
  }
  if (filter.before !== undefined) out.before = parseTime(filter.before)
  return { kind: 'filter', filter: out }
}

function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `forget: ${field} must be a string`)
  const id = value.trim()
  if (!isBlockId(id)) throw new StableMemError('invalid_input', `forget: ${field} "${id.slice(0, 40)}" is not a block id (blk_ followed by 24 hex digits)`)
  return id
}

/** A time as ms since the epoch; refuses anything that is not a real instant. */
function parseTime(value: unknown): number {
  const ms = value instanceof Date ? value.getTime()
    : typeof value === 'number' ? value
      : typeof value === 'string' && value.trim() !== '' ? Date.parse(value.trim())
        : Number.NaN
  if (!Number.isFinite(ms)) throw new StableMemError('invalid_input', `forget: before must be a time (ms since the epoch or an ISO 8601 date), not ${JSON.stringify(String(value)).slice(0, 60)}`)
  return ms
}

function checkOrigin(origin: string): string {
  if (typeof origin !== 'string') throw new StableMemError('invalid_input', 'forget: origin must be a string')
  return origin.slice(0, 256)
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

/** A table whose rows refer to a note by a foreign key with ON DELETE CASCADE: they go with it. */
interface Dependent {
  table: string
  column: string
  /** The column of `blocks` it refers to (`rowid` or `id`). */
  parentColumn: string
}

/**
 * From this many notes up, a forget does once what SQLite would do per note: a forget by id list
 * turns the per-note cascade off (see `forgetBlocks`; a filter always does, since it may match
 * any number), and the block and scope counts are moved once (`detachTrigger`).
 */
const BULK_NOTES = 64

/** Per connection, with the schema version they were read at. */
const dependentsCache = new WeakMap<DatabaseSync, { schema: number, dependents: readonly Dependent[] | null }>()

/**
 * Every table that refers to `blocks` by a foreign key (read from the schema, so a table a later
 * migration adds is included), for deleting their rows with one statement per table. Null when
 * one of them cannot be handled that way: an action other than CASCADE, a key of several
 * columns, or a table that is itself referred to (its own dependents would need the cascade); the
 * forget then leaves the cascade to SQLite, note by note.
 */
function dependentsOf(host: ForgetHost): readonly Dependent[] | null {
  const schema = Number((host.stmt('forget.schemaVersion', 'PRAGMA schema_version').get() as { schema_version: number }).schema_version)
  const cached = dependentsCache.get(host.db)
  if (cached?.schema === schema) return cached.dependents
  const keys = host.db.prepare(`SELECT m.name AS child, f."table" AS parent, f."from" AS col, f."to" AS parent_col, f.on_delete AS action, f.seq AS seq
    FROM sqlite_schema m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`).all() as Array<{ child: string, parent: string, col: string,
      parent_col: string | null, action: string, seq: number }>
  const onBlocks = keys.filter((k) => String(k.parent).toLowerCase() === 'blocks')
  const children = new Set(onBlocks.map((k) => String(k.child).toLowerCase()))
  const handled = onBlocks.every((k) => String(k.action).toUpperCase() === 'CASCADE' && Number(k.seq) === 0)
    && !keys.some((k) => children.has(String(k.parent).toLowerCase()))
  const dependents = handled
    ? onBlocks.map((k) => ({ table: String(k.child), column: String(k.col), parentColumn: k.parent_col === null ? 'rowid' : String(k.parent_col) }))
    : null
  dependentsCache.set(host.db, { schema, dependents })
  return dependents
}

function foreignKeysOn(host: ForgetHost): boolean {
  return Number((host.stmt('forget.foreignKeys', 'PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys) === 1
}

/** An SQL identifier, quoted. */
function quoteId(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/**
 * The block count's delete trigger costs as much as the rest of a block row's deletion (SQLite
 * runs it once per row), and the scope counts' trigger runs two statements per membership. A
 * large forget drops such a trigger inside its transaction, moves the numbers once, as the
 * trigger would have for the rows deleted, and creates it again, so the schema is the same once
 * the transaction ends (a rollback restores it too). Returns the trigger's SQL, or undefined,
 * leaving it alone, when it is not the one this code knows (a later migration changed it).
 */
function detachTrigger(host: ForgetHost, name: string, known: string): string | undefined {
  const row = host.stmt('forget.trigger', "SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?").get(name) as { sql: string } | undefined
  if (row?.sql !== known) return undefined
  host.db.exec(`DROP TRIGGER ${quoteId(name)}`)
  return row.sql
}

/**
 * What `scope_count_delete` (lib/store/scope-counts.ts) does for every membership of the
 * selected notes, done once before they are deleted: each scope loses the memberships at or below
 * the mark (the mark only ever falls to the largest membership left, so no deleted one below it
 * is missed, and none above it was counted). Returns whether one of them is at or above the
 * mark, in which case the trigger would have lowered the mark to the largest membership left,
 * which the caller does once they are deleted. The selection is the outer loop (CROSS JOIN): the
 * planner would otherwise walk every membership below the mark to meet the selected ones.
 */
function moveScopeCounts(host: ForgetHost): boolean {
  host.stmt('forget.scopeCounts', `WITH gone AS (SELECT m.scope AS scope, count(*) AS k FROM temp.stablemem_forget f
      CROSS JOIN memberships m ON m.block_rowid = f.rid WHERE f.rid <= (SELECT mark FROM scope_count_mark) GROUP BY m.scope)
    UPDATE scope_counts SET n = n - gone.k FROM gone WHERE scope_counts.scope = gone.scope`).run()
  const row = host.stmt('forget.scopeMarkHit', `SELECT EXISTS (SELECT 1 FROM temp.stablemem_forget f CROSS JOIN memberships m ON m.block_rowid = f.rid
    WHERE f.rid >= (SELECT mark FROM scope_count_mark)) AS hit`).get() as { hit: number }
  return Number(row.hit) === 1
}

/** How a forget removes its notes' entries from the full-text index (see `indexDeletion`). */
export type IndexDeletion = 'secure-delete' | 'rewrite'

/**
 * Where the two ways of removing index entries cost the same: forgetting one note in this many
 * indexed notes. Measured at 100k notes (bench:forget; the FTS5 calls alone, under load): a secure
 * delete costs 0.6–1.8 ms of CPU per note (more while the index has several segments), rewriting
 * the whole index about 5 µs per indexed note plus 55 µs per deleted one.
 */
const REWRITE_BREAK_EVEN = 300

/**
 * The cheaper way to leave no entry of `deleted` notes in an index of `indexed` notes. FTS5's
 * secure delete rewrites every index page that holds one of the note's entries, so its cost grows
 * with the notes deleted; with it off, a delete only records the deletion and a full rewrite
 * ('optimize') drops the entries, at a cost that grows with the index. Both leave the same bytes.
 */
export function indexDeletion(deleted: number, indexed: number): IndexDeletion {
  return deleted * REWRITE_BREAK_EVEN > indexed ? 'rewrite' : 'secure-delete'
}

/**
 * Deletes the selected notes' full-text entries, naming each row's indexed text (the index is
 * contentless), by the cheaper way `indexDeletion` picks, and returns it. With secure-delete a
 * note's entries leave the index pages at once. The rewrite way switches secure-delete (and
 * automerge) off for its deletes and back on before the transaction commits, so no other writer
 * ever sees them off: the deletes become markers in a new segment, and the old segments' bytes
 * are left to the scrub (lib/store/scrub.ts), which rewrites the index in slices after the commit.
 */
function deleteIndexEntries(host: ForgetHost, deleted: readonly Block[], rids: readonly number[]): { deletion: IndexDeletion, indexed: number } | undefined {
  if (deleted.length === 0) return undefined
  // Counting stops where the answer is known, so forgetting one note does not count a large store.
  const indexed = Number((host.stmt('forget.indexedCount', 'SELECT count(*) AS n FROM (SELECT 1 FROM blocks LIMIT ?)')
    .get(deleted.length * REWRITE_BREAK_EVEN + 1) as { n: number }).n)
  const rewrite = indexDeletion(deleted.length, indexed) === 'rewrite'
  const remove = host.stmt('forget.fts', "INSERT INTO blocks_fts (blocks_fts, rowid, latin, cjk) VALUES ('delete', ?, ?, ?)")
  // FTS5 takes an option's value as an integer only, so it is bound as a BigInt.
  const ftsOption = host.stmt('forget.ftsOption', 'INSERT INTO blocks_fts (blocks_fts, rank) VALUES (?, ?)')
  const option = (name: string, value: number) => ftsOption.run(name, BigInt(value))
  const setting = (key: string, otherwise: number) => Number((host.stmt('forget.ftsSetting', 'SELECT v FROM blocks_fts_config WHERE k = ?')
    .get(key) as { v: number } | undefined)?.v ?? otherwise)
  let hashSize = 0
  let automerge = 0
  if (rewrite) {
    // FTS5 writes pending deletions out as a new segment (and merges segments) whenever they pass
    // its hash size; the rewrite replaces every segment anyway, so they stay in memory until then.
    // When the rewrite flushes them, FTS5 would also merge some segments first (automerge), work
    // the rewrite then does again over the merged segment, so that is off until the rewrite is done.
    hashSize = setting('hashsize', FTS5_HASH_SIZE)
    automerge = setting('automerge', FTS5_AUTOMERGE)
    option('secure-delete', 0)
    option('hashsize', REWRITE_HASH_SIZE)
    option('automerge', 0)
  }
  for (let i = 0; i < deleted.length; i++) remove.run(rids[i]!, ...indexColumns(deleted[i]!.text))
  if (rewrite) {
    option('automerge', automerge)
    option('hashsize', hashSize)
    option('secure-delete', 1)
  }
  // `indexed` is exact when the rewrite way is taken (the count stopped below its limit).
  return { deletion: rewrite ? 'rewrite' : 'secure-delete', indexed }
}

/** FTS5's default in-memory size of pending index changes, in bytes. */
const FTS5_HASH_SIZE = 1 << 20
/** FTS5's default `automerge`: a level's segments are merged once it holds this many. */
const FTS5_AUTOMERGE = 4
/** The pending-change size for a rewrite's deletions: deleting 10,000 notes holds a few MiB. */
const REWRITE_HASH_SIZE = 256 << 20
