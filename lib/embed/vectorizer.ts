import type { BlockStore } from '../store/store.ts'
import { backfillVectors, embedBlocks } from './backfill.ts'
import { refreshCentroid } from './centroid.ts'
import type { Embedder } from './types.ts'

/** Counters of the background vector writer, shown in the service stats. */
export interface VectorizerStats {
  /** Vectors written since start. */
  embedded: number
  /** Embed calls that failed (their blocks wait for the next backfill). */
  failures: number
  /** Block ids waiting to be embedded. */
  queued: number
  /** Message of the last failure. */
  lastError?: string
}

/**
 * Computes vectors after commit, off the commit path: `enqueue` returns at once, a single
 * background loop embeds queued blocks in batches and writes their vectors. Commit never waits for
 * the embedder and never fails because of it; a failed batch is counted and left for the next
 * backfill. On start it backfills blocks that have no vector yet.
 */
export class BlockVectorizer {
  private readonly store: BlockStore
  private readonly embedder: Embedder
  private readonly batchSize: number
  private readonly onError: (error: unknown) => void
  private readonly queue = new Set<string>()
  private readonly abort = new AbortController()
  private running: Promise<void> | undefined
  private backfillPending = true
  private readonly counters = { embedded: 0, failures: 0, lastError: undefined as string | undefined }

  constructor(store: BlockStore, embedder: Embedder, options: { batchSize?: number, onError?: (error: unknown) => void } = {}) {
    this.store = store
    this.embedder = embedder
    this.batchSize = Math.max(1, options.batchSize ?? 32)
    this.onError = options.onError ?? (() => {})
  }

  /** Queues blocks for embedding and makes sure the loop runs. Never throws, never waits. */
  enqueue(ids: readonly string[]): void {
    for (const id of ids) this.queue.add(id)
    this.kick()
  }

  /** Starts the initial backfill in the background. */
  start(): void {
    this.kick()
  }

  /** Resolves when the queue is empty and nothing is in flight (tests, CLI, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }

  /** Stops the loop; in-flight requests are aborted and their blocks left for the next backfill. */
  close(): void {
    this.abort.abort()
    this.queue.clear()
  }

  /** Counters for `stats()`. */
  stats(): VectorizerStats {
    return { embedded: this.counters.embedded, failures: this.counters.failures, queued: this.queue.size, ...(this.counters.lastError ? { lastError: this.counters.lastError } : {}) }
  }

  private kick(): void {
    if (this.running || this.abort.signal.aborted) return
    this.running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.drain())
      .finally(() => {
        this.running = undefined
        if (this.queue.size > 0) this.kick()
      })
  }

  private async drain(): Promise<void> {
    const signal = this.abort.signal
    if (this.backfillPending) {
      this.backfillPending = false
      await this.guard(async () => {
        const result = await backfillVectors(this.store, this.embedder, { batchSize: this.batchSize, signal })
        this.counters.embedded += result.done
      })
    }
    while (this.queue.size > 0 && !signal.aborted && !this.store.isClosed) {
      const ids = [...this.queue].slice(0, this.batchSize)
      for (const id of ids) this.queue.delete(id)
      await this.guard(async () => {
        const blocks = ids.map((id) => this.store.get(id)).filter((b) => b !== undefined)
        this.counters.embedded += await embedBlocks(this.store, this.embedder, blocks, signal)
        if (!this.store.isClosed && this.embedder.dims > 0) refreshCentroid(this.store, this.embedder.model, this.embedder.dims)
      })
    }
  }

  private async guard(work: () => Promise<void>): Promise<void> {
    try {
      await work()
    } catch (error) {
      if (this.abort.signal.aborted || this.store.isClosed) return
      this.counters.failures++
      this.counters.lastError = error instanceof Error ? error.message : String(error)
      this.onError(error)
    }
  }
}
