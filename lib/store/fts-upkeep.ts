/**
 * Upkeep of the full-text index: merging its segments towards one, in short slices. Every term
 * lookup seeks each segment of the index, and a store written by commits keeps several (FTS5's
 * automerge merges only levels that fill up; a 100k store as built has 11, 1.5M ≈ 25), so recall
 * gets slower as segments pile up. FTS5's `'merge', -N` command merges across levels and writes
 * about N leaf pages per call (it stops at the next term boundary); called until it changes
 * nothing, it leaves one segment, the same index `optimize` writes, without one long transaction.
 *
 * With `'merge', +N` it merges only levels holding 4 or more segments: the small segments recent
 * commits left merge with each other at a cost in proportion to them, and the large ones stay;
 * the host does that first, and the full merge only when what is left is worth it (`mergeDue`).
 *
 * Each slice is its own IMMEDIATE transaction, so another process's writer waits one slice at
 * most (its busy timeout covers that), and a slice never runs inside a caller's transaction.
 * Merging reads only the entries the segments hold, so it cannot bring back a forgotten note:
 * a forget removes the note's entries from every segment, including those of a merge under way,
 * before it commits (lib/store/forget.ts), and the pages a merge frees are zeroed like any other
 * (`PRAGMA secure_delete`). docs/recall.md, "Index upkeep".
 */
