/**
 * What a forget of many notes does once instead of once a note: the tables that refer to
 * `blocks` (read from the schema) deleted set-based with SQLite's per-note cascade off, and the
 * block and scope counts' delete triggers detached and their numbers moved once (`forget.ts`).
 */
import type { DatabaseSync } from 'node:sqlite'
import type { ForgetHost } from './forget-types.ts'

/** A table whose rows refer to a note by a foreign key with ON DELETE CASCADE: they go with it. */
export interface Dependent {
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
export const BULK_NOTES = 64

/** Per connection, with the schema version they were read at. */
const dependentsCache = new WeakMap<DatabaseSync, { schema: number, dependents: readonly Dependent[] | null }>()

/**
 * Every table that refers to `blocks` by a foreign key (read from the schema, so a table a later
 * migration adds is included), for deleting their rows with one statement per table. Null when
 * one of them cannot be handled that way: an action other than CASCADE, a key of several
 * columns, or a table that is itself referred to (its own dependents would need the cascade); the
 * forget then leaves the cascade to SQLite, note by note.
 */
export function dependentsOf(host: ForgetHost): readonly Dependent[] | null {
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

export function foreignKeysOn(host: ForgetHost): boolean {
  return Number((host.stmt('forget.foreignKeys', 'PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys) === 1
}

/** An SQL identifier, quoted. */
export function quoteId(name: string): string {
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
export function detachTrigger(host: ForgetHost, name: string, known: string): string | undefined {
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
export function moveScopeCounts(host: ForgetHost): boolean {
  host.stmt('forget.scopeCounts', `WITH gone AS (SELECT m.scope AS scope, count(*) AS k FROM temp.stablemem_forget f
      CROSS JOIN memberships m ON m.block_rowid = f.rid WHERE f.rid <= (SELECT mark FROM scope_count_mark) GROUP BY m.scope)
    UPDATE scope_counts SET n = n - gone.k FROM gone WHERE scope_counts.scope = gone.scope`).run()
  const row = host.stmt('forget.scopeMarkHit', `SELECT EXISTS (SELECT 1 FROM temp.stablemem_forget f CROSS JOIN memberships m ON m.block_rowid = f.rid
    WHERE f.rid >= (SELECT mark FROM scope_count_mark)) AS hit`).get() as { hit: number }
  return Number(row.hit) === 1
}
