/**
 * The commit path: a batch of notes written in one transaction, each idempotent by content. Per
 * note: its near-duplicate found, the row inserted (or an existing one's tags updated and its
 * replacement undone), supersede links, memberships, scene tags and `duplicates` edges; after the
 * block rows, the count folded once and the batch's index rows written, a large batch under the
 * bulk index options (lib/store/fts-bulk.ts). `BlockStore.commitMany` documents the contract.
 */
import type { StatementSync } from 'node:sqlite'
import { nearKey } from '../text/near-key.ts'
import type { DuplicatePolicy, NearKeys } from './duplicates.ts'
import { BULK_NOTES, withBulkIndexing } from './fts-bulk.ts'
import { indexColumns } from './fts-columns.ts'
import type { Layer } from './layers.ts'
import type { SceneTable } from './scenes.ts'
import type { ScopeTable } from './scopes.ts'
import { mark, restore, type ChainAccess } from './supersede.ts'
import type { Block, CommitInput, CommitResult, EdgeInput } from './types.ts'
import type { ValidRow } from './validate.ts'

/** What the commit path needs from the store that owns the connection. */
export interface CommitHost {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  now(): number
  /** Checks one input under the store's policies (`lib/store/validate.ts`). */
  validate(input: CommitInput, prefix: string): ValidRow
  get(id: string): Block | undefined
  /** Records an edge created at `createdAt` (`lib/store/edges.ts`). */
  link(edge: EdgeInput, createdAt: number): void
  /** Folds the new blocks into the block and scope counts (`BlockStore.count`). */
  foldCount(): void
  /** Called before a write: the store's cached match counts are stale after it. */
  wrote(): void
  readonly duplicates: DuplicatePolicy
  readonly nearKeys: NearKeys
  readonly scopes: ScopeTable
  readonly scenes: SceneTable
  readonly chain: ChainAccess
}

/** `BlockStore.commitMany`: validates every input, then writes the batch in one transaction. */
export function commitBlocks(host: CommitHost, inputs: readonly CommitInput[], createdAs?: (index: number) => { layer: Layer, source: string }): CommitResult[] {
  const rows = inputs.map((input, i) => host.validate(input, inputs.length > 1 ? `inputs[${i}].` : ''))
  const now = host.now()
  // No RETURNING: with it, node:sqlite's insert costs twice as much (measured by bench:perf);
  // `changes` and `lastInsertRowid` say the same thing. The near-duplicate key is written with
  // the row: setting it afterwards cost a second lookup, a row rewrite and an insert plus a
  // delete in the index of unkeyed rows, per note (docs/benchmarks.md, "Scale").
  const insert = host.stmt('insert', `INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at, near_key, layer)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`)
  const update = host.stmt('update', `UPDATE blocks SET
    source = CASE WHEN ?1 <> '' THEN ?1 ELSE source END,
    scene = CASE WHEN ?2 <> '' THEN ?2 ELSE scene END,
    semantic_type = CASE WHEN ?3 <> '' THEN ?3 ELSE semantic_type END,
    updated_at = CASE WHEN ?1 <> '' OR ?2 <> '' OR ?3 <> '' THEN ?4 ELSE updated_at END
    WHERE id = ?5`)
  const index = host.stmt('index', 'INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
  host.wrote()
  const keys = rows.map((row) => nearKey(row.text))
  // The index rows are written after every block row of the batch, not beside each one: FTS5
  // flushes its pending terms to a new segment at every statement savepoint, and each block
  // insert opened one while `block_count` had an insert trigger, and any later trigger would
  // again. Interleaved, every note became a segment of its own that later merges rewrote
  // (docs/benchmarks.md, "Writes").
  const indexed: Array<[rowid: number | bigint, text: string]> = []
  return host.transaction(() => {
    const out = rows.map((row, i) => {
      if (i === 0) host.nearKeys.fill()
      const near = host.nearKeys.find(keys[i]!, row.id)
      const duplicateOf = near === row.supersedes ? undefined : near // replacing a note is not duplicating it
      if (duplicateOf !== undefined && host.duplicates === 'skip' && !host.get(row.id)) {
        host.scopes.join(duplicateOf, row.scope, now) // the kept note now also belongs to this scope
        if (row.scene !== '') host.scenes.tag(row.scene, duplicateOf, 1, now)
        return { id: duplicateOf, created: false, duplicateOf }
      }
      const as = createdAs?.(i)
      const inserted = insert.run(row.id, row.text, as?.source ?? row.source, row.scene, row.semanticType, now, now, keys[i]!, as?.layer ?? 'stable')
      const created = Number(inserted.changes) === 1
      let replaced: string | undefined
      if (created) {
        indexed.push([inserted.lastInsertRowid, row.text])
      } else {
        update.run(row.source, row.scene, row.semanticType, now, row.id)
        // Saying a replaced text again makes it current again: the later commit wins.
        replaced = restore(host.chain, row.id, now)
      }
      if (row.supersedes !== '') mark(host.chain, row.supersedes, row.id, now)
      const result: CommitResult = { id: row.id, created }
      if (replaced !== undefined) result.restored = replaced
      if (row.redacted.length > 0) result.redacted = row.redacted
      if (created) host.scopes.joinRowid(Number(inserted.lastInsertRowid), row.scope, now)
      else host.scopes.join(row.id, row.scope, now)
      if (row.scene !== '') host.scenes.tag(row.scene, row.id, 1, now)
      if (!created || duplicateOf === undefined) return result
      if (host.duplicates === 'link') host.link({ sourceKind: 'block', sourceId: row.id, targetKind: 'block', targetId: duplicateOf, type: 'duplicates' }, now)
      return { ...result, duplicateOf }
    })
    if (indexed.length > 0) host.foldCount()
    const writeIndex = () => { for (const [rowid, text] of indexed) index.run(rowid, ...indexColumns(text)) }
    // A large batch (a long transcript, `commitMany` of many notes) is indexed in a few large
    // segments (lib/store/fts-bulk.ts); what counts as large is where its terms pass FTS5's hash.
    if (indexed.length >= BULK_NOTES) withBulkIndexing(host, writeIndex)
    else writeIndex()
    return out
  })
}
