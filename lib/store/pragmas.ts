/**
 * Connection settings changed for one piece of work and put back whatever happens, so a write
 * that is allowed to skip its fsync, or must not wait for another process's lock, cannot leave the
 * connection that way for the commits after it. The store's default is `synchronous = FULL` and
 * its configured busy timeout (lib/store/store.ts).
 */
import type { DatabaseSync } from 'node:sqlite'

/**
 * Runs `work` with `synchronous = NORMAL`, then back to FULL. In WAL mode a power cut can then
 * lose only what `work` committed, never a note written before it and never the file's integrity:
 * for work that can be redone or lost (access counts, an index merge slice).
 */
export function withoutFsync<T>(db: DatabaseSync, work: () => T): T {
  db.exec('PRAGMA synchronous = NORMAL')
  try {
    return work()
  } finally {
    db.exec('PRAGMA synchronous = FULL')
  }
}

/**
 * Runs `work` with a busy timeout of 0, then back to `busyTimeoutMs`: a write lock another
 * connection holds fails at once (SQLITE_BUSY, `isBusy`) instead of blocking the event loop.
 */
export function withoutWaiting<T>(db: DatabaseSync, busyTimeoutMs: number, work: () => T): T {
  db.exec('PRAGMA busy_timeout = 0')
  try {
    return work()
  } finally {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  }
}
