import { EmbedError, type Embedder } from '../embed/types.ts'
import { languageDeclared } from '../embed/language.ts'
import { vectorIndexFor, type VectorHit } from '../embed/vector-index.ts'
import type { BlockStore } from '../store/store.ts'
import { isAbstention } from './abstain.ts'
import { clampTopK, current, recallBlocks } from './recall.ts'
import { queryRelevance } from './relevance.ts'
import type { DegradedReason, Hit, HybridHits, RecallOptions } from './types.ts'

/**
 * How lexical and vector candidates become one score (non-exact hits; exact-symbol hits stay pinned):
 * - `ha`: HologramAgent's 0.7 × cosine + 0.3 × lexical;
 * - `weighted`: `vectorWeight` × cosine + (1 − `vectorWeight`) × lexical;
 * - `rrf`: reciprocal-rank fusion, (1 − `vectorWeight`) / (60 + lexical rank) + `vectorWeight` / (60 + vector rank),
 *   scaled to [0, 1] (`vectorWeight` 0.5 is classic RRF).
 */
export type FusionMethod = 'ha' | 'weighted' | 'rrf'

/** Options of the hybrid recall. */
export interface HybridOptions extends RecallOptions {
  /** How long to wait for the query vector, in ms (default 300); after that the lexical result is returned. */
  budgetMs?: number
  /** Fusion formula (default: the measured best, see docs/embeddings.md). */
  fusion?: FusionMethod
  /** Vector weight for `weighted` and `rrf` fusion (default 0.3). */
  vectorWeight?: number
  /** Candidates taken from each path before fusion (default 100). */
  candidates?: number
  /** Vector candidates below this cosine are ignored, so an unrelated note never rides in on rank alone (default 0.2). */
  minCosine?: number
}

/** Default wait for the query vector. */
export const DEFAULT_BUDGET_MS = 300
/** Default fusion, chosen on the dev sets (docs/embeddings.md "Fusion"). */
export const DEFAULT_FUSION: FusionMethod = 'weighted'
/** Default vector weight, chosen on the dev sets (docs/embeddings.md "Fusion"). */
export const DEFAULT_VECTOR_WEIGHT = 0.3
/** Default floor for a vector candidate's cosine. */
export const DEFAULT_MIN_COSINE = 0.2
const RRF_K = 60
const DEFAULT_CANDIDATES = 100

/**
 * The async recall beside the sync one. With an embedder whose languages cover the query, it
 * embeds the query within `budgetMs`, searches the stored vectors of the same model and dims
 * (vector candidates below `minCosine` are dropped), scores every lexical candidate's cosine too,
 * and fuses both into one score per block; a block holding an exact query symbol stays pinned
 * above every fused score. An abstention of the lexical recall (the query names an exact string
 * no block holds) is returned as it is: vectors never answer a question the store cannot.
 * Superseded blocks stay out of the vector candidates as they stay out of the lexical ones. A fused
 * hit's `relevance` is the larger of its lexical relevance and its cosine, so the injection gate
 * lets a paraphrase found by its vector through. Whenever vectors cannot take part the result is
 * exactly `recallBlocks`, marked with a non-enumerable `degraded` reason (JSON, `Object.keys` and
 * deep equality see the lexical hits). It never throws because of the embedder.
 */
export async function recallBlocksHybrid(store: BlockStore, embedder: Embedder | null, query: string, options: HybridOptions = {}): Promise<HybridHits> {
  const lexical = () => recallBlocks(store, query, { topK: options.topK, recordAccess: options.recordAccess, scopes: options.scopes, earlier: options.earlier })
  if (embedder === null) return markDegraded(lexical(), 'no_embedder')
  const text = typeof query === 'string' ? query : ''
  if (text.trim() === '') return markDegraded(lexical(), 'no_embedder')
  if (!languageDeclared(text, embedder.languages)) return markDegraded(lexical(), 'language_gated')

  const candidates = options.candidates ?? DEFAULT_CANDIDATES
  // Decided once for both lists: a union that covers the store is read unscoped, as `recallBlocks` does.
  const scopes = options.scopes !== undefined && store.scopes.coversAll(options.scopes) ? undefined : options.scopes
  const lexHits = recallBlocks(store, query, { topK: candidates, scopes, earlier: options.earlier })
  if (isAbstention(lexHits)) return lexHits

  let queryVector: Float32Array
  try {
    const vectors = await embedder.embed([text], { signal: AbortSignal.timeout(options.budgetMs ?? DEFAULT_BUDGET_MS) })
    queryVector = vectors[0]!
    if (!(queryVector instanceof Float32Array) || queryVector.length !== embedder.dims) return markDegraded(lexical(), 'embed_error')
  } catch (error) {
    return markDegraded(lexical(), reasonOf(error))
  }
  if (store.isClosed) return markDegraded(lexical(), 'embed_error')
  const index = vectorIndexFor(store, embedder.model, embedder.dims)
  if (index.size === 0) return markDegraded(lexical(), 'no_vectors')

  const allowLang = (lang: string) => lang === 'und' || embedder.languages.includes(lang)
  const minCosine = options.minCosine ?? DEFAULT_MIN_COSINE
  const inScope = new Map<string, boolean>()
  const member = (id: string) => {
    let known = inScope.get(id)
    if (known === undefined) inScope.set(id, known = scopes === undefined || store.scopes.visible([id], scopes).size > 0)
    return known
  }
  const vecHits = index.search(queryVector, candidates, (lang, id) => allowLang(lang) && member(id)).filter((h) => h.score >= minCosine)
  const lexCosine = index.scoreIds(queryVector, lexHits.map((h) => h.id), allowLang)
  const hits = fuse(store, text, lexHits, vecHits, lexCosine, options).slice(0, clampTopK(options.topK))
  if (options.recordAccess) store.recordAccess(hits.map((h) => h.id))
  return hits
}

