import { abstentionOf, isAbstention } from '../recall/abstain.ts'
import { markDegraded } from '../recall/hybrid.ts'
import type { Hit, HybridHits } from '../recall/types.ts'
import type { TeamHit, TeamResult } from './search.ts'

/**
 * One ranked list from the local hits and the team layer's. Both were ranked by the same code
 * (`search.ts`), so their scores compare: pins first, then by score; a note held by both layers
 * (the same content id) appears once, as the team note it also is. A local note that a current
 * team note supersedes is dropped (supersede works across layers). Abstention holds only when
 * neither layer has the decisive symbol: a local abstention with a team note holding it gives the
 * team's hits instead. The local list's `degraded` mark (the embedder's) is kept.
 */
export function mergeTeamHits(local: HybridHits, team: TeamResult, topK: number): HybridHits {
  const abstention = abstentionOf(local)
  if (abstention !== undefined) {
    if (abstention.missing.every((s) => !team.heldSymbols.has(s))) return local
    return keep(local, team.hits.slice(0, topK))
  }
  const byId = new Map<string, Hit | TeamHit>()
  for (const hit of local) if (!team.supersededLocal.has(hit.id)) byId.set(hit.id, hit)
  for (const hit of team.hits) {
    const mine = byId.get(hit.id)
    byId.set(hit.id, mine === undefined || hit.score > mine.score ? hit : { ...mine, team: hit.team })
  }
  const merged = [...byId.values()].sort((a, b) => b.score - a.score || (isTeam(a) === isTeam(b) ? 0 : isTeam(a) ? 1 : -1))
  return keep(local, merged.slice(0, topK))
}

/** True for a hit that came from (or is also in) the team layer. */
export function isTeam(hit: Hit): hit is TeamHit {
  return (hit as Partial<TeamHit>).team !== undefined
}

function keep(from: HybridHits, hits: Hit[]): HybridHits {
  if (isAbstention(hits)) return hits
  return from.degraded === undefined ? hits : markDegraded(hits, from.degraded)
}
