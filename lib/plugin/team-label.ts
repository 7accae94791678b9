import type { Hit } from '../recall/types.ts'
import { isTeam } from '../team/merge.ts'
import { localMinute } from './origin.ts'

/** Longest member name shown beside a team note. */
const MEMBER_CHARS = 64

/**
 * The label of a team note in the recall message: `team note · shared by alice · 2026-12-01
 * 14:03`, so the model tells a note the team shared from this agent's own. The member name comes
 * from another machine (any row of the team's table), so it is reduced to one visible line:
 * controls, line and paragraph separators become spaces and it is cut to 64 characters; it can
 * never start a line of its own in the message.
 */
export function teamLabel(hit: Hit): string | undefined {
  if (!isTeam(hit)) return undefined
  const member = hit.team.member.replace(/[\p{C}\p{Zl}\p{Zp}]+/gu, ' ').trim().slice(0, MEMBER_CHARS) || 'unknown'
  return `team note · shared by ${member} · ${localMinute(hit.team.savedAt)}`
}
