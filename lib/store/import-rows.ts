/**
 * Restoring exported blocks (`stablemem import`, lib/store/transfer.ts): one block back exactly,
 * id, text, tags, times and access statistics, merged into an existing one of the same id, with
 * its memberships, scene tag and supersede link.  The contract is `importBlock`'s.
 */
import type { StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import type { SecretsPolicy } from '../secrets.ts'
import { nearKey } from '../text/near-key.ts'
import { checkCount, checkTime } from './import-numbers.ts'
import type { LayerState } from './layers.ts'
import type { SceneTable } from './scenes.ts'
import { checkScopeKey, GLOBAL_SCOPE } from './scope-key.ts'
import type { ScopeTable } from './scopes.ts'
import { adopt, exists, type ChainAccess } from './supersede.ts'
import { checkTag } from './tags.ts'
import type { Block, CommitInput } from './types.ts'
import type { ValidRow } from './validate.ts'

/** What restoring needs from the store that owns the connection. */
export interface ImportHost {
  stmt(key: string, sql: string): StatementSync
  now(): number
  /** Checks one input under a secrets policy (`lib/store/validate.ts`). */
  validate(input: CommitInput, prefix: string, secrets: SecretsPolicy): ValidRow
  /** Called after a write: the store's cached match counts are stale. */
  wrote(): void
  /** Merges an imported layer and cooling state into an existing block's (`LayerTable.mergeState`). */
  mergeState(id: string, state: LayerState): void
  /** Indexes a new row's text: at the end of the import's batch, or now outside one (`import-batch.ts`). */
  index(rowid: number, text: string): void
  readonly scopes: ScopeTable
  readonly scenes: SceneTable
  readonly chain: ChainAccess
}

/** What `importBlock` reports for one block. */
export interface ImportedBlock {
  created: boolean
  id: string
  pending?: string
  redacted?: string[]
}

/**
 * Restores one exported block exactly: id, text, tags, times and access statistics, so an
 * export/import round trip is lossless. The text must already be canonical and the id must be
 * its content address; anything else is refused, because it would break content addressing.
 * A block that already exists is merged, never duplicated: earliest creation, latest update
 * and access, the larger access count, and the imported non-empty tags when the import is newer.
 * Merging is idempotent, so importing the same file twice changes nothing. Called inside
 * the store's transaction to restore many blocks in one write.
 *
 * `supersededBy` is restored when its block exists (a link that would loop is refused); when it
 * does not exist yet, the block is stored as current and `pending` names the missing successor,
 * for the caller to `adoptSuccessor` once that block arrives. `secrets` decides what happens to
 * credentials (see `ImportOptions`); a masked note is stored under its masked text's id, returned.
 * `scopes` are added to the block's memberships; a new block without them is global (exports
 * made before scopes existed). `state` is the block's layer and cooling state: a new block is
 * written with it, an existing one merges it (`LayerTable.mergeState`); without it (exports made
 * before layers existed) a new block is a stable note.
 */
export function importBlock(host: ImportHost, block: Block, secrets: SecretsPolicy, scopes?: readonly string[], state?: LayerState): ImportedBlock {
  const keys = (scopes ?? []).map((scope, i) => checkScopeKey(scope, `scopes[${i}]`))
  const row = checkedRow(host, block, secrets)
  if (row.redacted.length > 0 && secrets === 'refuse') {
    throw new StableMemError('contains_secret', `text contains credentials (${row.redacted.join(', ')}); import refuses them unless told to keep them (secrets allow) or mask them (secrets redact)`)
  }
  const createdAt = checkTime(block.createdAt, 'createdAt')
  const updatedAt = checkTime(block.updatedAt, 'updatedAt')
  const accessCount = checkCount(block.accessCount, 'accessCount')
  const lastAccessAt = block.lastAccessAt === null ? null : checkTime(block.lastAccessAt, 'lastAccessAt')
  const supersededBy = block.supersededBy === null ? null : checkTag(block.supersededBy, 'supersededBy', true, 'allow').value
  const rowid = restoreRow(host, row, createdAt, updatedAt, accessCount, lastAccessAt, state)
  const created = rowid !== undefined
  if (!created && state !== undefined) host.mergeState(row.id, state)
  const now = host.now()
  // A new block's rowid is known: its memberships need no id lookup, and it is above the counts' marks.
  if (created) for (const key of keys.length === 0 ? [GLOBAL_SCOPE] : keys) host.scopes.joinRowid(rowid, key, now)
  else for (const key of keys) host.scopes.join(row.id, key, now)
  if (row.scene !== '') host.scenes.tag(row.scene, row.id, 1)
  const result = row.redacted.length > 0 ? { created, id: row.id, redacted: row.redacted } : { created, id: row.id }
  if (supersededBy === null) return result
  if (!exists(host.chain, supersededBy)) return { ...result, pending: supersededBy }
  adopt(host.chain, row.id, supersededBy)
  return result
}

/**
 * The block checked and masked under `secrets`, after its text and id were checked as exported:
 * canonical, and the content address of that text. One pass when nothing is masked (the masked
 * row is then the exported one); a second, without masking, only to check the exported text of
 * a block that holds credentials, or that the masking pass refused (its error comes after the
 * exported text's own, as it would from a check in that order).
 */
function checkedRow(host: ImportHost, block: Block, secrets: SecretsPolicy): ValidRow {
  const policy = secrets === 'allow' ? 'allow' : 'redact'
  let row: ValidRow | undefined
  let refused: unknown
  try {
    row = host.validate(block, '', policy)
  } catch (error) {
    refused = error
  }
  const original = row !== undefined && row.redacted.length === 0 ? row : host.validate(block, '', 'allow')
  if (original.text !== block.text) throw new StableMemError('invalid_input', 'text is not in canonical form (NFC, trimmed)')
  if (original.id !== block.id) throw new StableMemError('invalid_input', `id ${String(block.id)} is not the content address of its text (expected ${original.id})`)
  if (row === undefined) throw refused
  return row
}

/**
 * Inserts or merges one imported row (see `importBlock`); the new row's rowid, or undefined when
 * it merged into an existing one. The near-duplicate key and the layer are written with the row (a
 * second write of it for the layer was a tenth of an import's time at 100,000 notes), and no RETURNING
 * is asked for, as in commit; the block count is not folded here but once per batch
 * (`BlockStore.importTransaction`): `count()` is exact either way, and a fold per row (a count of
 * the rows above the mark and of the memberships above theirs) was a third of an import's time.
 */
function restoreRow(host: ImportHost, row: { id: string, text: string, source: string, scene: string, semanticType: string },
  createdAt: number, updatedAt: number, accessCount: number, lastAccessAt: number | null, state: LayerState | undefined): number | undefined {
  const insert = host.stmt('importInsert', `INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at, access_count, last_access_at, near_key,
    layer, cool_state, cool_attempts, cool_next_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`)
  const { layer, coolState, coolAttempts, coolNextAt } = state ?? { layer: 'stable', coolState: '', coolAttempts: 0, coolNextAt: 0 }
  const inserted = insert.run(row.id, row.text, row.source, row.scene, row.semanticType, createdAt, updatedAt, accessCount, lastAccessAt, nearKey(row.text),
    layer, coolState, coolAttempts, coolNextAt)
  if (Number(inserted.changes) === 1) {
    const rowid = Number(inserted.lastInsertRowid)
    host.index(rowid, row.text)
    host.wrote()
    return rowid
  }
  host.stmt('importMerge', `UPDATE blocks SET
    source = CASE WHEN ?1 <> '' AND ?5 > updated_at THEN ?1 ELSE source END,
    scene = CASE WHEN ?2 <> '' AND ?5 > updated_at THEN ?2 ELSE scene END,
    semantic_type = CASE WHEN ?3 <> '' AND ?5 > updated_at THEN ?3 ELSE semantic_type END,
    created_at = min(created_at, ?4),
    updated_at = max(updated_at, ?5),
    access_count = max(access_count, ?6),
    last_access_at = CASE WHEN ?7 IS NULL THEN last_access_at WHEN last_access_at IS NULL THEN ?7 ELSE max(last_access_at, ?7) END
    WHERE id = ?8`).run(row.source, row.scene, row.semanticType, createdAt, updatedAt, accessCount, lastAccessAt, row.id)
  return undefined
}
