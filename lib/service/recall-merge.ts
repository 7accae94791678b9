/**
 * The steps of one `ctx.stablemem.recall` after its checks: the local recall (words, and vectors
 * when an embedder is configured) with the team layer's answer asked for at the same time and
 * merged within its budget, then the notes attached to the turn's scenes, then — for the
 * per-turn injection — the relevance gate. Every step keeps the list's `degraded` mark, so the
 * service counts why vectors took no part whatever the later steps did.
 */
import type { Config } from '../config.ts'
import type { Embedder } from '../embed/types.ts'
import { withSceneNotes } from '../kernel/scenes/union.ts'
import { isAbstention } from '../recall/abstain.ts'
import { gateHits } from '../recall/gate.ts'
import { markDegraded, recallBlocksHybrid } from '../recall/hybrid.ts'
import { clampTopK, MAX_TOP_K } from '../recall/recall.ts'
import type { Hit, HybridHits } from '../recall/types.ts'
import type { BlockStore } from '../store/store.ts'
import type { TeamLayer } from '../team/layer.ts'
import { mergeTeamHits } from '../team/merge.ts'

/** What the steps read: the store, the embedder and team layer if any, the recall settings. */
export interface RecallParts {
  store: BlockStore
  embedder: Embedder | null
  team: TeamLayer | undefined
  config: Pick<Config, 'embed' | 'minRelevance' | 'relevanceFalloff' | 'minScore'>
}

/** One call's resolved options: how many, which scopes and scenes, whether gated, whether the team is asked. */
export interface RecallSteps {
  topK: number | undefined
  scopes: readonly string[] | undefined
  sceneKeys: readonly string[]
  inject: boolean
  team: boolean
  /** The live conversation's earlier messages, oldest first (`lib/recall/conversation.ts`). */
  earlier?: readonly string[]
}

/** The gated hits, keeping the `degraded` mark of the list they were taken from. */
function keepMarks(from: HybridHits, hits: Hit[]): HybridHits {
  return from.degraded === undefined ? hits : markDegraded(hits, from.degraded)
}

/** Runs the steps; a store error is thrown to the service, which sorts it. Nothing is counted as accessed here. */
export async function recallMerged(parts: RecallParts, query: string, steps: RecallSteps): Promise<HybridHits> {
  const { store, config } = parts
  const { topK, scopes, sceneKeys, inject } = steps
  let localDone: (ids: readonly string[]) => void = () => {}
  const localIds = new Promise<readonly string[]>((resolve) => { localDone = resolve })
  // Sent first, answered within its budget on the team's thread while the local recall runs (`lib/team/layer.ts`).
  const team = steps.team ? parts.team?.recall(query, clampTopK(topK), localIds) : undefined
  const local = recallBlocksHybrid(store, parts.embedder, query, {
    topK, recordAccess: false, scopes, earlier: steps.earlier,
    budgetMs: config.embed.recallBudgetMs, minCosine: config.embed.minCosine,
  })
  local.then((found) => localDone(found.map((h) => h.id)), () => localDone([]))
  let hits = await local
  const answer = await team
  if (answer !== undefined && 'result' in answer) hits = mergeTeamHits(hits, answer.result, clampTopK(topK))
  const scenes = sceneKeys.length > 0 && !isAbstention(hits)
    ? withSceneNotes(store, hits, sceneKeys, scopes, topK ?? 5)
    : undefined
  if (scenes !== undefined) hits = keepMarks(hits, scenes.hits)
  if (inject && !isAbstention(hits)) {
    const { minRelevance, relevanceFalloff: falloff, minScore } = config
    hits = keepMarks(hits, gateHits(hits, { minRelevance, falloff, minScore, topK: MAX_TOP_K, attached: scenes?.attached }))
  }
  return hits
}
