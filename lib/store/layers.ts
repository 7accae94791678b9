import type { StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { GLOBAL_SCOPE } from './scope-key.ts'
import type { CommitInput, CommitResult } from './types.ts'

/** A block's holder layer: `stable` (notes and distilled facts, L3) or `cold` (captured turns, L2). */
export type Layer = 'stable' | 'cold'

/** Where a captured block came from: one event of one dsh session. */
export interface Origin {
  sessionId: string
  seq: number
  /** `user/message`, `assistant/message` or `tool/result`. */
  eventType: string
  /** `user`, `assistant` or `tool`. */
  role: string
  /** The event's own time (ms since the epoch), not the capture time. */
  eventTime: number
  /** The compaction that took the event out of the context window ('' for a prune). */
  compactionId: string
}

/** A block's holder layer and cooling state (exported and imported with the block). */
export interface LayerState {
  layer: Layer
  /** '' (never tried), `distilled` or `undistilled`. */
  coolState: string
  coolAttempts: number
  /** When an undistilled block may be tried again (ms since the epoch; 0: any time). */
  coolNextAt: number
}

/** One piece of text to capture into the cold layer, with its origin. */
export interface CapturePiece {
  text: string
  origin: Origin
}

/** What one capture wrote. */
export interface CaptureResult {
  /** New cold blocks. */
  created: number
  /** Their ids (for the background vector writer). */
  ids: string[]
  /** Pieces whose text was already stored (the block keeps its layer; only an origin row is added). */
  existing: number
  /** New origin rows (0 when the same region is captured again). */
  origins: number
  /** Pieces the store refused (the secrets policy `refuse`, a bad character …), with the reason. */
  refused: Array<{ seq: number, reason: string }>
}

/** A cold block the cooling rule selects. */
export interface ColdCandidate {
  id: string
  text: string
  accessCount: number
  idleSince: number
  attempts: number
}

/** One fact a distiller produced, as text `subject|dimension=value`. */
export interface FactInput {
  text: string
}

/** What cooling one block changed; `delta` is the number of rows actually written. */
export interface CoolOutcome {
  id: string
  /** `cooled`: facts written, the block moved to `stable`; `kept`: nothing written, retried later; `skipped`: no longer cold (another process cooled it). */
  result: 'cooled' | 'kept' | 'skipped'
  /** New blocks plus new edges, as SQLite reported them. */
  delta: number
  facts: string[]
}

/** Counts per layer, for `stats` and `doctor`. */
export interface LayerStats {
  stable: number
  cold: number
  /** Blocks with provenance rows (captured at compaction). */
  captured: number
  /** Cold blocks that yielded no fact at least once and wait for a retry. */
  undistilled: number
}

/** What `BlockStore` lends the layer table: statements, transactions, the clock and its commit path. */
export interface LayerTableHost {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  now(): number
  commitMany(inputs: readonly CommitInput[], createdAs?: (index: number) => { layer: Layer, source: string }): CommitResult[]
  link(edge: { sourceKind: string, sourceId: string, targetKind: string, targetId: string, type: string }): { created: boolean }
}

/** The job name of access-count halving in `kernel_runs` (its period start and the position of its pass). */
export const HALVING_JOB = 'access-halving'

/** The position of a halving pass stored in `kernel_runs.result`; undefined when no pass is running. */
function parseCursor(result: string): number | undefined {
  try {
    const cursor = (JSON.parse(result) as { cursor?: unknown }).cursor
    return typeof cursor === 'number' && Number.isSafeInteger(cursor) && cursor >= 0 ? cursor : undefined
  } catch {
    return undefined // empty or damaged: no pass running; the next period starts one
  }
}

/** The edge from a distilled fact to the block it came from. */
export const DERIVED_FROM = 'derived_from'

/**
 * The layer columns, the provenance table and the kernel run log (schema migration "layers").
 * Writes go through the store's own commit path, so captured text gets the same secrets policy,
 * content ids and dedupe as a note; everything here runs inside the store's transactions.
 */
export class LayerTable {
  private readonly host: LayerTableHost
  constructor(host: LayerTableHost) {
    this.host = host
  }

  /**
   * Stores captured pieces as cold blocks in one transaction. A piece whose text is already a
   * block keeps that block (and its layer) and only gains an origin row; an origin already
   * recorded is not recorded again, so capturing the same region twice writes nothing. A piece
   * the store refuses is reported and skipped; the others are kept. The blocks are saved in
   * `scope` (a scope key; the session's, so a conversation's turns stay in its workspace).
   */
  capture(pieces: readonly CapturePiece[], source: (piece: CapturePiece) => string, scope: string = GLOBAL_SCOPE): CaptureResult {
    const out: CaptureResult = { created: 0, ids: [], existing: 0, origins: 0, refused: [] }
    if (pieces.length === 0) return out
    const now = this.host.now()
    const origin = this.host.stmt('layers.origin', `INSERT INTO block_origins (block_id, session_id, seq, event_type, role, event_time, compaction_id, captured_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
    this.host.transaction(() => {
      // A new block is written cold, with the piece's source, by the insert itself.
      const cold = (i: number) => ({ layer: 'cold' as const, source: source(pieces[i]!) })
      const batch = this.commitEach(pieces.map((piece) => ({ text: piece.text, scope })), (i, reason) => out.refused.push({ seq: pieces[i]!.origin.seq, reason }), cold)
      for (const [i, piece] of pieces.entries()) {
        const result = batch[i]
        if (result === undefined) continue
        if (result.created) {
          out.created++
          out.ids.push(result.id)
        } else {
          out.existing++
        }
        const o = piece.origin
        const added = origin.run(result.id, o.sessionId, o.seq, o.eventType, o.role, o.eventTime, o.compactionId, now)
        out.origins += Number(added.changes)
      }
    })
    return out
  }

  /**
   * Commits inputs through the store's commit path: one batch when every input is acceptable
   * (the usual case), one by one otherwise, so a refused input (a credential under `secrets:
   * refuse`) costs only itself; its result is undefined and `refused` hears why. `createdAs` is
   * passed on to `commitMany` (indexed like `inputs`).
   */
  private commitEach(inputs: readonly CommitInput[], refused: (index: number, reason: string) => void = () => {},
    createdAs?: (index: number) => { layer: Layer, source: string }): Array<CommitResult | undefined> {
    if (inputs.length === 0) return []
    try {
      return this.host.commitMany(inputs, createdAs)
    } catch (error) {
      if (!(error instanceof StableMemError)) throw error
    }
    return inputs.map((input, i) => {
      try {
        return this.host.commitMany([input], createdAs && (() => createdAs(i)))[0]!
      } catch (error) {
        if (!(error instanceof StableMemError)) throw error
        refused(i, error.message)
        return undefined
      }
    })
  }

  /** The earliest origin of each of these blocks that has one (one statement for the whole list). */
  firstOrigins(ids: readonly string[]): Map<string, Origin> {
    const out = new Map<string, Origin>()
    if (ids.length === 0) return out
    const rows = this.host.stmt('layers.origins', `SELECT block_id, session_id, seq, event_type, role, event_time, compaction_id FROM block_origins
      WHERE block_id IN (SELECT value FROM json_each(?)) ORDER BY event_time, seq`).all(JSON.stringify(ids))
    for (const r of rows) {
      const id = String(r.block_id)
      if (out.has(id)) continue
      out.set(id, {
        sessionId: String(r.session_id), seq: Number(r.seq), eventType: String(r.event_type), role: String(r.role),
        eventTime: Number(r.event_time), compactionId: String(r.compaction_id),
      })
    }
    return out
  }

  /** Which of these blocks were captured from `sessionId`. */
  fromSession(ids: readonly string[], sessionId: string): Set<string> {
    if (ids.length === 0) return new Set()
    const rows = this.host.stmt('layers.fromSession', `SELECT DISTINCT block_id FROM block_origins
      WHERE session_id = ? AND block_id IN (SELECT value FROM json_each(?))`).all(sessionId, JSON.stringify(ids))
    return new Set(rows.map((r) => String(r.block_id)))
  }

  /** The holder layer of a block, or undefined when there is no such block. */
  layerOf(id: string): Layer | undefined {
    const row = this.host.stmt('layers.layerOf', 'SELECT layer FROM blocks WHERE id = ?').get(id) as { layer: string } | undefined
    return row === undefined ? undefined : row.layer as Layer
  }

  /** Counts per layer. */
  stats(): LayerStats {
    const row = this.host.stmt('layers.stats', `SELECT
      (SELECT count(*) FROM blocks WHERE layer = 'stable') AS stable,
      (SELECT count(*) FROM blocks WHERE layer = 'cold') AS cold,
      (SELECT count(DISTINCT block_id) FROM block_origins) AS captured,
      (SELECT count(*) FROM blocks WHERE layer = 'cold' AND cool_attempts > 0) AS undistilled`).get() as Record<string, number>
    return { stable: Number(row.stable), cold: Number(row.cold), captured: Number(row.captured), undistilled: Number(row.undistilled) }
  }

  /**
   * Cold blocks the cooling rule selects at `now`: accessed at most `maxAccess` times, idle (last
   * access, else creation) before `now - idleMs`, and not waiting for a retry; the longest idle
   * first, at most `limit`. Served by the partial index on cold blocks, so the cost is the
   * number of cold blocks idle long enough, never the size of the store.
   */
  coldCandidates(now: number, idleMs: number, maxAccess: number, limit: number): ColdCandidate[] {
    const rows = this.host.stmt('layers.candidates', `SELECT id, text, access_count, coalesce(last_access_at, created_at) AS idle, cool_attempts FROM blocks
      WHERE layer = 'cold' AND coalesce(last_access_at, created_at) < ? AND access_count <= ? AND cool_next_at <= ? AND superseded_by IS NULL
      ORDER BY coalesce(last_access_at, created_at) LIMIT ?`).all(now - idleMs, maxAccess, now, limit)
    return rows.map((r) => ({ id: String(r.id), text: String(r.text), accessCount: Number(r.access_count), idleSince: Number(r.idle), attempts: Number(r.cool_attempts) }))
  }

  /** Cools one block; see `coolMany`. */
  cool(id: string, facts: readonly FactInput[], now: number, retryMs: number): CoolOutcome {
    return this.coolMany([{ id, facts }], now, retryMs)[0]!
  }

  /**
   * Cools blocks in one transaction: checks each is still cold (another process may have cooled
   * it since it was selected), writes the facts as stable blocks with a `derived_from` edge to
   * their block, and counts the rows SQLite actually wrote. Only a positive count moves a block
   * to `stable` (same id, nothing deleted); otherwise it stays cold with one more attempt and
   * waits `retryMs` before it is selected again. The facts of the whole batch go through the
   * commit path as one batch, and the layer changes are one statement each, so a tick of 100
   * blocks costs about what committing its facts costs.
   */
  coolMany(items: ReadonlyArray<{ id: string, facts: readonly FactInput[] }>, now: number, retryMs: number): CoolOutcome[] {
    if (items.length === 0) return []
    return this.host.transaction(() => {
      const cold = this.stillCold(items.map((item) => item.id))
      const live = items.filter((item) => cold.has(item.id))
      // A fact is recalled where its block is: it is saved in the block's scopes (its words are the block's).
      const scopesOf = this.host.stmt('layers.scopesOf', `SELECT m.scope FROM memberships m JOIN blocks b ON b.rowid = m.block_rowid
        WHERE b.id = ? ORDER BY m.scope <> 'global', m.scope`)
      const scopes = new Map(live.map((item) => [item.id, scopesOf.all(item.id).map((r) => String(r.scope))]))
      const fact = (text: string, scope: string | undefined) => ({ text, source: 'distill', semanticType: 'fact', ...(scope === undefined ? {} : { scope }) })
      const inputs = live.flatMap((item) => item.facts.map((f) => fact(f.text, scopes.get(item.id)![0])))
      const results = this.commitEach(inputs)
      // Saving the same text in another scope adds that membership (a block in two workspaces is one block).
      this.commitEach(live.flatMap((item) => scopes.get(item.id)!.slice(1).flatMap((scope) => item.facts.map((f) => fact(f.text, scope)))))
      const edge = this.host.stmt('layers.derivedFrom', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
        VALUES ('block', ?, 'block', ?, '${DERIVED_FROM}', ?) ON CONFLICT DO NOTHING`)
      const byId = new Map<string, CoolOutcome>()
      let k = 0
      for (const item of live) {
        let delta = 0
        const written: string[] = []
        for (let f = 0; f < item.facts.length; f++) {
          const result = results[k++]
          if (result === undefined) continue // refused by the store (e.g. a credential under `secrets: refuse`)
          if (result.id === item.id) continue // a fact identical to its source would be a self-loop
          if (result.created) delta++
          // Both ends exist (the fact was just committed, the block was checked above), so no endpoint check.
          delta += Number(edge.run(result.id, item.id, now).changes)
          written.push(result.id)
        }
        byId.set(item.id, delta > 0 ? { id: item.id, result: 'cooled', delta, facts: written } : { id: item.id, result: 'kept', delta: 0, facts: [] })
      }
      const outcomes = items.map((item) => byId.get(item.id) ?? { id: item.id, result: 'skipped' as const, delta: 0, facts: [] })
      const ids = (result: CoolOutcome['result']) => JSON.stringify(outcomes.filter((o) => o.result === result).map((o) => o.id))
      this.host.stmt('layers.promote', `UPDATE blocks SET layer = 'stable', cool_state = 'distilled', cool_next_at = 0
        WHERE id IN (SELECT value FROM json_each(?))`).run(ids('cooled'))
      this.host.stmt('layers.retry', `UPDATE blocks SET cool_state = 'undistilled', cool_attempts = cool_attempts + 1, cool_next_at = ?
        WHERE id IN (SELECT value FROM json_each(?))`).run(now + retryMs, ids('kept'))
      return outcomes
    })
  }

  /** Which of these blocks are in the cold layer now (one statement; call inside the write that depends on it). */
  private stillCold(ids: readonly string[]): Set<string> {
    const rows = this.host.stmt('layers.stillCold', `SELECT id FROM blocks WHERE layer = 'cold' AND id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids))
    return new Set(rows.map((r) => String(r.id)))
  }

  /**
   * Halves the access count of up to `limit` cold blocks recalled at least once, those after
   * rowid `after`, in rowid order (HomeAgent's lifetime count never decayed, so a block recalled
   * three times once would never cool). Returns how many it halved and the rowid to resume after,
   * undefined when no block is left: the pass of this cooling period is complete. Served by a partial
   * index of recalled cold blocks, so its cost is `limit`, whatever the store size.
   */
  halveAccess(after: number, limit: number): { halved: number, next: number | undefined } {
    const rows = this.host.stmt('layers.halveSelect', `SELECT rowid FROM blocks INDEXED BY blocks_cold_accessed
      WHERE layer = 'cold' AND access_count > 0 AND rowid > ? ORDER BY rowid LIMIT ?`).all(after, limit)
    if (rows.length === 0) return { halved: 0, next: undefined }
    const rowids = rows.map((r) => Number(r.rowid))
    this.host.stmt('layers.halve', 'UPDATE blocks SET access_count = access_count / 2 WHERE rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rowids))
    return { halved: rowids.length, next: rows.length < limit ? undefined : rowids.at(-1)! }
  }

  /**
   * One bounded step of access-count halving (spec: "halve access_count each cooling period"):
   * once `periodMs` has passed since the current period began, a pass starts that halves every
   * recalled cold block once, `limit` blocks per step, resumed by the next step where it stopped.
   * The period and the pass's position live in `kernel_runs` (job `HALVING_JOB`), so they survive
   * restarts and every process on the store shares them. The first period begins at the first
   * step. Returns how many blocks this step halved. Call it inside the tick's write.
   */
  halvingStep(now: number, periodMs: number, limit: number): number {
    this.host.stmt('layers.runInit', 'INSERT INTO kernel_runs (name) VALUES (?) ON CONFLICT DO NOTHING').run(HALVING_JOB)
    const row = this.host.stmt('layers.halvingState', 'SELECT last_run_at, result FROM kernel_runs WHERE name = ?').get(HALVING_JOB) as { last_run_at: number, result: string }
    let periodStart = Number(row.last_run_at)
    let cursor = parseCursor(String(row.result))
    if (periodStart === 0 || periodStart > now) {
      // The first period begins now; nothing is halved before it ends. A period that begins later
      // than now (a tick run with a future `--now`) would stall halving until then: it begins now.
      periodStart = now
    } else if (cursor === undefined && now - periodStart >= periodMs) {
      periodStart = now
      cursor = 0
    }
    let halved = 0
    if (cursor !== undefined) {
      const step = this.halveAccess(cursor, limit)
      halved = step.halved
      cursor = step.next
    }
    this.host.stmt('layers.halvingSave', 'UPDATE kernel_runs SET last_run_at = ?, result = ? WHERE name = ?')
      .run(periodStart, JSON.stringify({ cursor: cursor ?? null }), HALVING_JOB)
    return halved
  }

  /** A block's holder layer and cooling state, as the export writes them; undefined for an unknown id. */
  stateOf(id: string): LayerState | undefined {
    const row = this.host.stmt('layers.stateOf', 'SELECT layer, cool_state, cool_attempts, cool_next_at FROM blocks WHERE id = ?').get(id) as
      { layer: string, cool_state: string, cool_attempts: number, cool_next_at: number } | undefined
    if (row === undefined) return undefined
    return { layer: row.layer as Layer, coolState: String(row.cool_state), coolAttempts: Number(row.cool_attempts), coolNextAt: Number(row.cool_next_at) }
  }

  /**
   * Merges an imported block's layer and cooling state into the block this store already holds
   * (inside the import's transaction; a block new to this store is written with them,
   * `lib/store/import-rows.ts`). It is `stable` if either side distilled or saved it (cooling
   * never moves a block back to `cold`), with the larger attempt count and the later retry time.
   */
  mergeState(id: string, state: LayerState): void {
    this.host.stmt('layers.mergeState', `UPDATE blocks SET
      cool_state = CASE WHEN layer = 'stable' THEN cool_state WHEN ?1 = 'stable' THEN ?2 ELSE CASE WHEN ?2 <> '' THEN ?2 ELSE cool_state END END,
      layer = CASE WHEN ?1 = 'stable' THEN 'stable' ELSE layer END,
      cool_attempts = max(cool_attempts, ?3), cool_next_at = max(cool_next_at, ?4)
      WHERE id = ?5`).run(state.layer, state.coolState, state.coolAttempts, state.coolNextAt, id)
  }

  /** Every origin row in a stable order, read lazily (the export streams them). */
  * allOrigins(): IterableIterator<Origin & { blockId: string, capturedAt: number }> {
    const sql = `SELECT block_id, session_id, seq, event_type, role, event_time, compaction_id, captured_at FROM block_origins
      ORDER BY event_time, session_id, seq, block_id`
    for (const r of this.host.stmt('layers.allOrigins', sql).iterate()) {
      yield {
        blockId: String(r.block_id), sessionId: String(r.session_id), seq: Number(r.seq), eventType: String(r.event_type), role: String(r.role),
        eventTime: Number(r.event_time), compactionId: String(r.compaction_id), capturedAt: Number(r.captured_at),
      }
    }
  }

  /** Restores one exported origin row; idempotent (true when it was new). Its block must exist. */
  importOrigin(origin: Origin & { blockId: string, capturedAt: number }): boolean {
    if (this.layerOf(origin.blockId) === undefined) throw new StableMemError('not_found', `blockId: no block ${origin.blockId}`)
    const added = this.host.stmt('layers.importOrigin', `INSERT INTO block_origins (block_id, session_id, seq, event_type, role, event_time, compaction_id, captured_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
      .run(origin.blockId, origin.sessionId, origin.seq, origin.eventType, origin.role, origin.eventTime, origin.compactionId, origin.capturedAt)
    return Number(added.changes) > 0
  }

  /**
   * Takes the lease on a background job for `ttlMs` unless another holder's lease is still
   * running; true if this holder has it now. Two processes on one store therefore never run the
   * same job at the same time (and `cool` re-checks each block besides).
   */
  acquire(name: string, holder: string, ttlMs: number): boolean {
    return this.host.transaction(() => {
      const now = this.host.now()
      this.host.stmt('layers.runInit', 'INSERT INTO kernel_runs (name) VALUES (?) ON CONFLICT DO NOTHING').run(name)
      const taken = this.host.stmt('layers.lease', `UPDATE kernel_runs SET holder = ?, lease_until = ?
        WHERE name = ? AND (holder = ? OR holder = '' OR lease_until < ?)`).run(holder, now + ttlMs, name, holder, now)
      return Number(taken.changes) === 1
    })
  }

  /** Ends a run: records its time and result and releases the lease (only the holder's own). */
  release(name: string, holder: string, result: string): void {
    this.host.stmt('layers.release', `UPDATE kernel_runs SET last_run_at = ?, result = ?, holder = '', lease_until = 0
      WHERE name = ? AND holder = ?`).run(this.host.now(), result, name, holder)
  }

  /** The last recorded run of a job, if any. */
  lastRun(name: string): { lastRunAt: number, result: string } | undefined {
    const row = this.host.stmt('layers.lastRun', 'SELECT last_run_at, result FROM kernel_runs WHERE name = ?').get(name) as { last_run_at: number, result: string } | undefined
    return row === undefined || Number(row.last_run_at) === 0 ? undefined : { lastRunAt: Number(row.last_run_at), result: String(row.result) }
  }
}
