import { randomUUID } from 'node:crypto'
import { Service, type Context } from '@deepseek-ai/cordis'
import type { Config } from './config.ts'
import { StableMemError } from './errors.ts'
import { embedderFromConfig } from './embed/from-config.ts'
import type { HttpEmbedder } from './embed/http.ts'
import { StagesApi, type Stages } from './kernel/stages/api.ts'
import { bindStages } from './kernel/stages/bind.ts'
import { StageHost } from './kernel/stages/host.ts'
import type { StageStats } from './kernel/stages/types.ts'
import { BlockVectorizer, type VectorizerStats } from './embed/vectorizer.ts'
import { coolingOptions, coolTick, type CoolingReport } from './kernel/layers/cooling.ts'
import type { Distiller } from './kernel/layers/distill.ts'
import { llmDistiller } from './kernel/layers/llm-distiller.ts'
import { isAbstention } from './recall/abstain.ts'
import type { CapturePiece, CaptureResult, LayerStats, Origin } from './store/layers.ts'
import { AccessRecorder, type AccessStats } from './store/access.ts'
import { failureKind, transientReason } from './store/failure.ts'
import { gateHits } from './recall/gate.ts'
import { markDegraded, recallBlocksHybrid } from './recall/hybrid.ts'
import { clampTopK, MAX_TOP_K } from './recall/recall.ts'
import { DEGRADED_REASONS, type DegradedReason, type Hit, type HybridHits } from './recall/types.ts'
import { ScopePolicy, type RecallView, type ScopeContext, type ScopeTarget } from './scope-policy.ts'
import type { ScopeName } from './store/scope-key.ts'
import type { ScopeCount } from './store/scopes.ts'
import type { ForgetOptions, ForgetResult, ForgetTarget, VacuumResult } from './store/forget.ts'
import type { MergeScope, SliceOutcome } from './store/fts-upkeep.ts'
import { BlockStore } from './store/store.ts'
import { scrubInBackground } from './store/scrub.ts'
import { TeamLayer, type TeamStats } from './team/layer.ts'
import { mergeTeamHits } from './team/merge.ts'
import type { SharedForgetResult } from './team/forget.ts'
import type { ShareResult } from './team/write.ts'
import { checkSceneKey, normalizeSceneKey } from './store/scene-key.ts'
import { SceneApi, type SceneStats } from './kernel/scenes/api.ts'
import { withSceneNotes } from './kernel/scenes/union.ts'
import type { Block, CommitInput, CommitResult, EdgeInput, StoreStats } from './store/types.ts'

declare module '@deepseek-ai/cordis' {
  interface Context {
    /** Long-term block memory (dsh-stablemem). */
    stablemem: StableMem
  }
}

/** `stats()` of the service: the store's counts plus the plugin's own health counters. */
export interface ServiceStats extends Partial<StoreStats>, Partial<AccessStats> {
  /** False when the store could not be opened; `error` says why. The agent runs on without memory. */
  available: boolean
  error?: string
  /** Calls that failed for a reason that passes (full disk, I/O error, lock); memory stayed on and retried. */
  transientFailures: number
  /** Set while the last store call failed that way; cleared by the next call that writes. */
  transientError?: string
  /** Turns whose recall failed (logged; the turn went on without notes). */
  recallFailures: number
  /** Recall messages injected into turns. */
  injections: number
  /** Recalls in which vectors took part. */
  hybridRecalls: number
  /** Recalls that fell back to the lexical result, by reason. */
  recallDegraded: Record<DegradedReason, number>
  /** The embedder and the background vector writer; absent while `embed.baseUrl` is empty. */
  vectors?: VectorStats
  /** Blocks per layer (docs/layers.md); absent while the store is unavailable. */
  layers?: LayerStats
  /** Compaction capture: regions seen, blocks written, captures that failed (logged; the turn went on). */
  capture: { regions: number, blocks: number, failures: number }
  /** Finished turns by how they ended (`completed`, `blocked`, …), counted at after_output. */
  turns: Record<string, number>
  /** The stage API's handlers, calls, handler errors and loop exits. */
  stages: StageStats
  /** Notes per scope key (`global`, `workspace:<dir>`, `preset:<id>`), most first; a note in two scopes counts in both. */
  byScope?: ScopeCount[]
  /** The shared team layer (docs/team.md); absent while `team.url` is empty. */
  team?: TeamStats
  /** Scenes, refs, resolved turns and the scene card (docs/scenes.md); absent while the store is unavailable. */
  scenes?: SceneStats
}