import type { DatabaseSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { isBusy } from './failure.ts'
import { ftsStructure } from './fts-structure.ts'
import { withoutFsync, withoutWaiting } from './pragmas.ts'

/**
 * Leaf pages one slice writes (FTS5 finishes the term it is in, so a very common term's postings
 * can make one slice longer). Measured: 3.3–3.5 ms per slice at 100k and 1M notes
 * (docs/benchmarks.md, "FTS upkeep, session 9").
 */
export const SLICE_PAGES = 64

/**
 * The index has this many segments or more before the host tidies it when idle, and `doctor`
 * warns. Single commits add about one small segment each, and FTS5's automerge, which merges in
 * proportion to what a write adds, lets them pile up to ≈ 20 between its own merges.
 */
export const UPKEEP_DUE_SEGMENTS = 8

/**
 * After merging within levels, a merge across all levels (rewriting the whole index) follows when
 * this many segments are left, or when the segments beside the largest hold at least a quarter of
 * its leaf pages (`mergeDue`). Otherwise the few small segments stay: rewriting a million
 * notes' index (≈ 2.5 s CPU, ≈ 180 MB written) for them would cost more than they cost a query.
 */
export const FULL_MERGE_SEGMENTS = 6

/**
 * What a slice merges: `levels` only the segments of a level that holds 4 or more (FTS5's
 * `'merge', +N`: new small segments merge with each other, the large ones stay as they are);
 * `all` every segment into one (`'merge', -N`).
 */
export type MergeScope = 'levels' | 'all'

/** What one slice did: merged some pages, found nothing left to merge, or could not get the write lock. */
export type SliceOutcome = 'merged' | 'done' | 'busy'

/** What a full upkeep did. */
export interface UpkeepResult {
  segmentsBefore: number
  segmentsAfter: number
  /** Slices run (each its own transaction). */
  slices: number
  /** Wall time of all slices, and of the longest one, in ms. */
  ms: number
  longestSliceMs: number
}

/** The number of segments of the store's full-text index (one row read: the structure record). */
export function ftsSegments(db: DatabaseSync): number {
  return ftsStructure(db, 'blocks_fts').segments
}

/**
 * Runs one slice: merges about `pages` leaf pages (of `scope`) in one IMMEDIATE transaction. `wait: false`
 * (the host's idle upkeep) takes the write lock only if it is free at once, and reports `busy`
 * otherwise, so the event loop never waits on another process. FTS5's documented way to tell that
 * a merge is complete: the call changed fewer than two rows (`total_changes()`).
 *
 * The slice skips the fsync (`synchronous = NORMAL` for its transaction): a power cut can then
 * lose only the latest merge work, which the next upkeep redoes, never a note.
 */
export function mergeSlice(db: DatabaseSync, busyTimeoutMs: number, pages = SLICE_PAGES, wait = true, scope: MergeScope = 'all'): SliceOutcome {
  if (db.isTransaction) throw new StableMemError('invalid_input', 'index upkeep runs in transactions of its own, not inside an open one')
  if (!Number.isSafeInteger(pages) || pages < 1) throw new StableMemError('invalid_input', `pages must be a positive integer, not ${String(pages)}`)
  const slice = (): SliceOutcome => withoutFsync(db, () => {
    db.exec('BEGIN IMMEDIATE')
    try {
      const before = totalChanges(db)
      // FTS5 takes the page count as an integer only, so it is bound as a BigInt; its sign is the scope.
      db.prepare("INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('merge', ?)").run(BigInt(scope === 'all' ? -pages : pages))
      const changed = totalChanges(db) - before
      db.exec('COMMIT')
      return changed < 2 ? 'done' : 'merged'
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK')
      throw error
    }
  })
  if (wait) return slice()
  try {
    return withoutWaiting(db, busyTimeoutMs, slice)
  } catch (error) {
    if (isBusy(error)) return 'busy'
    throw error
  }
}

/**
 * Merges the index into one segment, slice by slice (`mergeSlice`, waiting for the lock like any
 * writer): what bulk paths (`stablemem import`) run when they finish, and `stablemem upkeep`.
 * Stops when one segment is left or a slice finds nothing to merge, so it always terminates.
 */
export function mergeIndex(db: DatabaseSync, busyTimeoutMs: number, pages = SLICE_PAGES): UpkeepResult {
  const segmentsBefore = ftsSegments(db)
  let slices = 0
  let longestSliceMs = 0
  const start = performance.now()
  while (ftsSegments(db) > 1) {
    const t0 = performance.now()
    const outcome = mergeSlice(db, busyTimeoutMs, pages)
    longestSliceMs = Math.max(longestSliceMs, performance.now() - t0)
    slices++
    if (outcome === 'done') break
  }
  return { segmentsBefore, segmentsAfter: ftsSegments(db), slices, ms: performance.now() - start, longestSliceMs }
}

/**
 * Which merge the index's segments are worth: `all` when the segments beside the largest hold at
 * least a quarter of its leaf pages (they are not just the small ones of recent commits), or when
 * `FULL_MERGE_SEGMENTS` or more are left after merging within levels (`levelsDone`); `levels`
 * while only small segments sit beside a large one; undefined with one segment or none.
 */
export function mergeDue(db: DatabaseSync, levelsDone: boolean): MergeScope | undefined {
  const structure = ftsStructure(db, 'blocks_fts')
  if (structure.segments <= 1) return undefined
  const largest = Math.max(...structure.levels.flatMap((l) => l.pages))
  if ((structure.pages - largest) * 4 >= largest) return 'all'
  if (!levelsDone) return 'levels'
  return structure.segments >= FULL_MERGE_SEGMENTS ? 'all' : undefined
}

/**
 * The merge that follows a finished one in the host's idle upkeep: after the levels, everything
 * when what is left is worth it (`due(true)`, i.e. `mergeDue`); after a full merge, none. One
 * place for the order, which the host's timer (`lib/plugin/index-upkeep.ts`) runs and bench:perf
 * times slice by slice.
 */
export function nextMergeScope(done: MergeScope, due: (levelsDone: boolean) => MergeScope | undefined): MergeScope | undefined {
  return done === 'levels' && due(true) === 'all' ? 'all' : undefined
}

/** The connection's running count of changed rows (what tells a finished merge apart). */
function totalChanges(db: DatabaseSync): number {
  return Number((db.prepare('SELECT total_changes() AS n').get() as { n: number }).n)
}
