import type { Hit } from './types.ts'

/**
 * The injection gate: which recalled notes are worth putting in front of the model. Recall ranks
 * every store the same way, so the best of an unrelated lot is always ranked first; the gate reads
 * each hit's absolute `relevance` (`relevance.ts`) and lets through only notes that hold enough of
 * what the question is specifically about. When nothing passes, nothing is injected. Used by the
 * per-turn injection, by `recall(q, { purpose: 'inject' })` and by `stablemem recall --inject`,
 * so all three show the same notes. A deliberate search (the ranked list) is not gated.
 */

/** The gate's settings (config `minRelevance`, `relevanceFalloff`, `minScore`, `topK`). */
export interface GateOptions {
  /** A hit whose relevance is below this is not injected (0 turns the gate off). */
  minRelevance: number
  /**
   * The adaptive count: after the first hit, a hit whose relevance is below this share of the
   * best passing hit's is not injected either — relevance fell off sharply (0 keeps up to topK).
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
 * Relevance threshold chosen on the dev sets (docs/benchmarks.md, "Precision"): the value that
 * maximises, on one half of the queries, the mean over the three dev pairs of (share of negative
 * turns left without notes) × (share of R@5 kept); checked on the other half.
 */
export const DEFAULT_MIN_RELEVANCE = 0.35
/**
 * Falloff share chosen on the dev sets (docs/benchmarks.md, "Precision"): the largest share that
 * costs at most .01 of R@5 on the choosing half.
 */
export const DEFAULT_FALLOFF = 0.5

/**
 * The hits to inject, in their ranked order: exact-symbol pins and attached notes always; others
 * when their relevance reaches `minRelevance`, their score `minScore`, and their relevance the
 * `falloff` share of the best passing hit's; at most `topK`. An empty result means inject nothing.
 */
export function gateHits<T extends Hit>(hits: readonly T[], options: GateOptions): T[] {
  const always = (h: Hit) => h.exact || (options.attached?.has(h.id) ?? false)
  const candidates = hits.filter((h) => always(h) || (h.relevance >= options.minRelevance && h.score >= options.minScore))
  let best = 0
  // The falloff's reference is the best non-pinned hit, attached notes included: an attached note
  // that is also the most relevant hit must not lower the bar for the others.
  for (const h of candidates) if (!h.exact) best = Math.max(best, h.relevance)
  const floor = best * options.falloff
  return candidates.filter((h) => always(h) || h.relevance >= floor).slice(0, Math.max(0, options.topK))
}
