/**
 * The types of the `ctx.stablemem` service's API: what `stats()` returns, what `commit` and
 * `recall` take. Apart from `lib/service.ts` so callers and the kernel's narrower view of the
 * service can name them without importing the service class.
 */
import type { AccessStats } from '../store/access.ts'
import type { VectorizerStats } from '../embed/vectorizer.ts'
import type { SceneStats } from '../kernel/scenes/api.ts'
import type { StageStats } from '../kernel/stages/types.ts'
import type { DegradedReason } from '../recall/types.ts'
import type { RecallView, ScopeContext } from '../scope-policy.ts'
import type { LayerStats } from '../store/layers.ts'
import type { ScopeName } from '../store/scope-key.ts'
import type { ScopeCount } from '../store/scopes.ts'
import type { CommitInput, StoreStats } from '../store/types.ts'
import type { TeamStats } from '../team/layer.ts'

/** `stats()` of the service: the store's counts plus the plugin's own health counters. */
export interface ServiceStats extends Partial<StoreStats>, Partial<AccessStats> {
  /** False when the store could not be opened; `error` says why. The agent runs on without memory. */
  available: boolean
  error?: string
  /** Calls that failed for a reason that passes (full disk, I/O error, lock); memory stayed on and retried. */
  transientFailures: number
  /** Set while the last store call failed that way; cleared by the next call that writes. */
  transientError?: string
  /** Turns whose recall failed (logged; the turn went on without notes). */
  recallFailures: number
  /** Recall messages injected into turns. */
  injections: number
  /** Recalls in which vectors took part. */
  hybridRecalls: number
  /** Recalls that fell back to the lexical result, by reason. */
  recallDegraded: Record<DegradedReason, number>
  /** The embedder and the background vector writer; absent while `embed.baseUrl` is empty. */
  vectors?: VectorStats
  /** Blocks per layer (docs/layers.md); absent while the store is unavailable. */
  layers?: LayerStats
  /** Compaction capture: regions seen, blocks written, captures that failed (logged; the turn went on). */
  capture: { regions: number, blocks: number, failures: number }
  /** Finished turns by how they ended (`completed`, `blocked`, …), counted at after_output. */
  turns: Record<string, number>
  /** The stage API's handlers, calls, handler errors and loop exits. */
  stages: StageStats
  /** Notes per scope key (`global`, `workspace:<dir>`, `preset:<id>`), most first; a note in two scopes counts in both. */
  byScope?: ScopeCount[]
  /** The shared team layer (docs/team.md); absent while `team.url` is empty. */
  team?: TeamStats
  /** Scenes, refs, resolved turns and the scene card (docs/scenes.md); absent while the store is unavailable. */
  scenes?: SceneStats
}

/**
 * What `ctx.stablemem.commit` takes: the note, and the scope to save it in. `scope` names the kind
 * (default: config `scopes.defaultScope`); `workspace` (an absolute, existing directory) and
 * `preset` say which workspace or preset. Saving a note that exists in another scope adds the scope.
 */
export interface ServiceCommitInput extends Omit<CommitInput, 'scope'>, ScopeContext {
  scope?: ScopeName
  /** Also write the note to the team layer (config `team`); nothing is shared unless this says so. */
  shared?: boolean
}

/** Kept for callers written against the scopes release: the same options as `RecallCallOptions`. */
export type ServiceRecallOptions = RecallCallOptions

/** The vector side of `stats()`. */
export interface VectorStats extends Partial<VectorizerStats> {
  model: string
  dims: number
  /** Vectors stored for this model and dims. */
  stored?: number
  /** `closed`, `open` or `half_open`. */
  circuit: string
  /** Why the embedder could not be created from the configuration, if it could not. */
  error?: string
}

/** Options of `ctx.stablemem.recall`. */
export interface RecallCallOptions {
  /** How many notes (default 5; with `purpose: 'inject'`, the config's `topK`). */
  topK?: number
  /** Count the returned notes as accesses (default true). */
  recordAccess?: boolean
  /**
   * `search` (default): the ranked list, ungated, as a deliberate search wants it. `inject`:
   * exactly the notes the per-turn injection would show (the relevance gate applied).
   */
  purpose?: 'search' | 'inject'
  /** Which notes to search (default `global`: a caller without a session sees no workspace's notes). */
  scope?: RecallView
  /** Merge the team layer's notes when one is configured (default true). */
  team?: boolean
  /**
   * Scene keys whose attached notes join the result (`scenes.readKeys` of a turn): placed after
   * exact pins, always through the gate, within `topK` and the scope (docs/scenes.md).
   */
  scenes?: readonly string[]
  /**
   * The earlier messages of the live conversation, oldest first: read with the query when it does
   * not clearly match the store alone (`lib/recall/conversation.ts`).
   */
  earlier?: readonly string[]
}
