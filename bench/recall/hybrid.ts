import { backfillVectors } from '../../lib/embed/backfill.ts'
import { HttpEmbedder } from '../../lib/embed/http.ts'
import { EmbedError, type EmbedOptions, type Embedder } from '../../lib/embed/types.ts'
import { recallBlocksHybrid, type FusionMethod } from '../../lib/recall/hybrid.ts'
import type { DegradedReason } from '../../lib/recall/types.ts'
import type { BlockStore } from '../../lib/store/store.ts'
import type { RecallFn } from './recall-fn.ts'
import type { EvalSet } from './eval-set.ts'

/** Settings of the hybrid path under test. */
export interface HybridBenchOptions {
  url: string
  model: string
  languages: string[]
  fusion?: FusionMethod
  vectorWeight?: number
  budgetMs?: number
}

/**
 * An embedder that remembers the corpus vectors, so the corpus is embedded over HTTP once per run
 * and each per-scope store's backfill is a cache read. After `freeze()` nothing new is cached:
 * every query goes to the endpoint every time (the latency a user pays, also with `--repeat`).
 */
export class CachedEmbedder implements Embedder {
  private readonly inner: Embedder
  private readonly cache = new Map<string, Float32Array>()
  private frozen = false
  constructor(inner: Embedder) {
    this.inner = inner
  }
  get model(): string { return this.inner.model }
  get dims(): number { return this.inner.dims }
  get languages(): readonly string[] { return this.inner.languages }
  /** Stops caching: later texts are always sent to the endpoint. */
  freeze(): void {
    this.frozen = true
  }
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (this.frozen && texts.some((t) => !this.cache.has(t))) return this.inner.embed(texts, options)
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))]
    if (missing.length > 0) {
      const vectors = await this.inner.embed(missing, options)
      missing.forEach((t, i) => this.cache.set(t, vectors[i]!))
    }
    return texts.map((t) => this.cache.get(t)!)
  }
}

/**
 * The embedder of a hybrid bench run could not be set up or could not embed the corpus: the run
 * cannot measure what it was asked to, so the bench ends with this one-line message (naming the
 * URL and what failed) instead of a stack trace or a lexical-only result.
 */
export class BenchEmbedderError extends Error {}

/** The embedder of a bench run, with the corpus already embedded; `BenchEmbedderError` when it cannot be. */
export async function benchEmbedder(set: EvalSet, options: HybridBenchOptions): Promise<CachedEmbedder> {
  const named = `embedder ${options.url} (model ${JSON.stringify(options.model)})`
  let http: HttpEmbedder
  try {
    http = new HttpEmbedder({ baseUrl: options.url, model: options.model, languages: options.languages, batchSize: 64, timeoutMs: 120_000 })
  } catch (error) {
    throw new BenchEmbedderError(`${named} cannot be used: ${(error as Error).message}`, { cause: error })
  }
  const cached = new CachedEmbedder(http)
  const corpus = set.blocks.map((b) => b.text.normalize('NFC').trim())
  try {
    await cached.embed(corpus)
  } catch (error) {
    if (!(error instanceof EmbedError)) throw error
    throw new BenchEmbedderError(`${named} could not embed the corpus (${corpus.length} text${corpus.length === 1 ? '' : 's'}): ${error.message}`, { cause: error })
  }
  cached.freeze()
  return cached
}

/**
 * The hybrid recall as the service runs it (`recallBlocksHybrid` with access recording), after a
 * one-off backfill of each fresh store; counts why vectors did not take part.
 */
export function hybridRecallFn(embedder: Embedder, options: HybridBenchOptions): { recall: RecallFn, degraded: Partial<Record<DegradedReason | 'hybrid', number>> } {
  const filled = new WeakSet<BlockStore>()
  const degraded: Partial<Record<DegradedReason | 'hybrid', number>> = {}
  const recall: RecallFn = async (store, query, { topK }) => {
    if (!filled.has(store)) {
      await backfillVectors(store, embedder)
      filled.add(store)
    }
    const hits = await recallBlocksHybrid(store, embedder, query, {
      topK, recordAccess: true, fusion: options.fusion, vectorWeight: options.vectorWeight, budgetMs: options.budgetMs,
    })
    const key = hits.degraded ?? 'hybrid'
    degraded[key] = (degraded[key] ?? 0) + 1
    return hits
  }
  return { recall, degraded }
}