/**
 * What `ctx.stablemem.commit` takes: the note, and the scope to save it in. `scope` names the kind
 * (default: config `scopes.defaultScope`); `workspace` (an absolute, existing directory) and
 * `preset` say which workspace or preset. Saving a note that exists in another scope adds the scope.
 */
export interface ServiceCommitInput extends Omit<CommitInput, 'scope'>, ScopeContext {
  scope?: ScopeName
  /** Also write the note to the team layer (config `team`); nothing is shared unless this says so. */
  shared?: boolean
}

/** Options of `ctx.stablemem.recall`. */
/** Kept for callers written against the scopes release: the same options as `RecallCallOptions`. */
export type ServiceRecallOptions = RecallCallOptions

/** The vector side of `stats()`. */
export interface VectorStats extends Partial<VectorizerStats> {
  model: string
  dims: number
  /** Vectors stored for this model and dims. */
  stored?: number
  /** `closed`, `open` or `half_open`. */
  circuit: string
  /** Why the embedder could not be created from the configuration, if it could not. */
  error?: string
}

/** Options of `ctx.stablemem.recall`. */
export interface RecallCallOptions {
  /** How many notes (default 5; with `purpose: 'inject'`, the config's `topK`). */
  topK?: number
  /** Count the returned notes as accesses (default true). */
  recordAccess?: boolean
  /**
   * `search` (default): the ranked list, ungated, as a deliberate search wants it. `inject`:
   * exactly the notes the per-turn injection would show (the relevance gate applied).
   */
  purpose?: 'search' | 'inject'
  /** Which notes to search (default `global`: a caller without a session sees no workspace's notes). */
  scope?: RecallView
  /** Merge the team layer's notes when one is configured (default true). */
  team?: boolean
  /**
   * Scene keys whose attached notes join the result (`scenes.readKeys` of a turn): placed after
   * exact pins, always through the gate, within `topK` and the scope (docs/scenes.md).
   */
  scenes?: readonly string[]
  /**
   * The earlier messages of the live conversation, oldest first: read with the query when it does
   * not clearly match the store alone (`lib/recall/conversation.ts`).
   */
  earlier?: readonly string[]
}

/** The gated hits, keeping the `degraded` mark of the list they were taken from. */
function keepMarks(from: HybridHits, hits: Hit[]): HybridHits {
  return from.degraded === undefined ? hits : markDegraded(hits, from.degraded)
}

/** Degraded reasons that mean something is wrong (shown in the prompt context line); the rest are by design. */
const FAILURE_REASONS: readonly DegradedReason[] = ['timeout', 'circuit_open', 'embed_error', 'no_vectors']

/**
 * The `ctx.stablemem` service: the one typed memory API other plugins build on. It owns the store
 * file for the fiber's lifetime (opened in init, closed on dispose). If the file cannot be opened
 * the service still exists, reports why through `stats()`, and refuses calls with an
 * `unavailable` error, so a broken store never takes the agent down.
 *
 * Fields are TypeScript `private`, never `#private`: cordis calls methods through a proxy.
 */
