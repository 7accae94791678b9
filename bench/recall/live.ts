/**
 * An eval set asked as a live dsh conversation: what the per-turn injection sees when the chat is
 * not pasted into one message but held in the session's batch (`conversationFromBatch`).
 *
 * - A query that is a pasted transcript (two or more speaker lines, `queryTurns`) becomes its
 *   last line, the message being answered, with the earlier lines of the same speaker as the
 *   earlier messages (labels dropped): the pre-step remembers the human messages of a session,
 *   not the assistant's replies (`lib/plugin/conversation-memory.ts`). Before, it read only that
 *   last message.
 * - A single question gets the `HISTORY` questions asked before it in the same scope as its
 *   earlier messages: a session that moved on from other topics, where the history must cost the
 *   question little and open the gate on no store it would not open on alone.
 */
import { queryTurns } from '../../lib/recall/symbols.ts'
import type { EvalSet } from './eval-set.ts'

/** Earlier questions a single question is asked after. */
export const HISTORY = 2

/**
 * The lines of a pasted transcript's asker (the speaker of its last line), labels dropped, in
 * order: the human messages of the same chat held live. Undefined for a query that is not a
 * transcript.
 */
export function askerLines(query: string): string[] | undefined {
  const turns = queryTurns(query)
  if (turns.length < 2) return undefined
  const said = turns.filter((t) => t.text.trim() !== '')
  const asker = said.at(-1)!.speaker
  return said.filter((t) => t.speaker === asker).map((t) => t.text.trim())
}

/** `set` with each query as the last message of a live conversation (see the module comment). */
export function asLive(set: EvalSet): EvalSet {
  const asked = new Map<string, string[]>()
  const queries = set.queries.map((q) => {
    const lines = askerLines(q.query)
    if (lines !== undefined) return { ...q, query: lines.at(-1)!, earlier: lines.slice(0, -1) }
    const before = asked.get(q.scope) ?? []
    asked.set(q.scope, [...before, q.query])
    return { ...q, earlier: before.slice(-HISTORY) }
  })
  return { ...set, queries }
}
