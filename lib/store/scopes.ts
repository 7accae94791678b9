import type { StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { allScopeCounts, countJoined, foldScopeCounts, scopeCount } from './scope-counts.ts'
import { checkScopeKey } from './scope-key.ts'
import type { FtsCandidate } from './fts-reads.ts'

/** What the membership table needs from the store that owns the connection. */
export interface ScopeTableDeps {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  now(): number
  /** The store's note count (`BlockStore.count`). */
  count(): number
}

/** How many notes one scope holds (`stats --by-scope`). */
export interface ScopeCount {
  scope: string
  notes: number
}

/** The membership test every scoped read shares: the block (by rowid) is in one of the union's scopes (a JSON array). */
const IN_UNION = 'EXISTS (SELECT 1 FROM memberships m WHERE m.block_rowid = %ROWID% AND m.scope IN (SELECT value FROM json_each(?)))'

function inUnion(rowid: string): string {
  return IN_UNION.replace('%ROWID%', rowid)
}

/**
 * The membership table: which scopes each block belongs to (its own schema migration). A block belongs to one or
 * more scopes; the same text saved in two workspaces is one block with two memberships, so content
 * addressing and idempotent commits are untouched. Recall asks it for candidates inside a union of
 * scopes, so a note outside the union is never counted (abstention) or shown. Every block has at
 * least one membership: removing the last one is refused (deleting a note is `forget`'s job).
 */
export class ScopeTable {
  private readonly deps: ScopeTableDeps

  constructor(deps: ScopeTableDeps) {
    this.deps = deps
  }

  /** Adds one membership by block id (inside the caller's transaction); true when it is new. */
  join(id: string, scope: string, now: number = this.deps.now()): boolean {
    const result = this.deps.stmt('scopeJoin', `INSERT INTO memberships (block_rowid, scope, created_at)
      SELECT rowid, ?, ? FROM blocks WHERE id = ? ON CONFLICT DO NOTHING`).run(scope, now, id)
    const joined = Number(result.changes) > 0
    if (joined) countJoined(this.deps, scope, id) // an existing block's rowid may be below the counts' mark
    return joined
  }

  /** Adds one membership to a block just inserted (its rowid known: no id lookup on the commit path). */
  joinRowid(rowid: number, scope: string, now: number): void {
    this.deps.stmt('scopeJoinRowid', 'INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(rowid, scope, now)
  }

  /** The scopes of one block, sorted (global first); empty for an unknown id. */
  of(id: string): string[] {
    const rows = this.deps.stmt('scopeOf', `SELECT m.scope FROM memberships m JOIN blocks b ON b.rowid = m.block_rowid
      WHERE b.id = ? ORDER BY m.scope <> 'global', m.scope`).all(id)
    return rows.map((r) => String(r.scope))
  }

  /** Adds `scope` to every block; all ids must exist. Returns how many memberships were new. */
  add(ids: readonly string[], scope: string): number {
    const key = checkScopeKey(scope)
    return this.deps.transaction(() => {
      this.requireBlocks(ids)
      const now = this.deps.now()
      return ids.filter((id) => this.join(id, key, now)).length
    })
  }

  /**
   * Makes `scope` the only scope of every block (moving to `global` replaces workspace and preset
   * memberships; moving to a workspace takes a note out of global). Returns how many blocks changed.
   */
  set(ids: readonly string[], scope: string): number {
    const key = checkScopeKey(scope)
    return this.deps.transaction(() => {
      this.requireBlocks(ids)
      const now = this.deps.now()
      const drop = this.deps.stmt('scopeDropOthers', `DELETE FROM memberships
        WHERE block_rowid = (SELECT rowid FROM blocks WHERE id = ?) AND scope <> ?`)
      let changed = 0
      for (const id of ids) {
        const dropped = Number(drop.run(id, key).changes)
        if (this.join(id, key, now) || dropped > 0) changed++
      }
      return changed
    })
  }

  /**
   * Takes every block out of `scope`. A block whose only scope it is keeps it and the whole call is
   * refused, naming the block: a note without a scope could never be recalled, and deleting it is a
   * separate, deliberate act. Returns how many memberships were removed.
   */
  remove(ids: readonly string[], scope: string): number {
    const key = checkScopeKey(scope)
    return this.deps.transaction(() => {
      this.requireBlocks(ids)
      let removed = 0
      for (const id of ids) {
        const scopes = this.of(id)
        if (!scopes.includes(key)) continue
        if (scopes.length === 1) {
          throw new StableMemError('invalid_input', `${id} belongs only to ${key}; move it (scope set) or delete it instead of leaving it in no scope`)
        }
        removed += Number(this.deps.stmt('scopeRemove', `DELETE FROM memberships
          WHERE block_rowid = (SELECT rowid FROM blocks WHERE id = ?) AND scope = ?`).run(id, key).changes)
      }
      return removed
    })
  }

  /** Notes per scope, most first (ties by key). */
  counts(): ScopeCount[] {
    return allScopeCounts(this.deps)
  }

  /**
   * Whether one scope of `union` holds every note, so the membership test would pass for every
   * row and a scoped read is the unscoped one (two row reads of the kept counts, `scope-counts.ts`).
   * Recall asks once per pass; the common store, where notes are global, then skips the test.
   */
  coversAll(union: readonly string[]): boolean {
    const total = this.deps.count()
    return union.some((scope) => scopeCount(this.deps, scope) === total)
  }

  /** Folds the counts' live part (commit and import call it inside their transaction; see `scope-counts.ts`). */
  foldCounts(): void {
    foldScopeCounts(this.deps)
  }

  /**
   * FTS candidates (as `BlockStore.ftsCandidates`, `newest` too) restricted to blocks in one of `union`'s
   * scopes. The membership test runs per matching row inside the same statement, so the limit
   * applies after the filter: notes of other workspaces can never crowd the union's out.
   */
  ftsCandidates(match: string, limit: number, union: readonly string[], weights: readonly [number, number] = [1, 1], newest = false): FtsCandidate[] {
    const sql = `SELECT rowid, bm25(blocks_fts, ?, ?) AS bm25 FROM blocks_fts WHERE blocks_fts MATCH ? AND ${inUnion('blocks_fts.rowid')}
      ORDER BY ${newest ? 'rowid DESC' : 'bm25'} LIMIT ?`
    const rows = this.deps.stmt(newest ? 'scopedFtsNewest' : 'scopedFts', sql).all(weights[0], weights[1], match, JSON.stringify(union), limit) as Array<{ rowid: number, bm25: number }>
    return rows.map((r) => ({ rowid: Number(r.rowid), bm25: Number(r.bm25) }))
  }

  /** Whether any block in `union` matches an FTS expression (abstention's "does the store hold it", within the union). */
  anyMatch(match: string, union: readonly string[]): boolean {
    const sql = `SELECT 1 AS x FROM blocks_fts WHERE blocks_fts MATCH ? AND ${inUnion('blocks_fts.rowid')} LIMIT 1`
    return this.deps.stmt('scopedAny', sql).get(match, JSON.stringify(union)) !== undefined
  }

  /** The ids among `ids` whose blocks belong to one of `union`'s scopes. */
  visible(ids: readonly string[], union: readonly string[]): Set<string> {
    if (ids.length === 0) return new Set()
    const sql = `SELECT b.id FROM blocks b WHERE b.id IN (SELECT value FROM json_each(?)) AND ${inUnion('b.rowid')}`
    return new Set(this.deps.stmt('scopedVisible', sql).all(JSON.stringify(ids), JSON.stringify(union)).map((r) => String(r.id)))
  }

  private requireBlocks(ids: readonly string[]): void {
    if (!Array.isArray(ids) || ids.length === 0) throw new StableMemError('invalid_input', 'ids must be a non-empty list of block ids')
    const exists = this.deps.stmt('scopeBlockExists', 'SELECT 1 AS x FROM blocks WHERE id = ?')
    for (const id of ids) {
      if (typeof id !== 'string' || exists.get(id) === undefined) throw new StableMemError('not_found', `no block ${String(id)}`)
    }
  }
}