export class StableMem extends Service {
  private readonly config: Config
  private readonly storePath: string
  private store: BlockStore | undefined
  private access: AccessRecorder | undefined
  private failure: string | undefined
  private transient: string | undefined
  private transientCount = 0
  private recallFailureCount = 0
  private injectionCount = 0
  private hybridCount = 0
  private lastDegraded: DegradedReason | undefined
  private readonly degradedCounts = Object.fromEntries(DEGRADED_REASONS.map((r) => [r, 0])) as Record<DegradedReason, number>
  private readonly embedder: HttpEmbedder | null = null
  private readonly embedderError: string | undefined
  private vectorizer: BlockVectorizer | undefined
  private readonly captureCounts = { regions: 0, blocks: 0, failures: 0 }
  /** This process's name on the cooling lease (`kernel_runs`). */
  private readonly holder = `${process.pid}:${randomUUID().slice(0, 8)}`
  /** Turns sessions' workspaces and presets into scope keys (`lib/scope-policy.ts`). */
  readonly scopePolicy: ScopePolicy
  private readonly stageHost: StageHost
  /**
   * HologramAgent's turn stages over dsh hooks (docs/stages.md). A handler registered through a
   * plugin's `ctx.stablemem.stages.on` is removed when that plugin unloads.
   */
  readonly stages: Stages
  private readonly turnCounts: Record<string, number> = {}
  /** The shared team layer, when `team.url` is set (docs/team.md). */
  private readonly team: TeamLayer | undefined
  /** Scenes: the current scene of each agent, the scene list, declaring (docs/scenes.md). */
  readonly scenes: SceneApi

  constructor(ctx: Context, config: Config & { resolvedPath: string, scopePolicy?: ScopePolicy }) {
    super(ctx, 'stablemem')
    this.config = config
    this.storePath = config.resolvedPath
    this.scopePolicy = config.scopePolicy ?? new ScopePolicy(config.scopes)
    try {
      this.embedder = embedderFromConfig(config.embed)
    } catch (error) {
      this.embedderError = error instanceof Error ? error.message : String(error)
      ctx.logger('stablemem').warn('vectors disabled: %s', this.embedderError)
    }
    // A `team` block without a namespace fails here, at load, naming the field.
    this.team = config.team?.url ? new TeamLayer(config.team, { secrets: config.secrets, maxBlockChars: config.maxBlockChars, logger: ctx.logger('stablemem') }) : undefined
    ctx.effect(() => () => this.close(), 'stablemem.close')
    this.stageHost = new StageHost(ctx.logger('stablemem'))
    const binding = bindStages(ctx, this.stageHost, { maxStepsPerTurn: config.maxStepsPerTurn, stopWhenAllDenied: config.stopWhenAllDenied })
    this.stages = new StagesApi(ctx, this.stageHost, () => binding.idle())
    this.scenes = new SceneApi((fn) => this.use(fn), {
      channel: config.channel, timeZone: config.timeZone, halfLifeDays: config.sceneHalfLifeDays, card: config.sceneCard,
      scopes: (view) => this.scopePolicy.recallUnion(view),
    })
  }

  /** Opens the store; a failure is recorded and logged, not thrown, so the agent keeps running. */
  async [Service.init](): Promise<void> {
    try {
      this.store = new BlockStore(this.storePath, { maxBlockChars: this.config.maxBlockChars, secrets: this.config.secrets, duplicates: this.config.duplicates })
      this.access = new AccessRecorder(this.store)
      this.config.scenes.forEach((key, i) => this.store!.scenes.declare(checkSceneKey(key, `scenes[${i}]`, true), 0))
      if (this.embedder) {
        const logger = this.ctx.logger('stablemem')
        this.vectorizer = new BlockVectorizer(this.store, this.embedder, {
          batchSize: this.config.embed.batchSize,
          onError: (error) => logger.warn('embedding notes failed (they wait for the next backfill): %s', error instanceof Error ? error.message : String(error)),
        })
        this.vectorizer.start()
      }
      if (this.store.pendingScrubs().forgets > 0) this.scrubLater()
    } catch (error) {
      this.failure = error instanceof Error ? error.message : String(error)
      this.ctx.logger('stablemem').error('memory disabled: %s', this.failure)
    }
    // Checked in the background: a slow or absent team server never delays the agent's start.
    void this.team?.start()
  }

  /** Resolves once the team layer's startup check has run (at once without a team layer); for tests and the CLI. */
  async teamReady(): Promise<void> {
    await this.team?.start()
  }

