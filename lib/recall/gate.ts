import type { Hit } from './types.ts'

/**
 * The injection gate: which recalled notes are worth putting in front of the model. Recall ranks
 * every store the same way, so the best of an unrelated lot is always ranked first; the gate reads
 * each hit's absolute `relevance` (`relevance.ts`) and decides for the turn first, on the turn's
 * **evidence**: the sum of the relevances of its best `EVIDENCE_NOTES` notes. When it is below
 * `minRelevance`, the store holds nothing this message is about and nothing is injected. A chat
 * that evokes a memory usually evokes several, each sharing a little of it; an unrelated store
 * matches one note by accident and little else, so the sum separates them where the best note
 * alone does not (docs/benchmarks.md, "Precision"). The notes of one scene must carry
 * `SCENE_EVIDENCE` of that bar among them: what a store holds about a message sits together (the
 * paragraphs of one article, the turns of one talk), while a short everyday line matches single
 * words scattered over unrelated scenes (docs/recall.md, "One scene carries the evidence").
 * With vectors, one note whose cosine reaches
 * `OPEN_COSINE` opens the turn too. When the turn opens, the notes ranked with it are injected too unless their relevance falls
 * below `falloff` × the best one's (the adaptive count). A note that ranks among the best for a
 * message that clearly matches the store is usually relevant even when it shares little of the
 * message's wording (a memory evoked by a chat, an answer in other words): gating each note on
 * its own threshold lost up to .14 of R@5 on the dev sets (docs/benchmarks.md, "Precision").
 * A note a conversation neighbour lifted (`Hit.beside`) passes the falloff of an open turn: it is
 * ranked for where it was saved (the reply beside a matching question), so its own relevance is
 * near 0 by design; its relevance still adds to the evidence only as its own (docs/recall.md,
 * "Lifted notes and the falloff").
 * Used by the per-turn injection, by `recall(q, { purpose: 'inject' })` and by
 * `stablemem recall --inject`, so all three show the same notes. A deliberate search (the ranked
 * list) is not gated.
 */

/** The gate's settings (config `minRelevance`, `relevanceFalloff`, `minScore`, `topK`). */
export interface GateOptions {
  /**
   * Nothing is injected unless the relevances of the best `EVIDENCE_NOTES` non-pinned hits sum to
   * this (0 turns the gate off).
   */
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

/** How many of the best non-pinned hits, in ranked order, the turn's evidence sums (whatever `topK` is). */
export const EVIDENCE_NOTES = 5

/**
 * Evidence the turn must reach, chosen on the dev sets (docs/benchmarks.md, "Precision"): on
 * half of the queries, of the values that lose no more gold notes than the best-note gate did,
 * the one with the fewest false injections; checked on the other half.
 */
export const DEFAULT_MIN_RELEVANCE = 0.5
/**
 * Share of `minRelevance` the notes of one scene among the evidence notes must reach together for
 * the turn to open (notes without a scene count together). .6 costs no row of either half more
 * than .004 of gated R@5 or R@10; .7, which halves half a's noise further, costs half b .011 of
 * CMRC2018's live R@10 (docs/recall.md, "One scene carries the evidence").
 */
export const SCENE_EVIDENCE = 0.6
/**
 * A note whose cosine with the message reaches this opens the turn by itself (hybrid recall only):
 * a paraphrase shares no words, so its lexical evidence is near zero, but its cosine is absolute.
 * Twice the vector candidates' floor (`DEFAULT_MIN_COSINE` 0.2); with the USE-lite model, seven
 * paraphrased questions had a best cosine of .41–.57 and fifteen unrelated ones .13–.43, one of
 * them above (docs/embeddings.md, "The gate with vectors").
 */
export const OPEN_COSINE = 0.4
/**
 * Falloff share chosen on the dev sets (docs/benchmarks.md, "Precision"): the largest share that
 * costs no set more than .005 of R@5 on the choosing half.
 */
export const DEFAULT_FALLOFF = 0.1

/**
 * The hits to inject, in their ranked order: exact-symbol pins and attached notes always; the
 * others only when the turn's evidence (the relevances of the best `EVIDENCE_NOTES` of them,
 * summed) reaches `minRelevance` and the notes of one scene among them carry `SCENE_EVIDENCE` of
 * it (`sceneEvidenceOf`), and then those whose score reaches
 * `minScore` and whose relevance reaches the `falloff` share of the best or that a conversation
 * neighbour lifted (`Hit.beside`); at most `topK`. An empty
 * result means inject nothing.
 */
export function gateHits<T extends Hit>(hits: readonly T[], options: GateOptions): T[] {
  const always = (h: Hit) => h.exact || (options.attached?.has(h.id) ?? false)
  let best = 0
  let cosine = 0
  // The reference is the non-pinned hits, attached notes included: an attached note that is also
  // the most relevant hit must not lower the bar for the others.
  for (const h of hits) {
    if (h.exact || h.score < options.minScore) continue
    best = Math.max(best, h.relevance)
    cosine = Math.max(cosine, h.cosine ?? 0)
  }
  const evidence = evidenceOf(hits, options.minScore) >= options.minRelevance && sceneEvidenceOf(hits, options.minScore) >= SCENE_EVIDENCE * options.minRelevance
  const open = evidence || cosine >= OPEN_COSINE
  const floor = best * options.falloff
  return hits.filter((h) => always(h) || (open && h.score >= options.minScore && (h.relevance >= floor || h.beside !== undefined))).slice(0, Math.max(0, options.topK))
}

/**
 * A turn's evidence: the relevances of its best `EVIDENCE_NOTES` non-pinned hits scoring at least
 * `minScore`, in ranked order, summed. The gate opens on it; recall reads it to tell whether a
 * message matches the store by itself (`conversation.ts`).
 */
export function evidenceOf(hits: readonly Hit[], minScore = 0): number {
  let evidence = 0
  let counted = 0
  for (const h of hits) {
    if (h.exact || h.score < minScore) continue
    if (counted++ < EVIDENCE_NOTES) evidence += h.relevance
  }
  return evidence
}

/**
 * The part of a turn's evidence one scene carries: among the notes `evidenceOf` sums, the
 * relevances of those saved in the same scene, summed, for the scene where that sum is largest
 * (notes without a scene count as one scene: the store says nothing of where they belong).
 */
export function sceneEvidenceOf(hits: readonly Hit[], minScore = 0): number {
  const byScene = new Map<string, number>()
  let counted = 0
  for (const h of hits) {
    if (h.exact || h.score < minScore) continue
    if (counted++ >= EVIDENCE_NOTES) break
    const scene = h.scene ?? ''
    byScene.set(scene, (byScene.get(scene) ?? 0) + h.relevance)
  }
  return Math.max(0, ...byScene.values())
}
