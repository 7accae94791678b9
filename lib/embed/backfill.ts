import type { BlockStore } from '../store/store.ts'
import { refreshCentroid } from './centroid.ts'
import { embeddingText } from './embed-text.ts'
import { textLanguage } from './language.ts'
import type { Embedder } from './types.ts'
import { toBlob } from './vector.ts'

/** Progress of a backfill, reported after every batch. */
export interface BackfillProgress {
  /** Vectors written so far. */
  done: number
  /** Blocks that had no vector in this space when the backfill started. */
  total: number
}

/** Options of `backfillVectors`. */
export interface BackfillOptions {
  /** Blocks per embed call (the embedder may split further). */
  batchSize?: number
  signal?: AbortSignal
  onProgress?: (progress: BackfillProgress) => void
}

/**
 * Embeds every block that has no vector for the embedder's model and dims, in rowid order,
 * writes the vectors, then refreshes the centroid. Used by `stablemem embed --backfill`, after a
 * model change, and in the background when the service starts. Blocks committed meanwhile are
 * picked up too. Rejects with the embedder's error (vectors written before it are kept, so a
 * rerun continues where this one stopped).
 */
export async function backfillVectors(store: BlockStore, embedder: Embedder, options: BackfillOptions = {}): Promise<BackfillProgress> {
  const batchSize = Math.max(1, options.batchSize ?? 64)
  await learnDims(store, embedder, options.signal)
  const total = store.count() - (embedder.dims > 0 ? store.vectors.count(embedder.model, embedder.dims) : 0)
  const progress: BackfillProgress = { done: 0, total: Math.max(0, total) }
  let after = 0
  for (;;) {
    options.signal?.throwIfAborted()
    const blocks = store.vectors.missing(embedder.model, embedder.dims, after, batchSize)
    if (blocks.length === 0) break
    await embedBlocks(store, embedder, blocks, options.signal)
    after = blocks[blocks.length - 1]!.rowid
    progress.done += blocks.length
    options.onProgress?.({ ...progress })
  }
  if (embedder.dims > 0) refreshCentroid(store, embedder.model, embedder.dims)
  return progress
}

/**
 * Vectors are kept per (model, dims), so "which blocks have no vector" can only be asked once the
 * dims are known. An embedder configured without `dims` learns them from its first answer; one
 * short request for the first block's opening words teaches it here. Without this, every backfill
 * (one runs at each service start) asked about the empty 0-dims space: it embedded a first batch
 * again and reported every note as missing.
 */
async function learnDims(store: BlockStore, embedder: Embedder, signal?: AbortSignal): Promise<void> {
  if (embedder.dims > 0) return
  const first = store.vectors.missing(embedder.model, 0, 0, 1)[0]
  if (first !== undefined) await embedder.embed([first.text.slice(0, 64)], { signal })
}

/** Embeds these blocks, each read with its scene predecessor (`embed-text.ts`), and stores their vectors under the embedder's model and dims. */
export async function embedBlocks(store: BlockStore, embedder: Embedder, blocks: ReadonlyArray<{ id: string, text: string }>, signal?: AbortSignal): Promise<number> {
  if (blocks.length === 0) return 0
  const vectors = await embedder.embed(blocks.map((b) => embeddingText(b.text, store.vectors.scenePredecessor(b.id))), { signal })
  if (store.isClosed) return 0
  return store.vectors.put(embedder.model, embedder.dims, blocks.map((b, i) => ({
    blockId: b.id,
    lang: textLanguage(b.text),
    vector: toBlob(vectors[i]!),
  })))
}
