import { userInfo } from 'node:os'
import type pg from 'pg'
import { CircuitBreaker } from '../embed/breaker.ts'
import { StableMemError } from '../errors.ts'
import type { SecretsPolicy } from '../secrets.ts'
import type { TeamConfig } from './config.ts'
import { connectFailure, openTeamPool, recallPoolConfig, type TeamTarget } from './connection.ts'
import { TeamError } from './errors.ts'
import { migrateTeamSchema } from './schema.ts'
import { TeamRecallThread } from './recall-thread.ts'
import { TeamRecallLate, type TeamResult } from './search.ts'
import type { ForgetTarget } from '../store/forget.ts'
import { forgetShared, type SharedForgetResult } from './forget.ts'
import { shareNotes, type SharedNoteInput, type ShareResult } from './write.ts'

/** Why a turn got no team notes. */
export type TeamDegradedReason =
  | 'timeout'       // the team layer did not answer within `team.budgetMs`
  | 'unreachable'   // no connection (server down, network)
  | 'circuit_open'  // it failed repeatedly; it is not asked for a while, then tried again
  | 'error'         // it answered with an error
  | 'unavailable'   // it refused to start (wrong password, another program's database, newer schema…)

/** Every team degraded reason, in a stable order. */
export const TEAM_DEGRADED_REASONS: readonly TeamDegradedReason[] = ['timeout', 'unreachable', 'circuit_open', 'error', 'unavailable']

/** `stats().team`. */
export interface TeamStats {
  namespace: string
  member: string
  /** `starting`, `ready`, `down` (retried by itself) or `failed` (refused to start; `error` says why). */
  state: TeamState
  error?: string
  /** Recalls that asked the team layer and merged its answer. */
  recalls: number
  /** Recalls that went on with local notes only, by reason. */
  degraded: Record<TeamDegradedReason, number>
  /** Notes this process shared. */
  shared: number
  /** `closed`, `open` or `half_open`. */
  circuit: string
}

/** Where the team layer stands. */
export type TeamState = 'starting' | 'ready' | 'down' | 'failed'

/** What `TeamLayer` needs beside its config. */
export interface TeamLayerOptions {
  secrets: SecretsPolicy
  maxBlockChars: number
  logger: { info(...args: unknown[]): void, warn(...args: unknown[]): void, error(...args: unknown[]): void }
  env?: NodeJS.ProcessEnv
  /** How long the circuit stays open after repeated failures, in ms (default 2,000). */
  cooldownMs?: number
}

/** Consecutive failed recalls that open the circuit. */
const FAILURE_THRESHOLD = 3
const DEFAULT_COOLDOWN_MS = 2_000
const TIMEOUT = Symbol('timeout')

/**
 * The shared team layer of one process: a connection pool, the startup check (reachable, the
 * login accepted, our schema at a version we understand — migrated forward when older —, the
 * namespace granted to the role), and recall within a time budget. Like the embedder
 * (`lib/recall/hybrid.ts`), it never takes a turn down: a slow or dead server gives the turn the
 * local notes with a reason counted in `stats()`; after repeated failures a circuit breaker stops
 * asking for a while, then one trial call finds out whether it is back. A refusal at startup (wrong
 * password, another program's database, a newer schema, a namespace the role does not have) is
 * logged once and reported; local memory is unaffected.
 */
export class TeamLayer {
  readonly config: TeamConfig
  private readonly options: TeamLayerOptions
  private readonly pool: pg.Pool
  private readonly target: TeamTarget
  private readonly breaker: CircuitBreaker
  private readonly thread: TeamRecallThread
  private state: TeamState = 'starting'
  private error: string | undefined
  private checking: Promise<void> | undefined
  private recallCount = 0
  private sharedCount = 0
  private lastReason: TeamDegradedReason | undefined
  private readonly degraded = Object.fromEntries(TEAM_DEGRADED_REASONS.map((r) => [r, 0])) as Record<TeamDegradedReason, number>
  private closed = false

