/**
 * The shape of a store's full-text index, read from its file with a separate read-only
 * connection: the bulk-path tests (commit, import, their kill tests) check that a batch became
 * one segment and that the bulk index option was put back.
 */
import { DatabaseSync } from 'node:sqlite'

/** How many segments the index holds. */
export function segments(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return Number((db.prepare('SELECT count(DISTINCT segid) AS n FROM blocks_fts_idx').get() as { n: number }).n)
  } finally {
    db.close()
  }
}

/** The stored `hashsize` option of the index (FTS5's default 1 MiB when absent). */
export function hashSize(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return Number((db.prepare("SELECT v FROM blocks_fts_config WHERE k = 'hashsize'").get() as { v: number } | undefined)?.v ?? 1 << 20)
  } finally {
    db.close()
  }
}
