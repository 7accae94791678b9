import type { BlockStore } from '../store/store.ts'
import type { ScopeTable } from '../store/scopes.ts'

/**
 * What the lexical recall reads from a store: document frequencies, FTS candidates and blocks.
 * `BlockStore` is one; the team layer's per-query snapshot of PostgreSQL rows and statistics
 * (`lib/team/snapshot.ts`) is another, so both layers rank with the same code.
 */
export type RecallSource = Pick<BlockStore, 'count' | 'matchCount' | 'cjkDocumentFrequencies' | 'ftsCandidates' | 'ftsRowids' | 'blocksByRowid' | 'recordAccess'> & {
  /**
   * False when rowids are not the order notes were saved in (the team snapshot numbers its rows as
   * fetched), so conversation neighbours (`neighbours.ts`) cannot be read; absent, they are (a local store).
   */
  readonly rowidsInSaveOrder?: boolean
  /** `coversAll` is optional: a source without scope counts always runs the scoped reads. */
  readonly scopes: Pick<ScopeTable, 'ftsCandidates' | 'anyMatch' | 'visible'> & Partial<Pick<ScopeTable, 'coversAll'>>
}
