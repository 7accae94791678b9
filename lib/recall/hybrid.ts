import type { BlockStore } from '../store/store.ts'
import { recallBlocks } from './recall.ts'
import type { DegradedReason, HybridHits, RecallOptions } from './types.ts'

/**
 * The async recall beside the sync one, for callers that can wait for an embedder. Until vectors
 * take part it returns exactly `recallBlocks`, marked with a non-enumerable `degraded` reason, so
 * JSON, `Object.keys` and deep equality see the same hits as the lexical path. It never throws
 * because of the embedder.
 */
export async function recallBlocksHybrid(store: BlockStore, embedder: null, query: string, options: RecallOptions = {}): Promise<HybridHits> {
  const hits = recallBlocks(store, query, options)
  return markDegraded(hits, embedder === null ? 'no_embedder' : 'embed_error')
}

/** Attaches the non-enumerable `degraded` reason to a hit list. */
export function markDegraded(hits: HybridHits, reason: DegradedReason): HybridHits {
  Object.defineProperty(hits, 'degraded', { value: reason, enumerable: false, configurable: true })
  return hits
}
