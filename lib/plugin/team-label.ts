import type { Hit } from '../recall/types.ts'
import { redactSecrets } from '../secrets.ts'
import { isTeam } from '../team/merge.ts'
import { visibleForModel } from '../text/invisible.ts'
import { localMinute } from './origin.ts'

/** Longest member name shown beside a team note. */
const MEMBER_CHARS = 64

/**
 * The label of a team note in the recall message: `team note · shared by alice · 2026-12-01
 * 14:03`, so the model tells a note the team shared from this agent's own. The member name comes
 * from another machine (any row of the team's table), so it is reduced to one visible line:
 * hidden characters removed and bidi controls shown (`visibleForModel`), other controls, line and
 * paragraph separators made spaces, credentials are masked as in a note's
 * text (before the cut, so a key is never cut into a fragment the masking misses), and it is cut
 * to 64 characters; it can never start a line of its own in the message.
 */
export function teamLabel(hit: Hit): string | undefined {
  if (!isTeam(hit)) return undefined
  // Hidden characters go first (as in a note's text), so a key split by a zero-width space is whole when masked.
  const masked = redactSecrets(visibleForModel(hit.team.member)).text
  const member = masked.replace(/[\p{C}\p{Zl}\p{Zp}]+/gu, ' ').trim().slice(0, MEMBER_CHARS) || 'unknown'
  return `team note · shared by ${member} · ${localMinute(hit.team.savedAt)}`
}
