/**
 * Access recording that never makes a turn wait. Counting which notes were recalled is
 * bookkeeping for later cooling, while the turn's notes are what the user is waiting for; so when
 * another process holds the write lock (an import paused with Ctrl-Z, a long backfill), the
 * counts are kept in memory and written with the next recording that gets the lock, instead of
 * waiting up to the busy timeout and then losing the turn's notes.
 */
import type { BlockStore } from './store.ts'

/** Most distinct notes whose counts wait in memory; past it the oldest waiting counts are dropped (and counted). */
export const MAX_DEFERRED_NOTES = 10_000

/** What happened to access counts so far. */
export interface AccessStats {
  /** Recordings that found the lock held and were deferred. */
  accessDeferred: number
  /** Notes whose deferred counts were dropped because too many were waiting. */
  accessDropped: number
  /** Notes whose counts are waiting for the next recording. */
  accessPending: number
}

/** Deferred, bounded access recording for one store (owned by the service). */
export class AccessRecorder {
  private readonly store: BlockStore
  private readonly now: () => number
  private readonly pending = new Map<string, { count: number, at: number }>()
  private deferred = 0
  private dropped = 0

  constructor(store: BlockStore, now: () => number = Date.now) {
    this.store = store
    this.now = now
  }

  /**
   * Counts one access of each id, together with every count still waiting, without waiting for
   * the lock. Returns false when the lock was held and the counts were kept for later.
   */
  record(ids: readonly string[]): boolean {
    const at = this.now()
    for (const id of ids) {
      const known = this.pending.get(id)
      this.pending.delete(id) // re-inserted last, so the map stays ordered oldest first
      this.pending.set(id, { count: (known?.count ?? 0) + 1, at })
    }
    while (this.pending.size > MAX_DEFERRED_NOTES) {
      this.pending.delete(this.pending.keys().next().value!)
      this.dropped++
    }
    if (this.pending.size === 0) return true
    if (!this.store.tryWriteAccess(this.pending)) {
      this.deferred++
      return false
    }
    this.pending.clear()
    return true
  }

  /** Counters for `stats()`. */
  stats(): AccessStats {
    return { accessDeferred: this.deferred, accessDropped: this.dropped, accessPending: this.pending.size }
  }
}
