/**
 * The second phase of a large forget: scrubbing the forgotten notes' bytes out of the full-text
 * index and the WAL after the notes are already gone from everything a reader sees.
 *
 * A forget of many notes (`indexDeletion` says `rewrite`) deletes every row of the notes, their
 * index entries included, in one transaction (lib/store/forget.ts); with FTS5's secure-delete off
 * for those deletes, the index records each deletion as a marker in a new segment and the old
 * segments still hold the notes' terms and positions. Recall, get, browse, export and the team
 * layer no longer see the notes from that commit on; the bytes are what is left. The same
 * transaction writes a row of `scrub_pending`, so the work survives a crash or an exit.
 *
 * The scrub merges the index into one segment in bounded slices (`mergeSlice`, each its own
 * IMMEDIATE transaction of about `SLICE_PAGES` leaf pages, so other writers wait one slice at
 * most): merging drops every entry a newer marker cancels, and the markers themselves once the
 * output is the only segment; the pages it frees are zeroed (`PRAGMA secure_delete`). When one
 * segment is left, a TRUNCATE checkpoint empties the WAL of the old page images, and only then are
 * the pending rows deleted, in a transaction that checks the segments again (a forget by another
 * process in between adds one, so it is never cleared unscrubbed). A kill at any point leaves the
 * record until the bytes are gone from the file and the WAL. Whoever opens the store next can finish it:
 * the service's background slices, `stablemem upkeep`, `stablemem forget` itself before it
 * exits, and `forget(…, { wait: true })`.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { isBusy } from './failure.ts'
import { ftsSegments, mergeSlice, SLICE_PAGES } from './fts-upkeep.ts'
import { withoutWaiting } from './pragmas.ts'

/** What the scrub needs of the store. */
export interface ScrubHost {
  db: DatabaseSync
  stmt(key: string, sql: string): StatementSync
  busyTimeoutMs: number
}

/** Forgets whose bytes are still being scrubbed: how many, how many notes, since when. */
export interface PendingScrubs {
  forgets: number
  notes: number
  /** When the oldest of them was made (ms since the epoch), or null with none. */
  since: number | null
}

/** What one call of `scrub` did. */
export interface ScrubResult {
  /** True while bytes of a forgotten note are still in the index or the WAL. */
  pending: boolean
  /** Merge slices run (each its own transaction). */
  slices: number
  /**
   * False when the scrub is complete but another process kept reading the WAL for the whole wait;
   * the next checkpoint (or `stablemem vacuum`) finishes it.
   */
  walCleared: boolean
}

/** Options of one `scrub` call. */
export interface ScrubOptions {
  /** Stop after this many ms of slices, still pending (a background host's bounded turn); default: until done. */
  budgetMs?: number
  /** Wait for another process's write lock (default true); false reports pending at once instead. */
  wait?: boolean
}

/** Records, inside the forget's transaction, that `notes` notes wait for their bytes to be scrubbed. */
export function recordScrub(host: ScrubHost, notes: number, at: number, origin: string): void {
  host.stmt('scrub.record', 'INSERT INTO scrub_pending (created_at, notes, origin) VALUES (?, ?, ?)').run(at, notes, origin)
}

/** The forgets whose bytes are not scrubbed yet (one small table read). */
export function pendingScrubs(host: ScrubHost): PendingScrubs {
  const row = host.stmt('scrub.pending', 'SELECT count(*) AS forgets, coalesce(sum(notes), 0) AS notes, min(created_at) AS since FROM scrub_pending')
    .get() as { forgets: number, notes: number, since: number | null }
  return { forgets: Number(row.forgets), notes: Number(row.notes), since: row.since === null ? null : Number(row.since) }
}

/**
 * Runs the scrub: merge slices until the index has one segment (or the budget is spent, or the
 * lock is taken and `wait` is false), then clears the pending rows and empties the WAL. Does
 * nothing when nothing is pending. Never inside a caller's transaction.
 */
