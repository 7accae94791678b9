import { randomUUID } from 'node:crypto'
import { Service, type Context } from '@deepseek-ai/cordis'
import type { Config } from './config.ts'
import { StableMemError } from './errors.ts'
import { StagesApi, type Stages } from './kernel/stages/api.ts'
import { bindStages } from './kernel/stages/bind.ts'
import { StageHost } from './kernel/stages/host.ts'
import { coolingOptions, coolTick, type CoolingReport } from './kernel/layers/cooling.ts'
import type { Distiller } from './kernel/layers/distill.ts'
import { llmDistiller } from './kernel/layers/llm-distiller.ts'
import { isAbstention } from './recall/abstain.ts'
import type { CapturePiece, CaptureResult, Origin } from './store/layers.ts'
import { AccessRecorder } from './store/access.ts'
import { failureKind } from './store/failure.ts'
import type { HybridHits } from './recall/types.ts'
import { ScopePolicy, type ScopeContext, type ScopeTarget } from './scope-policy.ts'
import type { ForgetOptions, ForgetResult, ForgetTarget, VacuumResult } from './store/forget.ts'
import type { MergeScope, SliceOutcome } from './store/fts-upkeep.ts'
import { BlockStore } from './store/store.ts'
import { scrubInBackground } from './store/scrub.ts'
import { TeamLayer } from './team/layer.ts'
import type { SharedForgetResult } from './team/forget.ts'
import type { ShareResult } from './team/write.ts'
import { checkSceneKey, normalizeSceneKey } from './store/scene-key.ts'
import { SceneApi } from './kernel/scenes/api.ts'
import type { KernelMemory } from './kernel/host-memory.ts'
import type { Block, CommitResult, EdgeInput } from './store/types.ts'
import { checkIdList, checkRecallCall, kindOf } from './service/inputs.ts'
import { recallMerged } from './service/recall-merge.ts'
import { StoreGuard } from './service/store-guard.ts'
import { ServiceVectors } from './service/vectors.ts'
import type { RecallCallOptions, ServiceCommitInput, ServiceStats, VectorStats } from './service/types.ts'

declare module '@deepseek-ai/cordis' {
  interface Context {
    /** Long-term block memory (dsh-stablemem). */
    stablemem: StableMem
  }
}

/**
 * The `ctx.stablemem` service: the one typed memory API other plugins build on. It owns the store
 * file for the fiber's lifetime (opened in init, closed on dispose). If the file cannot be opened
 * the service still exists, reports why through `stats()`, and refuses calls with an
 * `unavailable` error, so a broken store never takes the agent down.
 *
 * Fields are TypeScript `private`, never `#private`: cordis calls methods through a proxy.
 */
