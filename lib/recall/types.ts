/** One recalled block as callers see it. */
export interface Hit {
  id: string
  text: string
  /** ≥ 1 for a pinned exact-symbol hit (1 + a small lexical tiebreak), in [0, 1] otherwise. */
  score: number
  /** True when the block contains one of the query's exact symbols (port, IP, path, version …). */
  exact: boolean
  /**
   * Absolute relevance in [0, 1]: the share of the query's specific content (its rare words, CJK
   * bigrams and exact symbols, weighted by IDF; parts no note holds weigh most) this note holds.
   * Unlike `score` it is not relative to the other candidates, so it can say "nothing here is
   * relevant"; the injection gate reads it (`gate.ts`).
   */
  relevance: number
  /**
   * The note's cosine with the query, set by the hybrid recall when vectors took part. A cosine is
   * absolute per note, so the gate lets one clear match by meaning open the turn (`gate.ts`).
   */
  cosine?: number
  /**
   * The id of the conversation neighbour that lifted this note toward its score (`neighbours.ts`),
   * when one did. Such a note is ranked for where it was saved, not for its words, so its own
   * relevance says little; the gate lets it pass the falloff of a turn that is open (`gate.ts`).
   */
  beside?: string
  /**
   * The scene the note was saved in, when it has one. The gate asks that the notes of one scene
   * carry a share of the turn's evidence (`gate.ts`, `SCENE_EVIDENCE`).
   */
  scene?: string
  /** A short, human-readable account of why this block was recalled. */
  why: string
}

/** Options shared by the sync and hybrid recall. */
export interface RecallOptions {
  /** How many hits to return (default 5). */
  topK?: number
  /** Count the returned hits as accesses (default false; the plugin and service turn it on). */
  recordAccess?: boolean
  /**
   * Scope keys whose notes recall may see (`global`, `workspace:<dir>`, `preset:<id>`); a note
   * outside them is never a candidate, never counted by abstention and never shown. Absent: every
   * note (the CLI's `--all`, benchmarks).
   */
  scopes?: readonly string[]
  /**
   * The earlier messages of the live conversation, oldest first (the session's user and assistant
   * messages before the one being answered): read as context turns (`conversation.ts`).
   */
  earlier?: readonly string[]
}

/** Why the hybrid recall fell back to the lexical result. */
export type DegradedReason =
  | 'no_embedder'     // no embedder configured (the default)
  | 'language_gated'  // the query's language is not one the embedder declares
  | 'timeout'         // the query vector did not arrive within the recall budget
  | 'circuit_open'    // the embedder failed repeatedly; it is not called for a while
  | 'embed_error'     // the embedder answered with an error or an unusable vector
  | 'no_vectors'      // no block has a vector for this model yet (backfill pending)

/** Every degraded reason, in a stable order (stats and the context line list them this way). */
export const DEGRADED_REASONS: readonly DegradedReason[] = ['no_embedder', 'language_gated', 'timeout', 'circuit_open', 'embed_error', 'no_vectors']

/** Why recall abstained: the query's specific strings, none of which any block contains. */
export interface Abstention {
  /** The specific exact strings the query names (all absent from the store). */
  missing: string[]
  /** Content words of the query that the store does mention, at most `MENTIONED_WORDS` (for the "only mentions … in general" notice). */
  mentioned: string[]
  /**
   * Stored strings one typo away from a missing one (two neighbouring characters swapped, or one
   * digit changed): `581b` when `518b` was asked. Shown as a question for the user, never as the answer.
   */
  near: string[]
}

/** A hit list that may carry a non-enumerable `abstained` reason (then it is empty). */
export type RecallHits = Hit[] & { readonly abstained?: Abstention }

/** The hybrid result: the hits, plus a non-enumerable `degraded` reason when vectors took no part (and `abstained`, see `abstain.ts`). */
export type HybridHits = RecallHits & { readonly degraded?: DegradedReason }
