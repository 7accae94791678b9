import type { Hit } from './types.ts'

/**
 * The injection gate: which recalled notes are worth putting in front of the model. Recall ranks
 * every store the same way, so the best of an unrelated lot is always ranked first; the gate reads
 * each hit's absolute `relevance` (`relevance.ts`) and decides for the turn first: when no recalled
 * note reaches `minRelevance`, the store holds nothing this message is about and nothing is
 * injected. When one does, the notes ranked with it are injected too unless their relevance falls
 * below `falloff` × the best one's (the adaptive count). A note that ranks among the best for a
 * message that clearly matches the store is usually relevant even when it shares little of the
 * message's wording (a memory evoked by a chat, an answer in other words): gating each note on
 * its own threshold lost up to .14 of R@5 on the dev sets (docs/benchmarks.md, "Precision").
 * Used by the per-turn injection, by `recall(q, { purpose: 'inject' })` and by
 * `stablemem recall --inject`, so all three show the same notes. A deliberate search (the ranked
 * list) is not gated.
 */

/** The gate's settings (config `minRelevance`, `relevanceFalloff`, `minScore`, `topK`). */
export interface GateOptions {
  /** Nothing is injected unless some non-pinned hit's relevance reaches this (0 turns the gate off). */
  minRelevance: number
  /**
   * The adaptive count: a hit whose relevance is below this share of the best hit's is not
   * injected — relevance fell off sharply (0 keeps up to topK).
   */
  falloff: number
  /** Non-pinned hits scoring below this are not injected (the older, relative filter). */
  minScore: number
  /** Most notes injected. */
  topK: number
  /**
   * Ids of notes that always pass, like exact-symbol pins. The seam for scene-attached notes:
   * once scenes land, the notes attached to the active scene are passed here.
   */
  attached?: ReadonlySet<string>
}

/**
 * Relevance the best note must reach, chosen on the dev sets (docs/benchmarks.md, "Precision"):
 * on half of the queries, of the values that cost no set more than .005 of R@5, the one with the
 * fewest false injections; checked on the other half.
 */
export const DEFAULT_MIN_RELEVANCE = 0.2
/**
 * Falloff share chosen on the dev sets (docs/benchmarks.md, "Precision"): the largest share that
 * costs no set more than .005 of R@5 on the choosing half.
 */
export const DEFAULT_FALLOFF = 0.1

/**
 * The hits to inject, in their ranked order: exact-symbol pins and attached notes always; the
 * others only when the best of them reaches `minRelevance`, and then those whose score reaches
 * `minScore` and whose relevance reaches the `falloff` share of the best; at most `topK`. An empty
 * result means inject nothing.
 */
export function gateHits<T extends Hit>(hits: readonly T[], options: GateOptions): T[] {
  const always = (h: Hit) => h.exact || (options.attached?.has(h.id) ?? false)
  let best = 0
  // The reference is the best non-pinned hit, attached notes included: an attached note that is
  // also the most relevant hit must not lower the bar for the others.
  for (const h of hits) if (!h.exact && h.score >= options.minScore) best = Math.max(best, h.relevance)
  const open = best >= options.minRelevance
  const floor = best * options.falloff
  return hits.filter((h) => always(h) || (open && h.score >= options.minScore && h.relevance >= floor)).slice(0, Math.max(0, options.topK))
}