export class StableMem extends Service implements KernelMemory {
  private readonly config: Config
  private readonly storePath: string
  /** The store and its availability (`lib/service/store-guard.ts`). */
  private readonly guard: StoreGuard
  private access: AccessRecorder | undefined
  private recallFailureCount = 0
  private injectionCount = 0
  /** The optional embedder, its background vector writer and the recall counters (`lib/service/vectors.ts`). */
  private readonly vectors: ServiceVectors
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
    this.guard = new StoreGuard(config.resolvedPath, ctx.logger('stablemem'))
    this.scopePolicy = config.scopePolicy ?? new ScopePolicy(config.scopes)
    this.vectors = new ServiceVectors(config.embed, ctx.logger('stablemem'))
    // A `team` block without a namespace fails here, at load, naming the field.
    this.team = config.team?.url ? new TeamLayer(config.team, { secrets: config.secrets, maxBlockChars: config.maxBlockChars, logger: ctx.logger('stablemem') }) : undefined
    ctx.effect(() => () => this.close(), 'stablemem.close')
    this.stageHost = new StageHost(ctx.logger('stablemem'))
    const binding = bindStages(ctx, this.stageHost, { maxStepsPerTurn: config.maxStepsPerTurn, stopWhenAllDenied: config.stopWhenAllDenied })
    this.stages = new StagesApi(ctx, this.stageHost, () => binding.idle())
    this.scenes = new SceneApi((fn) => this.guard.use(fn), {
      channel: config.channel, timeZone: config.timeZone, halfLifeDays: config.sceneHalfLifeDays, card: config.sceneCard,
      scopes: (view) => this.scopePolicy.recallUnion(view),
    })
  }

  /** Opens the store; a failure is recorded and logged, not thrown, so the agent keeps running. */
  async [Service.init](): Promise<void> {
    try {
      const store = this.guard.store = new BlockStore(this.storePath, { maxBlockChars: this.config.maxBlockChars, secrets: this.config.secrets, duplicates: this.config.duplicates })
      this.access = new AccessRecorder(store)
      this.config.scenes.forEach((key, i) => store.scenes.declare(checkSceneKey(key, `scenes[${i}]`, true), 0))
      this.vectors.start(store)
      if (store.pendingScrubs().forgets > 0) this.scrubLater()
    } catch (error) {
      this.guard.openFailed(error)
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
    const local = shared && note.supersedes && !this.guard.use((store) => store.get(note.supersedes!)) ? { ...note, supersedes: '' } : note
    const result = this.guard.use((store) => store.commit({ ...local, scope: key }))
    this.guard.recovered()
    if (result.created) this.vectors.enqueue([result.id])
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
      const block = this.guard.use((store) => store.get(id))
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
    checkRecallCall(query, options)
    const sceneKeys = (options.scenes ?? []).map((k) => normalizeSceneKey(k)).filter((k) => k !== '')
    const inject = options.purpose === 'inject'
    const scopes = this.scopePolicy.recallUnion(options.scope)
    const store = this.guard.open()
    const topK = inject ? (options.topK ?? this.config.topK) : options.topK
    let hits: HybridHits
    try {
      const parts = { store, embedder: this.vectors.embedder, team: this.team, config: this.config }
      hits = await recallMerged(parts, query, { topK, scopes, sceneKeys, inject, team: options.team !== false, earlier: options.earlier })
    } catch (error) {
      throw this.guard.failed(store, error)
    }
    if (options.recordAccess ?? true) this.countAccess(hits.map((h) => h.id))
    if (isAbstention(hits)) return hits
    this.vectors.counted(hits)
    return hits
  }

  /**
   * Stores the pieces of a region compaction took out of the context window as cold blocks, with
   * their origins (`lib/store/layers.ts`): the commit path's secrets policy, ids and dedupe apply,
   * and a region seen twice writes nothing new. The write happens before the first `await`, so a
   * synchronous caller (the `session/event` listener) has it stored when the call returns. The
   * blocks are saved in the scope of the session's `place` (`ScopePolicy.captureScope`).
   */
  async capture(pieces: readonly CapturePiece[], place: ScopeContext = {}): Promise<CaptureResult> {
    const scope = this.scopePolicy.captureScope(place)
    const result = this.guard.use((store) => store.layers.capture(pieces, (piece) => `compaction:${piece.origin.role}`, scope))
    this.captureCounts.regions++
    this.captureCounts.blocks += result.created
    this.vectors.enqueue(result.ids)
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
    const store = this.guard.open()
    try {
      return await coolTick(store, options.now ?? Date.now(), { ...coolingOptions(this.config.layers), distiller: this.distiller(), dryRun: options.dryRun }, this.holder)
    } catch (error) {
      throw this.guard.failed(store, error)
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
    return this.guard.use((store) => store.layers.firstOrigins(ids))
  }

  /**
   * Counts these notes as accessed (count and time), e.g. the ones a caller showed to the model.
   * Never waits for another process's write lock: while one holds it the counts wait in memory and
   * are written with the next recording (`stats().accessDeferred`).
   */
  async recordAccess(ids: readonly string[]): Promise<void> {
    checkIdList(ids)
    this.guard.open()
    this.countAccess(ids)
  }

  /** Best-effort access counting (see `recordAccess`); the file's damage still disables memory. */
  private countAccess(ids: readonly string[]): void {
    if (ids.length === 0 || !this.access) return
    const store = this.guard.open()
    try {
      if (this.access.record(ids)) this.guard.recovered()
    } catch (error) {
      // The counts stay waiting in the recorder; only damage is worth failing the caller for.
      const refusal = this.guard.failed(store, error)
      if (failureKind(error) === 'damage') throw refusal
      this.ctx.logger('stablemem').warn('access counts not written yet: %s', error instanceof Error ? error.message : String(error))
    }
  }

  /** Resolves when every queued note has its vector (or failed); for tests, the CLI and shutdown. */
  async vectorsIdle(): Promise<void> {
    await this.vectors.idle()
  }

  /**
   * A sentence for the prompt context line while vector recall is failing (the last recall
   * degraded for a reason other than "not configured" or "language not declared"), with the
   * counters of every failure reason; '' otherwise.
   */
  vectorHealthLine(): string {
    return this.vectors.healthLine()
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
    const result = this.guard.use((store) => store.forget(target, { origin: 'service', ...options }))
    if (result.bytesPending) this.scrubLater()
    return result
  }

  /**
   * Finishes pending scrubs in the background (lib/store/scrub.ts): after a large forget, at open
   * (one left by a process that exited first) and on every heartbeat.
   */
  scrubLater(): void {
    const guard = this.guard
    if (guard.store === undefined || guard.failure !== undefined) return
    const logger = this.ctx.logger('stablemem')
    scrubInBackground(() => guard.failure === undefined && guard.store?.isClosed === false ? guard.store : undefined,
      (error) => logger.warn('scrubbing forgotten notes\' bytes failed (tried again at the next heartbeat): %s', error instanceof Error ? error.message : String(error)))
  }

  /** Rewrites the store file without free space (what `stablemem vacuum` does). */
  async vacuum(): Promise<VacuumResult> {
    return this.guard.use((store) => store.vacuum())
  }

  /** The stored block with this id, or undefined. */
  async get(id: string): Promise<Block | undefined> {
    if (typeof id !== 'string') throw new StableMemError('invalid_input', `id must be a string, not ${kindOf(id)}`)
    return this.guard.use((store) => store.get(id))
  }

  /** The scope keys a note belongs to (`global`, `workspace:<dir>`, `preset:<id>`); empty for an unknown id. */
  async scopesOf(id: string): Promise<string[]> {
    return this.guard.use((store) => store.scopes.of(id))
  }

  /**
   * Moves notes: `target` becomes their only scope (moving to `global` replaces their workspace and
   * preset memberships). A workspace must be an existing absolute directory. Returns how many changed.
   */
  async setScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, true)
    return this.guard.use((store) => store.scopes.set(ids, key))
  }

  /** Adds a scope to notes (they stay in their others). Returns how many memberships are new. */
  async addScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, true)
    return this.guard.use((store) => store.scopes.add(ids, key))
  }

  /**
   * Takes notes out of one scope, keeping their others. Refused for a note that has no other
   * scope (it would never be recalled again). Returns how many memberships were removed.
   */
  async removeScope(ids: readonly string[], target: ScopeTarget): Promise<number> {
    const key = this.scopePolicy.targetKey(target, false)
    return this.guard.use((store) => store.scopes.remove(ids, key))
  }

  /** Records an edge between two nodes (idempotent per source, target and type); `redacted` names credentials masked in its fields. */
  async link(edge: EdgeInput): Promise<{ created: boolean, redacted?: string[] }> {
    const result = this.guard.use((store) => store.link(edge))
    this.guard.recovered()
    return result
  }

  /** Counts, file facts and health; never throws. */
  async stats(): Promise<ServiceStats> {
    const health = {
      ...this.guard.health(),
      recallFailures: this.recallFailureCount,
      injections: this.injectionCount,
      ...this.vectors.recallStats(),
      capture: { ...this.captureCounts },
      turns: { ...this.turnCounts },
      stages: this.stageHost.stats(),
      ...this.vectorPart(),
      ...(this.team ? { team: this.team.stats() } : {}),
    }
    const store = this.guard.store
    if (!store || store.isClosed) {
      return { available: false, error: this.guard.failure ?? 'store is closed', path: this.storePath, ...health }
    }
    try {
      return { available: true, ...store.stats(), layers: store.layers.stats(), byScope: store.scopes.counts(), scenes: this.scenes.stats(), ...health, ...this.access?.stats() }
    } catch (error) {
      const refusal = this.guard.failed(store, error)
      return { available: false, error: refusal instanceof Error ? refusal.message : String(refusal), path: this.storePath, ...health }
    }
  }

  /** The number of stored blocks, or undefined while unavailable (for the prompt context line). */
  blockCount(): number | undefined {
    return this.guard.quietly((store) => store.count())
  }

  /** Segments of the full-text index, or undefined while unavailable (the host's idle upkeep asks; lib/plugin/index-upkeep.ts). */
  ftsSegments(): number | undefined {
    if (this.unavailableReason() !== undefined) return undefined
    return this.guard.use((store) => store.ftsSegments())
  }

  /**
   * One slice of full-text index upkeep for the host's idle timer (`BlockStore.upkeepSlice`): it
   * never waits for another process's write lock (`busy` instead).
   */
  upkeepSlice(scope: MergeScope): SliceOutcome {
    return this.guard.use((store) => store.upkeepSlice({ wait: false, scope }))
  }

  /** Which merge the index's segments are worth, if any (the host's upkeep asks; `BlockStore.mergeDue`). */
  mergeDue(levelsDone: boolean): MergeScope | undefined {
    return this.guard.use((store) => store.mergeDue(levelsDone))
  }

  /** Why the store is unavailable, if it is. */
  unavailableReason(): string | undefined {
    return this.guard.unavailableReason()
  }

  /** Why the last store call failed, while the failure is a passing one (full disk, I/O, lock); memory stays on. */
  transientTrouble(): string | undefined {
    return this.guard.transientTrouble()
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

  /** The `vectors` part of `stats()`, present while `embed:` is configured. */
  private vectorPart(): { vectors?: VectorStats } {
    const vectors = this.vectors.stats(this.guard.store)
    return vectors === undefined ? {} : { vectors }
  }

  private close(): void {
    this.vectors.close()
    this.guard.store?.close()
    void this.team?.close()
  }
}