  constructor(config: TeamConfig, options: TeamLayerOptions) {
    if (config.namespace === '') throw new TeamError('config', 'team.namespace is required when team.url is set')
    this.config = config
    this.options = options
    const { pool, target, settings } = openTeamPool(config, options.env ?? process.env, (error) => {
      options.logger.warn('team memory connection lost (%s); it reconnects on the next call', error.message)
    })
    this.pool = pool
    this.target = target
    this.thread = new TeamRecallThread(recallPoolConfig(settings))
    this.breaker = new CircuitBreaker({ failureThreshold: FAILURE_THRESHOLD, cooldownMs: options.cooldownMs ?? DEFAULT_COOLDOWN_MS })
  }

  /** The member name shared notes carry. */
  get member(): string {
    return this.config.member !== '' ? this.config.member : processUser()
  }

  /** Runs the startup check once (again after the layer was down); resolves whatever it finds. */
  start(): Promise<void> {
    if (this.state === 'ready' || this.state === 'failed') return Promise.resolve()
    this.checking ??= this.check().finally(() => { this.checking = undefined })
    return this.checking
  }

  private async check(): Promise<void> {
    try {
      const client = await this.pool.connect()
      try {
        await migrateTeamSchema(client, this.target.database)
        const { rows } = await client.query<{ ns: string | null, super: boolean }>(
          'SELECT stablemem.my_namespace() AS ns, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS super')
        const granted = rows[0]!
        if (!granted.super && granted.ns !== this.config.namespace) {
          throw new TeamError('permission', `role ${JSON.stringify(this.target.user)} may not use team namespace ${JSON.stringify(this.config.namespace)}` +
            (granted.ns === null ? ' (it has none)' : ` (it has ${JSON.stringify(granted.ns)})`) + '; an administrator grants it with `stablemem team init --role`')
        }
        await client.query('SELECT 1 FROM stablemem.notes WHERE namespace = $1 LIMIT 1', [this.config.namespace])
      } finally {
        client.release()
      }
      await this.thread.ready()
      if (this.state === 'down') this.options.logger.info('team memory %s is reachable again', this.where())
      this.state = 'ready'
      this.error = undefined
    } catch (error) {
      const refusal = this.classify(error)
      if (refusal.kind === 'unreachable') {
        if (this.state !== 'down') this.options.logger.warn('team memory: %s; local memory works, and the team layer is retried', refusal.message)
        this.state = 'down'
      } else {
        this.options.logger.error('team memory disabled: %s', refusal.message)
        this.state = 'failed'
      }
      this.error = refusal.message
    }
  }

  private classify(error: unknown): TeamError {
    const known = connectFailure(error, this.target, this.config.passwordEnv)
    if (known) return known
    const e = error as { code?: string, message?: string }
    if (e.code === '42501' || e.code === '42883' || e.code === '42P01' || e.code === '3F000') {
      return new TeamError('permission', `team database ${this.where()}: ${e.message}; an administrator runs \`stablemem team init\``, { cause: error })
    }
    return new TeamError('unreachable', `team database ${this.where()} failed: ${e.message ?? String(error)}`, { cause: error })
  }

  private where(): string {
    return `${this.target.user}@${this.target.host}:${this.target.port}/${this.target.database}`
  }

