/**
 * Edges between blocks (and other nodes): the one writer behind `link`, commit's `duplicates`
 * edges and `importEdge`, and the read of a node's edges. An edge is idempotent per (source kind,
 * source id, target kind, target id, type), and a `block` endpoint must exist.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import type { SecretsPolicy } from '../secrets.ts'
import { checkTag } from './tags.ts'
import type { Edge, EdgeInput } from './types.ts'

/** What the edge table needs from the store that owns the connection. */
export interface EdgeHost {
  stmt(key: string, sql: string): StatementSync
  /** Whether a block with this id exists. */
  hasBlock(id: string): boolean
  /** The store's secrets policy, which edge fields are masked under. */
  readonly secrets: SecretsPolicy
}

/**
 * Records one edge created at `createdAt`. It stores the normalised fields it checked: checking
 * one spelling and writing another would let ' block' slip past the endpoint check and break
 * uniqueness. Its fields are tags (`lib/store/tags.ts`): a credential in one is masked like one in
 * a note, and refused when `importing`, which must restore exactly.
 */
export function insertEdge(host: EdgeHost, edge: EdgeInput, createdAt: number, importing: boolean): { created: boolean, redacted?: string[] } {
  if (edge === null || typeof edge !== 'object') throw new StableMemError('invalid_input', 'edge must be an object')
  const redacted = new Set<string>()
  const [sourceKind, sourceId, targetKind, targetId, type] = (['sourceKind', 'sourceId', 'targetKind', 'targetId', 'type'] as const)
    .map((field) => {
      const tag = checkTag(edge[field], field, true, host.secrets)
      for (const kind of tag.redacted) redacted.add(kind)
      return tag.value
    }) as [string, string, string, string, string]
  if (importing && redacted.size > 0) throw unmaskedImport('edge fields', [...redacted])
  for (const [kind, id, field] of [[sourceKind, sourceId, 'sourceId'], [targetKind, targetId, 'targetId']] as const) {
    if (kind === 'block' && !host.hasBlock(id)) throw new StableMemError('not_found', `${field}: no block ${id}`)
  }
  const result = host.stmt('link', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
    .run(sourceKind, sourceId, targetKind, targetId, type, createdAt)
  const created = Number(result.changes) > 0
  return redacted.size > 0 ? { created, redacted: [...redacted] } : { created }
}

/** Edges that touch the node, in both directions, oldest first. */
export function edgesOf(host: EdgeHost, kind: string, id: string): Edge[] {
  const rows = host.stmt('edgesOf', `SELECT source_kind, source_id, target_kind, target_id, type, created_at FROM edges
    WHERE (source_kind = ?1 AND source_id = ?2) OR (target_kind = ?1 AND target_id = ?2) ORDER BY created_at, id`).all(kind, id)
  return rows.map((r) => ({
    sourceKind: String(r.source_kind), sourceId: String(r.source_id), targetKind: String(r.target_kind),
    targetId: String(r.target_id), type: String(r.type), createdAt: Number(r.created_at),
  }))
}

/** Every edge in insertion order, read lazily so an export never holds them all in memory. */
export function * allEdges(db: DatabaseSync): IterableIterator<Edge> {
  const sql = 'SELECT source_kind, source_id, target_kind, target_id, type, created_at FROM edges ORDER BY id'
  for (const r of db.prepare(sql).iterate()) {
    yield {
      sourceKind: String(r.source_kind), sourceId: String(r.source_id), targetKind: String(r.target_kind),
      targetId: String(r.target_id), type: String(r.type), createdAt: Number(r.created_at),
    }
  }
}

/** Import restores exactly: a credential the policy would mask is refused, naming its kinds. */
function unmaskedImport(what: string, kinds: readonly string[]): StableMemError {
  return new StableMemError('contains_secret', `${what} contain credentials (${kinds.join(', ')}); the secrets policy does not allow importing them unmasked`)
}
