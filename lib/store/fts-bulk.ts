/**
 * Bulk indexing: the full-text index options a large write runs under. FTS5 keeps the terms of
 * the rows a transaction indexes in an in-memory hash and writes them out as a new segment each
 * time the hash passes its `hashsize` option (1 MiB by default, about 4,000 notes); every segment
 * written is then merged, and merged again a level up, by automerge. A write of tens of thousands
 * of notes with the default therefore writes dozens of small segments and rewrites them several
 * times over. With a larger hash the same notes are written as a few large segments, fewer levels
 * deep: at 100,000 notes the index's share of a bulk commit fell from about 3.1 to 2.2–2.5 s of
 * CPU (docs/decisions.md, D24).
 *
 * The option is set inside the write's transaction and set back before it commits, so no other
 * connection ever sees it, and a kill at any point leaves the old value with the old rows or the
 * old value with the new rows (FTS5 keeps its options in a table of the same file).
 */
import type { StatementSync } from 'node:sqlite'

/** Notes a write must index for the bulk options to pay: below it, a batch's terms fit in FTS5's default hash. */
export const BULK_NOTES = 4_096

/** FTS5's default `hashsize` (bytes of pending terms before a segment is written out). */
const DEFAULT_HASH_SIZE = 1 << 20

/**
 * The pending-terms size a bulk write runs with: 64 MiB holds about 250,000 notes' terms. Measured
 * at 100,000 notes (index plus commit, CPU): 1 MiB 3.1–3.7 s, 16 MiB 2.4–2.5 s, 64 MiB 2.2–2.4 s,
 * 256 MiB 2.4 s; the memory is held only for the write.
 */
const BULK_HASH_SIZE = 64 << 20

/** The statements of the connection that writes (`BlockStore`'s cached ones). */
export interface BulkIndexHost {
  stmt(key: string, sql: string): StatementSync
}

/**
 * Runs `fn`, which indexes many notes, with FTS5's pending-terms hash at `BULK_HASH_SIZE`, and
 * sets the option back to what it was before returning. Call inside the write's transaction; if
 * `fn` throws, the transaction's rollback undoes the option with everything else.
 */
export function withBulkIndexing<T>(host: BulkIndexHost, fn: () => T): T {
  // FTS5 takes an option's value as an integer only, so it is bound as a BigInt.
  const option = host.stmt('bulk.ftsOption', 'INSERT INTO blocks_fts (blocks_fts, rank) VALUES (?, ?)')
  const stored = host.stmt('bulk.ftsSetting', "SELECT v FROM blocks_fts_config WHERE k = 'hashsize'").get() as { v: number } | undefined
  const before = Number(stored?.v ?? DEFAULT_HASH_SIZE)
  option.run('hashsize', BigInt(BULK_HASH_SIZE))
  const result = fn()
  option.run('hashsize', BigInt(before))
  return result
}
