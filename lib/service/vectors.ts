/**
 * The service's vector side: the optional embedder built from `embed:`, its background writer
 * (new notes get their vector after commit, never during it), and how recalls used them — the
 * recalls vectors took part in, the ones that fell back to words by reason, and the context
 * line's sentence while the fallback is a failure. Off (every call a no-op) while `embed.baseUrl`
 * is empty.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { EmbedConfig } from '../config.ts'
import { embedderFromConfig } from '../embed/from-config.ts'
import type { HttpEmbedder } from '../embed/http.ts'
import { BlockVectorizer } from '../embed/vectorizer.ts'
import { DEGRADED_REASONS, type DegradedReason, type HybridHits } from '../recall/types.ts'
import type { BlockStore } from '../store/store.ts'
import type { VectorStats } from './types.ts'

/** The logger vector trouble is reported through (`ctx.logger('stablemem')`). */
type Logger = ReturnType<Context['logger']>

/** Degraded reasons that mean something is wrong (shown in the prompt context line); the rest are by design. */
const FAILURE_REASONS: readonly DegradedReason[] = ['timeout', 'circuit_open', 'embed_error', 'no_vectors']

/** The embedder, the background vector writer and the recall counters of one service. */
export class ServiceVectors {
  /** The embedder, or null while none is configured (or the configuration was refused: `error`). */
  readonly embedder: HttpEmbedder | null = null
  /** Why the embedder could not be created from the configuration, if it could not. */
  readonly error: string | undefined
  private vectorizer: BlockVectorizer | undefined
  private hybridCount = 0
  private lastDegraded: DegradedReason | undefined
  private readonly degradedCounts = Object.fromEntries(DEGRADED_REASONS.map((r) => [r, 0])) as Record<DegradedReason, number>
  private readonly config: EmbedConfig
  private readonly logger: Logger

  /** Builds the embedder; a refused configuration is logged and disables vectors, never the service. */
  constructor(config: EmbedConfig, logger: Logger) {
    this.config = config
    this.logger = logger
    try {
      this.embedder = embedderFromConfig(config)
    } catch (error) {
      this.error = error instanceof Error ? error.message : String(error)
      logger.warn('vectors disabled: %s', this.error)
    }
  }

  /** Starts the background vector writer on the opened store (with an embedder only). */
  start(store: BlockStore): void {
    if (!this.embedder) return
    const logger = this.logger
    this.vectorizer = new BlockVectorizer(store, this.embedder, {
      batchSize: this.config.batchSize,
      onError: (error) => logger.warn('embedding notes failed (they wait for the next backfill): %s', error instanceof Error ? error.message : String(error)),
    })
    this.vectorizer.start()
  }

  /** Queues new notes for their vector; the caller never waits for it. */
  enqueue(ids: readonly string[]): void {
    if (ids.length > 0) this.vectorizer?.enqueue(ids)
  }

  /** Counts one recall that did not abstain: vectors took part, or the reason they did not. */
  counted(hits: HybridHits): void {
    this.lastDegraded = hits.degraded
    if (hits.degraded) this.degradedCounts[hits.degraded]++
    else this.hybridCount++
  }

  /** Resolves when every queued note has its vector (or failed). */
  async idle(): Promise<void> {
    await this.vectorizer?.idle()
  }

  /**
   * A sentence for the prompt context line while vector recall is failing (the last recall
   * degraded for a reason other than "not configured" or "language not declared"), with the
   * counters of every failure reason; '' otherwise.
   */
  healthLine(): string {
    if (!this.embedder || !this.lastDegraded || !FAILURE_REASONS.includes(this.lastDegraded)) return ''
    const counts = FAILURE_REASONS.filter((r) => this.degradedCounts[r] > 0).map((r) => `${r} ${this.degradedCounts[r]}`).join(', ')
    return `Vector recall is degraded (${counts}); notes are recalled by words only.`
  }

  /** The recall counters of `stats()`. */
  recallStats(): { hybridRecalls: number, recallDegraded: Record<DegradedReason, number> } {
    return { hybridRecalls: this.hybridCount, recallDegraded: { ...this.degradedCounts } }
  }

  /** The `vectors` part of `stats()` (with the stored count while `store` is open); undefined while `embed:` is off. */
  stats(store: BlockStore | undefined): VectorStats | undefined {
    if (!this.embedder) return this.error === undefined ? undefined : { model: this.config.model, dims: this.config.dims, circuit: 'closed', error: this.error }
    const { model, dims } = this.embedder
    const stored = store && !store.isClosed && dims > 0 ? store.vectors.count(model, dims) : undefined
    return { model, dims, ...(stored === undefined ? {} : { stored }), circuit: this.embedder.breaker.state, ...this.vectorizer?.stats() }
  }

  /** Stops the background writer (at dispose). */
  close(): void {
    this.vectorizer?.close()
  }
}
