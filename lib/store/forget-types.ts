/**
 * The shapes of forgetting: what to forget (an id, a list, a filter), how, what a forget and a
 * vacuum report, and what the store lends the forget modules. Kept apart so the target checks
 * (`forget-target.ts`) and the forget itself (`forget.ts`) share them without a circle.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
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