  /**
   * The team layer's notes for a query within `budgetMs`, or the reason there are none. Never
   * throws. The recall runs on the team's thread (`recall-thread.ts`) and is sent before this
   * returns, so the server and that thread work while the caller runs its local recall;
   * `localIds` resolves with the local hits' ids once it is done, to check them for team notes
   * that supersede them.
   */
  async recall(query: string, topK: number, localIds: PromiseLike<readonly string[]> = Promise.resolve([]), budgetMs = this.config.budgetMs): Promise<{ result: TeamResult } | { reason: TeamDegradedReason }> {
    if (this.closed || this.state === 'failed') return this.degrade('unavailable')
    if (!this.breaker.tryAcquire()) return this.degrade('circuit_open')
    let timedOut = false
    const lateAfter = performance.now() + budgetMs
    const work = this.state === 'ready'
      ? this.thread.recall(this.config.namespace, query, topK, localIds, lateAfter)
      : (async () => {
          await this.start()
          const now = this.state as TeamState
          if (now !== 'ready') throw new TeamError(now === 'failed' ? 'permission' : 'unreachable', this.error ?? 'team layer not ready')
          return await this.thread.recall(this.config.namespace, query, topK, localIds, lateAfter)
        })()
    const settled = work.then((result) => {
      if (!timedOut) this.breaker.success()
      return result
    }, (error: unknown) => {
      if (!timedOut) this.breaker.failure()
      if ((this.state as TeamState) === 'ready' && !(error instanceof TeamRecallLate) && this.classify(error).kind === 'unreachable') {
        this.options.logger.warn('team memory %s is unreachable (%s); turns get local notes until it is back', this.where(), (error as Error).message)
        this.state = 'down'
        this.error = this.classify(error).message
      }
      return error instanceof Error ? error : new Error(String(error))
    })
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<typeof TIMEOUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMEOUT), budgetMs)
    })
    const outcome = await Promise.race([settled, deadline])
    clearTimeout(timer)
    if (outcome === TIMEOUT) {
      timedOut = true
      this.breaker.failure()
      return this.degrade('timeout')
    }
    if (outcome instanceof TeamRecallLate) return this.degrade('timeout')
    if (outcome instanceof Error) return this.degrade(outcome instanceof TeamError && outcome.kind !== 'unreachable' ? 'error' : this.classify(outcome).kind === 'unreachable' ? 'unreachable' : 'error')
    this.recallCount++
    this.lastReason = undefined
    return { result: outcome }
  }

  private degrade(reason: TeamDegradedReason): { reason: TeamDegradedReason } {
    this.degraded[reason]++
    this.lastReason = reason
    return { reason }
  }

  /** Shares notes (see `write.ts`); refused with a plain `unavailable` error while the team layer cannot be used. */
  async share(notes: readonly SharedNoteInput[]): Promise<ShareResult[]> {
    return await this.withClient(async (client) => {
      const results = await shareNotes(client, notes, { namespace: this.config.namespace, member: this.member, secrets: this.options.secrets, maxBlockChars: this.options.maxBlockChars })
      this.sharedCount += results.filter((r) => r.created).length
      return results
    })
  }

  /** Deletes this team's notes by id or filter (see `forget.ts`); `dryRun` only reports them. */
  async forget(target: ForgetTarget, options: { dryRun?: boolean } = {}): Promise<SharedForgetResult> {
    return await this.withClient((client) => forgetShared(client, this.config.namespace, target, options))
  }

  private async withClient<T>(fn: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    if (this.closed) throw new StableMemError('unavailable', 'team memory is closed')
    await this.start()
    if (this.state !== 'ready') throw new StableMemError('unavailable', `team memory is unavailable: ${this.error ?? this.state}`)
    let client: pg.PoolClient
    try {
      client = await this.pool.connect()
    } catch (error) {
      throw new StableMemError('unavailable', `team memory could not be reached just now: ${this.classify(error).message}`, { cause: error })
    }
    let broken: Error | undefined
    try {
      return await fn(client)
    } catch (error) {
      if (error instanceof StableMemError) throw error
      broken = error as Error
      throw new StableMemError('unavailable', `team memory could not save just now: ${this.classify(error).message}`, { cause: error })
    } finally {
      client.release(broken)
    }
  }

  /** A sentence for the prompt context line while the team layer is failing; '' while it works. */
  healthLine(): string {
    if (this.state === 'failed') return `Team memory (${this.config.namespace}) is unavailable: ${this.error}. Only this machine's notes are recalled.`
    if (this.lastReason === undefined) return ''
    const counts = TEAM_DEGRADED_REASONS.filter((r) => this.degraded[r] > 0).map((r) => `${r} ${this.degraded[r]}`).join(', ')
    return `Team memory (${this.config.namespace}) is degraded (${counts}); only this machine's notes are recalled until it answers again.`
  }

  /** The counters of `stats().team`. */
  stats(): TeamStats {
    return {
      namespace: this.config.namespace, member: this.member, state: this.state, ...(this.error === undefined ? {} : { error: this.error }),
      recalls: this.recallCount, degraded: { ...this.degraded }, shared: this.sharedCount, circuit: this.breaker.state,
    }
  }

  /** Closes the pool (pending calls finish first). */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([this.pool.end().catch(() => {}), this.thread.close()])
  }
}

/** The user name of this process, or `unknown` where the system has none. */
function processUser(): string {
  try {
    return userInfo().username || 'unknown'
  } catch {
    return 'unknown'
  }
}