/** Attaches the non-enumerable `degraded` reason to a hit list. */
export function markDegraded(hits: HybridHits, reason: DegradedReason): HybridHits {
  Object.defineProperty(hits, 'degraded', { value: reason, enumerable: false, configurable: true })
  return hits
}

/** Maps an embedder failure to the reason recall reports. */
function reasonOf(error: unknown): DegradedReason {
  if (error instanceof EmbedError) {
    if (error.kind === 'timeout' || error.kind === 'aborted') return 'timeout'
    if (error.kind === 'circuit_open') return 'circuit_open'
  }
  return 'embed_error'
}

interface Candidate {
  id: string
  text: string
  exact: boolean
  pinned: number
  lexical: number
  lexRank: number
  vector: number
  vecRank: number
  relevance: number
  why: string
  /** The conversation neighbour that lifted the lexical hit (`Hit.beside`). */
  beside?: string
  /** The note's scene (`Hit.scene`). */
  scene?: string
}

function fuse(store: BlockStore, query: string, lexHits: Hit[], vecHits: VectorHit[], lexCosine: Map<string, number>, options: HybridOptions): Hit[] {
  const method = options.fusion ?? DEFAULT_FUSION
  const w = options.vectorWeight ?? DEFAULT_VECTOR_WEIGHT
  const byId = new Map<string, Candidate>()
  // A note found by its vector alone still gets its lexical relevance (usually 0; the cosine decides).
  let relevanceOf: ((text: string) => number) | undefined
  lexHits.forEach((h, rank) => {
    byId.set(h.id, {
      id: h.id, text: h.text, exact: h.exact, pinned: h.exact ? h.score : 0, lexical: h.exact ? 1 : h.score, lexRank: rank + 1,
      vector: Math.max(0, lexCosine.get(h.id) ?? 0), vecRank: 0, relevance: h.relevance, why: h.why, beside: h.beside, scene: h.scene,
    })
  })
  vecHits.forEach((v, rank) => {
    const known = byId.get(v.id)
    if (known) {
      known.vector = Math.max(0, v.score)
      known.vecRank = rank + 1
      return
    }
    const block = store.get(v.id)
    if (!block || current([[0, block]], store, options.scopes).length === 0) return
    byId.set(v.id, { id: v.id, text: block.text, exact: false, pinned: 0, lexical: 0, lexRank: 0, vector: Math.max(0, v.score), vecRank: rank + 1,
      relevance: (relevanceOf ??= queryRelevance(store, query))(block.text), why: 'vector only', scene: block.scene === '' ? undefined : block.scene })
  })
  const scored = [...byId.values()].map((c) => {
    let score: number
    if (c.exact) score = c.pinned + 0.001 * c.vector
    else if (method === 'rrf') score = ((c.lexRank ? (1 - w) / (RRF_K + c.lexRank) : 0) + (c.vecRank ? w / (RRF_K + c.vecRank) : 0)) * (RRF_K + 1)
    else if (method === 'ha') score = 0.7 * c.vector + 0.3 * c.lexical
    else score = w * c.vector + (1 - w) * c.lexical
    const why = c.vector > 0 ? `${c.why}; vector ${c.vector.toFixed(3)}` : c.why
    // With vectors, relevance is absolute on both sides: the lexical share or the cosine, whichever is larger.
    const hit: Hit = { id: c.id, text: c.text, score, exact: c.exact, relevance: Math.max(c.relevance, c.vector), why }
    if (c.vector > 0) hit.cosine = c.vector
    if (c.beside !== undefined) hit.beside = c.beside
    if (c.scene !== undefined) hit.scene = c.scene
    return hit
  })
  scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return scored
}