  /**
   * Stores a note; idempotent by content (the id is the text's hash). `supersedes` retires an older
   * note from recall. A new note's vector is computed afterwards in the background: commit never
   * waits for the embedder. The note is saved in `scope` (see `ServiceCommitInput`).
   */
  async commit(input: ServiceCommitInput): Promise<CommitResult> {
    if (input === null || typeof input !== 'object') throw new StableMemError('invalid_input', 'input must be an object with a text field')
    const { workspace, preset, scope, shared, ...note } = input
    if (shared !== undefined && typeof shared !== 'boolean') throw new StableMemError('invalid_input', `shared must be a boolean, not ${kindOf(shared)}`)
    if (shared && !this.team) throw new StableMemError('invalid_input', 'shared: true needs a team layer (config team.url); the note was not saved')
    const key = this.scopePolicy.commitScope(scope, { workspace, preset })
    // A shared note may supersede a note only the team holds: locally it then supersedes nothing.
    const local = shared && note.supersedes && !this.use((store) => store.get(note.supersedes!)) ? { ...note, supersedes: '' } : note
    const result = this.use((store) => store.commit({ ...local, scope: key }))
    this.recovered()
    if (result.created) this.vectorizer?.enqueue([result.id])
    if (shared) {
      try {
        await this.team!.share([{ text: note.text, source: note.source, scene: note.scene, supersedes: note.supersedes }])
      } catch (error) {
        throw new StableMemError('unavailable', `saved in this machine's memory as ${result.id}, but not shared with the team: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
      }
    }
    return result
  }

  /**
   * Shares stored notes with the team layer (`stablemem share`): their text, source and scene,
   * as the saver's member name. Unknown ids are refused before anything is shared.
   */
  async share(ids: readonly string[]): Promise<ShareResult[]> {
    if (!this.team) throw new StableMemError('invalid_input', 'sharing needs a team layer (config team.url)')
    const blocks = ids.map((id) => {
      const block = this.use((store) => store.get(id))
      if (!block) throw new StableMemError('not_found', `no note ${id} in this store`)
      return block
    })
    return await this.team.share(blocks.map((b) => ({ text: b.text, source: b.source, scene: b.scene })))
  }

  /**
   * Deletes notes from the team layer (for everyone in the team), by id, a list of ids or a filter
   * like `forget`'s (`{scene}`, `{source}`, `{before}`, `{all: true}`), within the team's namespace.
   */
  async forgetShared(target: ForgetTarget, options: { dryRun?: boolean } = {}): Promise<SharedForgetResult> {
    if (!this.team) throw new StableMemError('invalid_input', 'forgetting shared notes needs a team layer (config team.url)')
    return await this.team.forget(target, options)
  }

  /**
   * Recalls up to `topK` notes for a query, best first. Returned notes count as accesses unless
   * `recordAccess` is false (then call `recordAccess` for the ones actually used); counting never
   * waits for another process's write lock (see `recordAccess`). With an
   * embedder, vectors take part when they can; otherwise the lexical result is returned and the
   * reason counted (see `stats().recallDegraded`). When the query names a specific exact string
   * the store lacks, the result is empty and carries a non-enumerable `abstained` reason (`abstentionOf`).
   * Every hit carries its absolute `relevance`. With `purpose: 'inject'` the result is what the
   * per-turn injection shows: of the best `topK` (default: the config's), those the relevance
   * gate and adaptive count of the config let through (`gate.ts`), only they counted as accessed;
   * the injection then renders them within `injectBudgetChars`.
   * `scope` says which notes to search (default global only; a session's view is
   * `{ workspace, preset }`); notes outside it are never counted or returned.
   * With a team layer (config `team`, docs/team.md) its notes are merged in, within
   * `team.budgetMs` (`team: false` leaves them out); a team hit carries `team: { member, savedAt }`.
   */
  async recall(query: string, options: RecallCallOptions = {}): Promise<HybridHits> {
    // A JavaScript caller can pass anything; recalling nothing for a number would hide its bug.
    if (typeof query !== 'string') throw new StableMemError('invalid_input', `query must be a string, not ${kindOf(query)}`)
    if (options === null || typeof options !== 'object') throw new StableMemError('invalid_input', `options must be an object, not ${kindOf(options)}`)
    if (options.topK !== undefined && (typeof options.topK !== 'number' || Number.isNaN(options.topK))) {
      throw new StableMemError('invalid_input', `topK must be a number (1–100), not ${kindOf(options.topK)}`)
    }
    if (options.recordAccess !== undefined && typeof options.recordAccess !== 'boolean') {
      throw new StableMemError('invalid_input', `recordAccess must be a boolean, not ${kindOf(options.recordAccess)}`)
    }
    if (options.purpose !== undefined && options.purpose !== 'inject' && options.purpose !== 'search') {
      const given = typeof options.purpose === 'string' ? JSON.stringify(options.purpose) : kindOf(options.purpose)
      throw new StableMemError('invalid_input', `purpose must be 'inject' or 'search', not ${given}`)
    }
    if (options.team !== undefined && typeof options.team !== 'boolean') throw new StableMemError('invalid_input', `team must be a boolean, not ${kindOf(options.team)}`)
    if (options.scenes !== undefined && (!Array.isArray(options.scenes) || options.scenes.some((k) => typeof k !== 'string'))) {
      throw new StableMemError('invalid_input', 'scenes must be an array of scene keys')
    }
    if (options.earlier !== undefined && (!Array.isArray(options.earlier) || options.earlier.some((m) => typeof m !== 'string'))) {
      throw new StableMemError('invalid_input', 'earlier must be an array of message texts')
    }
    const sceneKeys = (options.scenes ?? []).map((k) => normalizeSceneKey(k)).filter((k) => k !== '')
    const inject = options.purpose === 'inject'
    const scopes = this.scopePolicy.recallUnion(options.scope)
    const store = this.open()
    const topK = inject ? (options.topK ?? this.config.topK) : options.topK
    let localDone: (ids: readonly string[]) => void = () => {}
    const localIds = new Promise<readonly string[]>((resolve) => { localDone = resolve })
    // Sent first, answered within its budget on the team's thread while the local recall runs (`lib/team/layer.ts`).
    const team = options.team === false ? undefined : this.team?.recall(query, clampTopK(topK), localIds)
    let hits: HybridHits
    try {
      const local = recallBlocksHybrid(store, this.embedder, query, {
        topK, recordAccess: false, scopes, earlier: options.earlier,
        budgetMs: this.config.embed.recallBudgetMs, minCosine: this.config.embed.minCosine,
      })
      local.then((found) => localDone(found.map((h) => h.id)), () => localDone([]))
      hits = await local
      const answer = await team
      if (answer !== undefined && 'result' in answer) hits = mergeTeamHits(hits, answer.result, clampTopK(topK))
      const scenes = sceneKeys.length > 0 && !isAbstention(hits)
        ? withSceneNotes(store, hits, sceneKeys, scopes, topK ?? 5)
        : undefined
      if (scenes !== undefined) hits = keepMarks(hits, scenes.hits)
      if (inject && !isAbstention(hits)) {
        const { minRelevance, relevanceFalloff: falloff, minScore } = this.config
        hits = keepMarks(hits, gateHits(hits, { minRelevance, falloff, minScore, topK: MAX_TOP_K, attached: scenes?.attached }))
      }
    } catch (error) {
      throw this.failed(store, error)
    }
    if (options.recordAccess ?? true) this.countAccess(hits.map((h) => h.id))
    if (isAbstention(hits)) return hits
    this.lastDegraded = hits.degraded
    if (hits.degraded) this.degradedCounts[hits.degraded]++
    else this.hybridCount++
    return hits
  }

  /**
   * Stores the pieces of a region compaction took out of the context window as cold blocks, with
   * their origins (`lib/store/layers.ts`): the commit path's secrets policy, ids and dedupe apply,
   * and a region seen twice writes nothing new. The write happens before the first `await`, so a
   * synchronous caller (the `session/event` listener) has it stored when the call returns.
   */
  async capture(pieces: readonly CapturePiece[]): Promise<CaptureResult> {
    const result = this.use((store) => store.layers.capture(pieces, (piece) => `compaction:${piece.origin.role}`))
    this.captureCounts.regions++
    this.captureCounts.blocks += result.created
    if (result.ids.length > 0) this.vectorizer?.enqueue(result.ids)
    return result
  }

  /** Counts one capture that failed (called by the compaction listener). */
  noteCaptureFailure(): void {
    this.captureCounts.failures++
  }

  /**
   * One cooling tick (L2 → L3, `lib/kernel/layers/cooling.ts`) at `now` (default: the clock),
   * with the configured rule and distiller; `dryRun` lists what would cool and writes nothing.
   * Another process holding the cooling lease makes it return `status: 'busy'`.
   */
  async cool(options: { now?: number, dryRun?: boolean } = {}): Promise<CoolingReport> {
    const store = this.open()
    try {
      return await coolTick(store, options.now ?? Date.now(), { ...coolingOptions(this.config.layers), distiller: this.distiller(), dryRun: options.dryRun }, this.holder)
    } catch (error) {
      throw this.failed(store, error)
    }
  }

  /** The LLM distiller when configured and dsh's LLM service is there; otherwise undefined (the deterministic one). */
  private distiller(): Distiller | undefined {
    const { distiller, distillerProvider, distillerModel } = this.config.layers
    if (distiller !== 'llm' || this.ctx.get('llm', false) === undefined) return undefined
    return llmDistiller(this.ctx, distillerProvider, distillerModel)
  }

  /** Where each of these blocks was captured from (its earliest origin); blocks saved as notes have none. */
  async origins(ids: readonly string[]): Promise<Map<string, Origin>> {
    return this.use((store) => store.layers.firstOrigins(ids))
  }

  /**
   * Counts these notes as accessed (count and time), e.g. the ones a caller showed to the model.
   * Never waits for another process's write lock: while one holds it the counts wait in memory and
   * are written with the next recording (`stats().accessDeferred`).
   */
  async recordAccess(ids: readonly string[]): Promise<void> {
    if (!Array.isArray(ids)) throw new StableMemError('invalid_input', `ids must be an array of block ids, not ${kindOf(ids)}`)
    ids.forEach((id, i) => {
      if (typeof id !== 'string') throw new StableMemError('invalid_input', `ids[${i}] must be a block id string, not ${kindOf(id)}`)
    })
    this.open()
    this.countAccess(ids)
  }

  /** Best-effort access counting (see `recordAccess`); the file's damage still disables memory. */
  private countAccess(ids: readonly string[]): void {
    if (ids.length === 0 || !this.access) return
    const store = this.open()
    try {
      if (this.access.record(ids)) this.recovered()
    } catch (error) {
      // The counts stay waiting in the recorder; only damage is worth failing the caller for.
      const refusal = this.failed(store, error)
      if (failureKind(error) === 'damage') throw refusal
      this.ctx.logger('stablemem').warn('access counts not written yet: %s', error instanceof Error ? error.message : String(error))
    }
  }

  /** Resolves when every queued note has its vector (or failed); for tests, the CLI and shutdown. */
  async vectorsIdle(): Promise<void> {
    await this.vectorizer?.idle()
  }

  /**
   * A sentence for the prompt context line while vector recall is failing (the last recall
   * degraded for a reason other than "not configured" or "language not declared"), with the
   * counters of every failure reason; '' otherwise.
   */
  vectorHealthLine(): string {
    if (!this.embedder || !this.lastDegraded || !FAILURE_REASONS.includes(this.lastDegraded)) return ''
    const counts = FAILURE_REASONS.filter((r) => this.degradedCounts[r] > 0).map((r) => `${r} ${this.degradedCounts[r]}`).join(', ')
    return `Vector recall is degraded (${counts}); notes are recalled by words only.`
  }

  /** A sentence for the prompt context line while the team layer is failing or refused to start; '' otherwise. */
  teamHealthLine(): string {
    return this.team?.healthLine() ?? ''
  }

  /**
   * Deletes notes for good: one id, a list of ids, or a filter (`{scene}`, `{source}`, `{before}`,
   * `{all: true}`; an empty filter is refused). Their index entries, vectors and edges go in the
   * same transaction and no byte of them stays in the file (docs/reliability.md): at return, or
   * for a large forget (`bytesPending`) a few seconds later, scrubbed in the background, unless
   * `wait: true` (then at return). Returns what was
   * deleted; ids that are not stored are listed in `unknown`, not thrown. A note the forgotten
   * one had superseded becomes current again unless `restoreSuperseded: false`.
   */
  async forget(target: ForgetTarget, options: ForgetOptions = {}): Promise<ForgetResult> {
    const result = this.use((store) => store.forget(target, { origin: 'service', ...options }))
    if (result.bytesPending) this.scrubLater()
    return result
  }

  /**
   * Finishes pending scrubs in the background (lib/store/scrub.ts): after a large forget, at open
   * (one left by a process that exited first) and on every heartbeat.
   */
  scrubLater(): void {
    if (this.store === undefined || this.failure !== undefined) return
    const logger = this.ctx.logger('stablemem')
    scrubInBackground(() => this.failure === undefined && this.store?.isClosed === false ? this.store : undefined,
      (error) => logger.warn('scrubbing forgotten notes\' bytes failed (tried again at the next heartbeat): %s', error instanceof Error ? error.message : String(error)))
  }

  /** Rewrites the store file without free space (what `stablemem vacuum` does). */
  async vacuum(): Promise<VacuumResult> {
    return this.use((store) => store.vacuum())
  }

  /** The stored block with this id, or undefined. */
  async get(id: string): Promise<Block | undefined> {
    if (typeof id !== 'string') throw new StableMemError('invalid_input', `id must be a string, not ${kindOf(id)}`)
    return this.use((store) => store.get(id))
  }

  /** The scope keys a note belongs to (`global`, `workspace:<dir>`, `preset:<id>`); empty for an unknown id. */
  async scopesOf(id: string): Promise<string[]> {
    return this.use((store) => store.scopes.of(id))
  }

  /**
   * Moves notes: `target` becomes their only scope (moving to `global` replaces their workspace and
   * preset memberships). A workspace must be an existing absolute directory. Returns how many changed.
   */
  async setScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, true)
    return this.use((store) => store.scopes.set(ids, key))
  }

  /** Adds a scope to notes (they stay in their others). Returns how many memberships are new. */
  async addScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, true)
    return this.use((store) => store.scopes.add(ids, key))
  }

  /**
   * Takes notes out of one scope, keeping their others. Refused for a note that has no other
   * scope (it would never be recalled again). Returns how many memberships were removed.
   */
  async removeScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, false)
    return this.use((store) => store.scopes.remove(ids, key))
  }

  /** Records an edge between two nodes (idempotent per source, target and type); `redacted` names credentials masked in its fields. */
  async link(edge: EdgeInput): Promise<{ created: boolean, redacted?: string[] }> {
    const result = this.use((store) => store.link(edge))
    this.recovered()
    return result
  }

  /** Counts, file facts and health; never throws. */
  async stats(): Promise<ServiceStats> {
    const health = {
      transientFailures: this.transientCount,
      ...(this.transient === undefined ? {} : { transientError: this.transient }),
      recallFailures: this.recallFailureCount,
      injections: this.injectionCount,
      hybridRecalls: this.hybridCount,
      recallDegraded: { ...this.degradedCounts },
      capture: { ...this.captureCounts },
      turns: { ...this.turnCounts },
      stages: this.stageHost.stats(),
      ...(this.embedder || this.embedderError ? { vectors: this.vectorStats() } : {}),
      ...(this.team ? { team: this.team.stats() } : {}),
    }
    if (!this.store || this.store.isClosed) {
      return { available: false, error: this.failure ?? 'store is closed', path: this.storePath, ...health }
    }
    try {
      return { available: true, ...this.store.stats(), layers: this.store.layers.stats(), byScope: this.store.scopes.counts(), scenes: this.scenes.stats(), ...health, ...this.access?.stats() }
    } catch (error) {
      const refusal = this.failed(this.store, error)
      return { available: false, error: refusal instanceof Error ? refusal.message : String(refusal), path: this.storePath, ...health }
    }
  }

  /** The number of stored blocks, or undefined while unavailable (for the prompt context line). */
  blockCount(): number | undefined {
    if (!this.store || this.store.isClosed) return undefined
    try {
      return this.store.count()
    } catch (error) {
      const refusal = this.failed(this.store, error)
      if (refusal instanceof StableMemError) return undefined
      throw refusal
    }
  }

  /** Segments of the full-text index, or undefined while unavailable (the host's idle upkeep asks; lib/plugin/index-upkeep.ts). */
  ftsSegments(): number | undefined {
    if (this.unavailableReason() !== undefined) return undefined
    return this.use((store) => store.ftsSegments())
  }

  /**
   * One slice of full-text index upkeep for the host's idle timer (`BlockStore.upkeepSlice`): it
   * never waits for another process's write lock (`busy` instead).
   */
  upkeepSlice(scope: MergeScope): SliceOutcome {
    return this.use((store) => store.upkeepSlice({ wait: false, scope }))
  }

  /** Which merge the index's segments are worth, if any (the host's upkeep asks; `BlockStore.mergeDue`). */
  mergeDue(levelsDone: boolean): MergeScope | undefined {
    return this.use((store) => store.mergeDue(levelsDone))
  }

  /** Why the store is unavailable, if it is. */
  unavailableReason(): string | undefined {
    return this.store && !this.store.isClosed ? undefined : (this.failure ?? 'store is closed')
  }

  /** Why the last store call failed, while the failure is a passing one (full disk, I/O, lock); memory stays on. */
  transientTrouble(): string | undefined {
    return this.transient
  }

  /** Counts one failed recall (called by the pre-step listener). */
  noteRecallFailure(): void {
    this.recallFailureCount++
  }

  /** Counts one injected recall message (called by the pre-step listener). */
  noteInjection(): void {
    this.injectionCount++
  }

  /** Counts one finished turn by how it ended (called by the statistics handler at after_output). */
  noteTurn(reason: string): void {
    this.turnCounts[reason] = (this.turnCounts[reason] ?? 0) + 1
  }

  private use<T>(fn: (store: BlockStore) => T): T {
    const store = this.open()
    try {
      return fn(store)
    } catch (error) {
      throw this.failed(store, error)
    }
  }

  /**
   * Sorts a store error (`lib/store/failure.ts`). Damage to the file (found after a clean open)
   * disables memory for the rest of the fiber, logged once and reported by `stats()`, instead of
   * failing every later turn. A failure that passes (a full disk, an I/O error, a lock) leaves
   * memory on: the call is refused with a plain message, `stats()` and the context line say so
   * until a later write succeeds. Refusals of the caller's input pass through unchanged.
   */
  private failed(store: BlockStore, error: unknown): unknown {
    if (error instanceof StableMemError) return error
    const kind = failureKind(error)
    if (kind === 'transient') {
      const reason = transientReason(error)
      if (this.transient === undefined) this.ctx.logger('stablemem').warn('memory could not use %s (%s); it retries on the next call', this.storePath, reason)
      this.transient = reason
      this.transientCount++
      return new StableMemError('unavailable', `long-term memory could not write just now (${reason}); nothing stored was lost, and the next call tries again`, { cause: error })
    }
    if (kind !== 'damage') return error
    this.failure = `store ${this.storePath} is damaged or unusable: ${(error as Error).message}`
    this.ctx.logger('stablemem').error('memory disabled: %s', this.failure)
    store.close()
    return new StableMemError('unavailable', `long-term memory is unavailable: ${this.failure}`, { cause: error })
  }

  /** A write succeeded: a passing failure is over. */
  private recovered(): void {
    if (this.transient === undefined) return
    this.ctx.logger('stablemem').info('memory writes to %s again', this.storePath)
    this.transient = undefined
  }

  private vectorStats(): VectorStats {
    if (!this.embedder) return { model: this.config.embed.model, dims: this.config.embed.dims, circuit: 'closed', error: this.embedderError }
    const { model, dims } = this.embedder
    const stored = this.store && !this.store.isClosed && dims > 0 ? this.store.vectors.count(model, dims) : undefined
    return { model, dims, ...(stored === undefined ? {} : { stored }), circuit: this.embedder.breaker.state, ...this.vectorizer?.stats() }
  }

  private open(): BlockStore {
    if (this.store && !this.store.isClosed) return this.store
    throw new StableMemError('unavailable', `long-term memory is unavailable: ${this.failure ?? 'store is closed'}`)
  }

  private close(): void {
    this.vectorizer?.close()
    this.store?.close()
    void this.team?.close()
  }
}

/** How a refusal names a value of the wrong type: `number 42`, `null`, `an object`. */
function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
  return typeof value === 'object' ? 'an object' : typeof value
}
