/**
 * Writing access counts (which notes recall returned, how often, when last): one transaction
 * without an fsync, since it runs inside every turn. In WAL mode skipping the fsync can lose only
 * the latest counts on a power cut, never a note and never the file's integrity.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { isBusy } from './failure.ts'
import { withoutFsync, withoutWaiting } from './pragmas.ts'

/** Access counts by note id: `count` accesses, the latest at `at`. */
export type AccessCounts = ReadonlyMap<string, { count: number, at: number }>

/** What the access writes need from the store that owns the connection. */
export interface AccessHost {
  readonly db: DatabaseSync
  readonly busyTimeoutMs: number
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
}

/** Adds access counts in one transaction without an fsync. */
export function writeAccess(host: AccessHost, counts: AccessCounts): void {
  const touch = host.stmt('touch', `UPDATE blocks SET access_count = access_count + ?1,
    last_access_at = CASE WHEN last_access_at IS NULL OR last_access_at < ?2 THEN ?2 ELSE last_access_at END WHERE id = ?3`)
  withoutFsync(host.db, () => host.transaction(() => { for (const [id, { count, at }] of counts) touch.run(count, at, id) }))
}

/** `writeAccess` that never waits for another connection's write lock: false, with nothing written, while one holds it. */
export function tryWriteAccess(host: AccessHost, counts: AccessCounts): boolean {
  if (counts.size === 0) return true
  try {
    withoutWaiting(host.db, host.busyTimeoutMs, () => { writeAccess(host, counts) })
    return true
  } catch (error) {
    if (isBusy(error)) return false
    throw error
  }
}
