/**
 * What an SQLite error after a clean open means for the store: the file is damaged (it stays
 * broken until someone restores it), or the write failed for a reason that passes (a full disk,
 * an I/O error, a lock, a permission taken away), after which the very next call may succeed.
 * Memory is switched off only for damage; a transient failure is reported and retried.
 */

/** How the service should treat a failure. */
export type FailureKind = 'damage' | 'transient' | 'other'

/** Result codes (low byte of the extended code) that say the file itself is unusable. */
const DAMAGE_CODES = new Set([11 /* CORRUPT */, 26 /* NOTADB */])

/** Result codes of failures that pass: nothing in the file is wrong. */
const TRANSIENT_CODES = new Set([
  5 /* BUSY */, 6 /* LOCKED */, 7 /* NOMEM */, 8 /* READONLY */, 10 /* IOERR */, 13 /* FULL */, 14 /* CANTOPEN */, 15 /* PROTOCOL */,
])

/** Names of the transient codes, for the one-line reason. */
const REASONS = new Map([[5, 'the file is locked'], [6, 'the file is locked'], [7, 'out of memory'], [8, 'the file became read-only'],
  [10, 'disk I/O error'], [13, 'the disk is full'], [14, 'the file cannot be opened'], [15, 'the file is locked']])

/** Classifies an error thrown by a store call. Anything not from SQLite is `other`. */
export function failureKind(error: unknown): FailureKind {
  if (!(error instanceof Error)) return 'other'
  const code = (error as { errcode?: unknown }).errcode
  if (typeof code === 'number' && DAMAGE_CODES.has(code & 0xff)) return 'damage'
  if (/malformed|not a database|vtable constructor failed/i.test(error.message)) return 'damage'
  if (typeof code === 'number' && TRANSIENT_CODES.has(code & 0xff)) return 'transient'
  return 'other'
}

/** A short reason for a transient failure ("the disk is full"). */
export function transientReason(error: unknown): string {
  const code = (error as { errcode?: unknown }).errcode
  return (typeof code === 'number' ? REASONS.get(code & 0xff) : undefined) ?? (error instanceof Error ? error.message : String(error))
}

/** SQLite's result code for "another connection holds the lock". */
const SQLITE_BUSY = 5

/** Whether SQLite refused because another connection holds the lock (and may let go of it soon). */
export function isBusy(error: unknown): boolean {
  return ((error as { errcode?: number }).errcode ?? 0) % 256 === SQLITE_BUSY
}
