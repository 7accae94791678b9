/**
 * Removing forgotten notes' entries from the full-text index, by the cheaper of two ways that
 * leave the same bytes: FTS5's secure delete note by note, or deletion markers and a full index
 * rewrite left to the scrub (`scrub.ts`). `forget.ts` calls it inside its transaction.
 */
import { indexColumns } from './fts-columns.ts'
import type { ForgetHost } from './forget-types.ts'
import type { Block } from './types.ts'

/** How a forget removes its notes' entries from the full-text index (see `indexDeletion`). */
export type IndexDeletion = 'secure-delete' | 'rewrite'

/**
 * Where the two ways of removing index entries cost the same: forgetting one note in this many
 * indexed notes. Measured at 100k notes (bench:forget; the FTS5 calls alone, under load): a secure
 * delete costs 0.6–1.8 ms of CPU per note (more while the index has several segments), rewriting
 * the whole index about 5 µs per indexed note plus 55 µs per deleted one.
 */
const REWRITE_BREAK_EVEN = 300

/**
 * The cheaper way to leave no entry of `deleted` notes in an index of `indexed` notes. FTS5's
 * secure delete rewrites every index page that holds one of the note's entries, so its cost grows
 * with the notes deleted; with it off, a delete only records the deletion and a full rewrite
 * ('optimize') drops the entries, at a cost that grows with the index. Both leave the same bytes.
 */
export function indexDeletion(deleted: number, indexed: number): IndexDeletion {
  return deleted * REWRITE_BREAK_EVEN > indexed ? 'rewrite' : 'secure-delete'
}

/**
 * Deletes the selected notes' full-text entries, naming each row's indexed text (the index is
 * contentless), by the cheaper way `indexDeletion` picks, and returns it. With secure-delete a
 * note's entries leave the index pages at once. The rewrite way switches secure-delete (and
 * automerge) off for its deletes and back on before the transaction commits, so no other writer
 * ever sees them off: the deletes become markers in a new segment, and the old segments' bytes
 * are left to the scrub (lib/store/scrub.ts), which rewrites the index in slices after the commit.
 */
export function deleteIndexEntries(host: ForgetHost, deleted: readonly Block[], rids: readonly number[]): { deletion: IndexDeletion, indexed: number } | undefined {
  if (deleted.length === 0) return undefined
  // Counting stops where the answer is known, so forgetting one note does not count a large store.
  const indexed = Number((host.stmt('forget.indexedCount', 'SELECT count(*) AS n FROM (SELECT 1 FROM blocks LIMIT ?)')
    .get(deleted.length * REWRITE_BREAK_EVEN + 1) as { n: number }).n)
  const rewrite = indexDeletion(deleted.length, indexed) === 'rewrite'
  const remove = host.stmt('forget.fts', "INSERT INTO blocks_fts (blocks_fts, rowid, latin, cjk) VALUES ('delete', ?, ?, ?)")
  // FTS5 takes an option's value as an integer only, so it is bound as a BigInt.
  const ftsOption = host.stmt('forget.ftsOption', 'INSERT INTO blocks_fts (blocks_fts, rank) VALUES (?, ?)')
  const option = (name: string, value: number) => ftsOption.run(name, BigInt(value))
  const setting = (key: string, otherwise: number) => Number((host.stmt('forget.ftsSetting', 'SELECT v FROM blocks_fts_config WHERE k = ?')
    .get(key) as { v: number } | undefined)?.v ?? otherwise)
  let hashSize = 0
  let automerge = 0
  if (rewrite) {
    // FTS5 writes pending deletions out as a new segment (and merges segments) whenever they pass
    // its hash size; the rewrite replaces every segment anyway, so they stay in memory until then.
    // When the rewrite flushes them, FTS5 would also merge some segments first (automerge), work
    // the rewrite then does again over the merged segment, so that is off until the rewrite is done.
    hashSize = setting('hashsize', FTS5_HASH_SIZE)
    automerge = setting('automerge', FTS5_AUTOMERGE)
    option('secure-delete', 0)
    option('hashsize', REWRITE_HASH_SIZE)
    option('automerge', 0)
  }
  for (let i = 0; i < deleted.length; i++) remove.run(rids[i]!, ...indexColumns(deleted[i]!.text))
  if (rewrite) {
    option('automerge', automerge)
    option('hashsize', hashSize)
    option('secure-delete', 1)
  }
  // `indexed` is exact when the rewrite way is taken (the count stopped below its limit).
  return { deletion: rewrite ? 'rewrite' : 'secure-delete', indexed }
}

/** FTS5's default in-memory size of pending index changes, in bytes. */
const FTS5_HASH_SIZE = 1 << 20
/** FTS5's default `automerge`: a level's segments are merged once it holds this many. */
const FTS5_AUTOMERGE = 4
/** The pending-change size for a rewrite's deletions: deleting 10,000 notes holds a few MiB. */
const REWRITE_HASH_SIZE = 256 << 20
