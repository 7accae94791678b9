/**
 * Reading the store the way a person browses it (`stablemem serve`): pages of notes under
 * filters, newest first, with a keyset cursor so a page costs the same at the first note and the
 * hundred-thousandth; and everything the note page shows beside the text (supersede chain, edges,
 * provenance, facts distilled from it, near-duplicates). Read-only: nothing here writes.
 */
import type { StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { DERIVED_FROM, type Layer, type Origin } from './layers.ts'
import type { Block } from './types.ts'

/** What `BlockStore` lends the browse table: its cached statements. */
export interface BrowseHost {
  stmt(key: string, sql: string): StatementSync
  /** The store's cached block count. */
  count(): number
}

/** Filters of one page; several narrow together (AND). */
export interface BrowseFilter {
  scene?: string
  source?: string
  layer?: Layer
  /** Only notes in this scope key (`global`, `workspace:<dir>`, `preset:<id>`). */
  scope?: string
  /** `current` (default: every note), `superseded`, or `all`. */
  state?: 'all' | 'current' | 'superseded'
  /** Created at or after (ms since the epoch). */
  since?: number
  /** Created strictly before (ms since the epoch). */
  until?: number
}

/** One listed note: the block plus its layer. */
export interface BrowseRow extends Block {
  layer: Layer
}

/** One page: the notes, newest written first, and the cursor of the next page (absent on the last). */
export interface BrowsePage {
  notes: BrowseRow[]
  next?: number
  /** Notes matching the filters, counted up to `COUNT_CAP` (`capped` when there are more). */
  total: number
  capped: boolean
}

/** Largest page. */
export const MAX_PAGE = 200
/** A filtered count stops here: counting every match of a broad filter at a million notes costs more than a page. */
export const COUNT_CAP = 10_000

/** Columns of a listed row; `rowFrom` reads them by name. */
const ROW_COLUMNS = 'b.rowid AS rid, b.id, b.text, b.source, b.scene, b.semantic_type, b.created_at, b.updated_at, b.access_count, b.last_access_at, b.superseded_by, b.layer'

/** The browse queries over one store connection. */
export class BrowseTable {
  private readonly host: BrowseHost
  constructor(host: BrowseHost) {
    this.host = host
  }

  /**
   * One page of notes under `filter`, newest written first (by rowid, the insertion order, which
   * the primary key serves without a sort); `before` is the previous page's `next`.
   */
  page(filter: BrowseFilter, limit: number, before?: number): BrowsePage {
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new StableMemError('invalid_input', `limit must be a whole number from 1 to ${MAX_PAGE}`)
    if (before !== undefined && !Number.isSafeInteger(before)) throw new StableMemError('invalid_input', 'cursor must be a whole number')
    const { key, sql, params } = where(filter)
    const cursor = before === undefined ? '' : ' AND b.rowid < ?'
    // Superseded notes are few: read them from their partial index and sort, rather than walk
    // every row newest first (the plan SQLite picks to avoid the sort).
    const from = filter.state === 'superseded' ? 'blocks b INDEXED BY blocks_superseded' : 'blocks b'
    const rows = this.host.stmt(`browse.page.${key}${cursor === '' ? '' : '.c'}`, `SELECT ${ROW_COLUMNS} FROM ${from} WHERE ${sql}${cursor}
      ORDER BY b.rowid DESC LIMIT ?`).all(...params, ...(before === undefined ? [] : [before]), limit + 1)
    const more = rows.length > limit
    const notes = rows.slice(0, limit).map(rowFrom)
    // Unfiltered, the store's cached count; filtered, matches are counted up to the cap.
    const counted = key === '' ? this.host.count() : Number((this.host.stmt(`browse.count.${key}`, `SELECT count(*) AS n FROM (SELECT 1 FROM blocks b WHERE ${sql} LIMIT ?)`)
      .get(...params, COUNT_CAP + 1) as { n: number }).n)
    const page: BrowsePage = { notes, total: key === '' ? counted : Math.min(counted, COUNT_CAP), capped: key !== '' && counted > COUNT_CAP }
    if (more) page.next = Number(rows[limit - 1]!.rid)
    return page
  }

  /** The most used values of a tag column (`source` or `scene`), for the filter menus. */
  values(column: 'source' | 'scene', limit = 50): Array<{ value: string, notes: number }> {
    if (column !== 'source' && column !== 'scene') throw new StableMemError('invalid_input', 'column must be source or scene')
    const rows = this.host.stmt(`browse.values.${column}`, `SELECT ${column} AS value, count(*) AS n FROM blocks WHERE ${column} <> ''
      GROUP BY ${column} ORDER BY n DESC, ${column} LIMIT ?`).all(limit)
    return rows.map((r) => ({ value: String(r.value), notes: Number(r.n) }))
  }

  /** Every origin row of a block (a captured block may have been said in several sessions), oldest first. */
  origins(id: string): Origin[] {
    const rows = this.host.stmt('browse.origins', `SELECT session_id, seq, event_type, role, event_time, compaction_id FROM block_origins
      WHERE block_id = ? ORDER BY event_time, seq LIMIT 100`).all(id)
    return rows.map((r) => ({
      sessionId: String(r.session_id), seq: Number(r.seq), eventType: String(r.event_type), role: String(r.role),
      eventTime: Number(r.event_time), compactionId: String(r.compaction_id),
    }))
  }

  /**
   * The supersede chain through `id`: the notes it replaced (oldest first) and the notes that
   * replaced it (in order), each at most `MAX_CHAIN_SHOWN` steps away.
   */
  chain(id: string): { older: string[], newer: string[] } {
    const newer: string[] = []
    const seen = new Set([id])
    let at: string | null = id
    while (newer.length < MAX_CHAIN_SHOWN) {
      const row = this.host.stmt('browse.successor', 'SELECT superseded_by FROM blocks WHERE id = ?').get(at) as { superseded_by: string | null } | undefined
      at = row?.superseded_by ?? null
      if (at === null || seen.has(at)) break
      seen.add(at)
      newer.push(at)
    }
    const older: string[] = []
    let frontier = [id]
    while (frontier.length > 0 && older.length < MAX_CHAIN_SHOWN) {
      const rows = this.host.stmt('browse.predecessors', 'SELECT id FROM blocks WHERE superseded_by IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC LIMIT 50')
        .all(JSON.stringify(frontier)).map((r) => String(r.id)).filter((p) => !seen.has(p))
      for (const p of rows) seen.add(p)
      older.unshift(...rows)
      frontier = rows
    }
    return { older: older.slice(-MAX_CHAIN_SHOWN), newer }
  }

  /** Facts (L3) distilled from this block: the blocks with a `derived_from` edge to it. */
  factsFrom(id: string): string[] {
    return this.host.stmt('browse.factsFrom', `SELECT source_id FROM edges WHERE target_kind = 'block' AND target_id = ? AND type = ? AND source_kind = 'block'
      ORDER BY created_at LIMIT 200`).all(id, DERIVED_FROM).map((r) => String(r.source_id))
  }

  /** Current notes with the same near-duplicate key as this one (`lib/text/near-key.ts`). */
  nearDuplicates(id: string): string[] {
    return this.host.stmt('browse.near', `SELECT d.id FROM blocks b JOIN blocks d ON d.near_key = b.near_key AND d.id <> b.id
      WHERE b.id = ? AND b.near_key IS NOT NULL ORDER BY d.created_at LIMIT 50`).all(id).map((r) => String(r.id))
  }

  /**
   * The facts graph (L3): fact blocks (`semanticType` `fact`, text `subject|dimension=value`)
   * with the blocks they were distilled from, newest first, at most `limit`.
   */
  facts(limit = 200): Array<{ id: string, text: string, from: string[], supersededBy: string | null }> {
    const rows = this.host.stmt('browse.facts', `SELECT b.id, b.text, b.superseded_by,
      (SELECT json_group_array(e.target_id) FROM edges e WHERE e.source_kind = 'block' AND e.source_id = b.id AND e.type = ?1) AS sources
      FROM blocks b WHERE b.semantic_type = 'fact' ORDER BY b.rowid DESC LIMIT ?2`).all(DERIVED_FROM, limit)
    return rows.map((r) => ({ id: String(r.id), text: String(r.text), from: JSON.parse(String(r.sources)) as string[], supersededBy: r.superseded_by === null ? null : String(r.superseded_by) }))
  }

  /** Notes written per day (UTC), the last `days` days that have any, oldest first: the health chart. */
  perDay(days = 60): Array<{ day: string, notes: number }> {
    const rows = this.host.stmt('browse.perDay', `SELECT created_at / 86400000 AS d, count(*) AS n FROM blocks GROUP BY d ORDER BY d DESC LIMIT ?`).all(days)
    return rows.reverse().map((r) => ({ day: new Date(Number(r.d) * 86_400_000).toISOString().slice(0, 10), notes: Number(r.n) }))
  }
}

/** Steps of a supersede chain shown on a note page. */
const MAX_CHAIN_SHOWN = 50

/**
 * The WHERE clause of a filter, with only the conditions it sets, so SQLite can use the store's
 * partial indexes: `scene <> ''` beside a scene lets it use `blocks_scene`, `superseded_by IS NOT
 * NULL` uses `blocks_superseded`. `key` names the combination (one cached statement each).
 */
function where(filter: BrowseFilter): { key: string, sql: string, params: Array<string | number> } {
  const state = filter.state ?? 'all'
  if (state !== 'all' && state !== 'current' && state !== 'superseded') throw new StableMemError('invalid_input', 'state must be all, current or superseded')
  if (filter.layer !== undefined && filter.layer !== 'stable' && filter.layer !== 'cold') throw new StableMemError('invalid_input', 'layer must be stable or cold')
  for (const [name, value] of [['since', filter.since], ['until', filter.until]] as const) {
    if (value !== undefined && !Number.isSafeInteger(value)) throw new StableMemError('invalid_input', `${name} must be a time in ms since the epoch`)
  }
  const keys: string[] = []
  const parts: string[] = []
  const params: Array<string | number> = []
  const add = (key: string, sql: string, ...values: Array<string | number>) => { keys.push(key); parts.push(sql); params.push(...values) }
  if (filter.scene !== undefined) add('scene', filter.scene === '' ? "b.scene = ''" : "b.scene = ? AND b.scene <> ''", ...(filter.scene === '' ? [] : [filter.scene]))
  if (filter.source !== undefined) add('source', 'b.source = ?', filter.source)
  if (filter.layer !== undefined) add(`layer-${filter.layer}`, `b.layer = '${filter.layer}'`)
  if (filter.scope !== undefined) add('scope', 'EXISTS (SELECT 1 FROM memberships m WHERE m.block_rowid = b.rowid AND m.scope = ?)', filter.scope)
  if (state === 'current') add('current', 'b.superseded_by IS NULL')
  if (state === 'superseded') add('superseded', 'b.superseded_by IS NOT NULL')
  if (filter.since !== undefined) add('since', 'b.created_at >= ?', filter.since)
  if (filter.until !== undefined) add('until', 'b.created_at < ?', filter.until)
  return { key: keys.join('+'), sql: parts.length === 0 ? '1' : parts.join(' AND '), params }
}

function rowFrom(r: Record<string, unknown>): BrowseRow {
  return {
    id: String(r.id), text: String(r.text), source: String(r.source), scene: String(r.scene), semanticType: String(r.semantic_type),
    createdAt: Number(r.created_at), updatedAt: Number(r.updated_at), accessCount: Number(r.access_count),
    lastAccessAt: r.last_access_at === null ? null : Number(r.last_access_at), supersededBy: r.superseded_by === null ? null : String(r.superseded_by),
    layer: String(r.layer) as Layer,
  }
}