export function scrub(host: ScrubHost, options: ScrubOptions = {}): ScrubResult {
  const { db } = host
  if (db.isTransaction) throw new StableMemError('invalid_input', 'the scrub runs in transactions of its own, not inside an open one')
  if (pendingScrubs(host).forgets === 0) return { pending: false, slices: 0, walCleared: true }
  const wait = options.wait ?? true
  const deadline = options.budgetMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + options.budgetMs
  let slices = 0
  for (;;) {
    while (ftsSegments(db) > 1) {
      if (performance.now() >= deadline) return { pending: true, slices, walCleared: false }
      const outcome = mergeSlice(db, host.busyTimeoutMs, SLICE_PAGES, wait, 'all')
      if (outcome === 'busy') return { pending: true, slices, walCleared: false }
      slices++
      // FTS5 found nothing to merge with segments left (not seen, but the loop must end): one rewrite does it.
      if (outcome === 'done' && ftsSegments(db) > 1) db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
    }
    // The WAL first: it still holds the old index pages. The record goes only once it is empty, so
    // a crash in between leaves the record, and the next scrub checkpoints again.
    if (!clearWal(db, host.busyTimeoutMs, wait ? CHECKPOINT_WAIT_MS : 0)) return { pending: true, slices, walCleared: false }
    let cleared: boolean
    try {
      cleared = wait ? clearRecords(host) : withoutWaiting(db, host.busyTimeoutMs, () => clearRecords(host))
    } catch (error) {
      if (!wait && isBusy(error)) return { pending: true, slices, walCleared: true }
      throw error
    }
    if (cleared) return { pending: false, slices, walCleared: true }
  }
}

/**
 * Deletes the pending records in one IMMEDIATE transaction if the index is still one segment
 * under the write lock (a forget by another process since the last slice adds one); false otherwise.
 */
function clearRecords(host: ScrubHost): boolean {
  const { db } = host
  db.exec('BEGIN IMMEDIATE')
  try {
    if (ftsSegments(db) > 1) {
      db.exec('ROLLBACK')
      return false
    }
    host.stmt('scrub.clear', 'DELETE FROM scrub_pending').run()
    db.exec('COMMIT')
    return true
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK')
    throw error
  }
}

/** How long, in all, a checkpoint after a forget or a scrub waits for readers of the WAL to move on. */
const CHECKPOINT_WAIT_MS = 2_000
/**
 * The busy timeout of one checkpoint attempt. A TRUNCATE checkpoint holds the write lock while it
 * waits for readers, so a long wait would stall other processes' commits; short attempts let them in.
 */
const CHECKPOINT_ATTEMPT_MS = 50

/**
 * A TRUNCATE checkpoint: copies every WAL frame into the file and cuts the WAL to zero bytes.
 * While another connection reads an older snapshot it cannot finish; retried with short pauses
 * for `waitMs` in all (one attempt with 0), never an error (SQLITE_BUSY is not passed on). True
 * when the WAL is empty.
 */
export function clearWal(db: DatabaseSync, busyTimeoutMs: number, waitMs = CHECKPOINT_WAIT_MS): boolean {
  const deadline = Date.now() + waitMs
  const pause = new Int32Array(new SharedArrayBuffer(4))
  db.exec(`PRAGMA busy_timeout = ${CHECKPOINT_ATTEMPT_MS}`)
  try {
    for (;;) {
      try {
        const row = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number } | undefined
        if (row === undefined || Number(row.busy) === 0) return true
      } catch (error) {
        const code = ((error as { errcode?: number }).errcode ?? 0) % 256
        if (code !== SQLITE_BUSY && code !== SQLITE_LOCKED) throw error
      }
      if (Date.now() >= deadline) return false
      Atomics.wait(pause, 0, 0, 20)
    }
  } finally {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  }
}

/** SQLite result codes of a checkpoint that could not get its locks in time. */
const SQLITE_BUSY = 5
const SQLITE_LOCKED = 6

/** What a background scrub runs against: a store (`BlockStore.scrub`), or nothing while memory is unavailable. */
export interface Scrubbable {
  scrub(options: ScrubOptions): ScrubResult
}

/** The time one background slice of the scrub may take before it yields to the event loop, in ms. */
export const BACKGROUND_SLICE_MS = 20
/** The pause before trying again when another process holds the write lock, in ms. */
const BUSY_PAUSE_MS = 50

const scrubbing = new WeakSet<object>()

/**
 * Finishes a pending scrub in the background of a long-running host (the service, `stablemem
 * serve`): bounded turns of `BACKGROUND_SLICE_MS` that never wait for another process's lock,
 * each on its own unref'd timer, until nothing is pending. One loop per store at a time; an error
 * is reported and ends the loop (the next forget, heartbeat or open starts it again).
 */
export function scrubInBackground(target: () => Scrubbable | undefined, report: (error: unknown) => void): void {
  const first = target()
  if (first === undefined || scrubbing.has(first)) return
  scrubbing.add(first)
  const turn = () => {
    const store = target()
    if (store !== first) {
      scrubbing.delete(first)
      return
    }
    let result: ScrubResult
    try {
      result = store.scrub({ budgetMs: BACKGROUND_SLICE_MS, wait: false })
    } catch (error) {
      scrubbing.delete(first)
      report(error)
      return
    }
    if (!result.pending) {
      scrubbing.delete(first)
      return
    }
    setTimeout(turn, result.slices === 0 ? BUSY_PAUSE_MS : 0).unref()
  }
  setTimeout(turn, 0).unref()
}
