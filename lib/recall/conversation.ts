import { isAbstention } from './abstain.ts'
import { matchPhrase } from './fts-query.ts'
import { namesIn } from './relevance.ts'
import type { RecallSource } from './source.ts'
import { DEFAULT_MIN_RELEVANCE, evidenceOf } from './gate.ts'
import { boundedTurns, LAST_TURN_WEIGHT, MAX_QUERY_CHARS, queryTurns, type QueryTurn } from './symbols.ts'
import type { Hit } from './types.ts'

/**
 * A live conversation as one query. In a dsh session the message being answered is often a
 * follow-up ("and the other one?", "上次那个后来怎么样了") whose subject is in the messages before
 * it; a chat pasted into one message carries the same structure in its speaker lines, and recall
 * already reads it so (`queryTurns`: every turn counts, the last one twice). The earlier messages
 * of the session's batch are read the same way, so a live chat and the same chat pasted find the
 * same notes:
 *
 * - the message being answered weighs `LAST_TURN_WEIGHT` (each of its own lines as `queryTurns`
 *   weighs them when it is itself a pasted transcript), each earlier message 1;
 * - an earlier message is context: its numbers, versions and paths are searched and weighed like
 *   words, but they pin no note and never make recall abstain (what is asked now decides that);
 * - only the last `EARLIER_MESSAGES` earlier messages are read, each from its last
 *   `EARLIER_MESSAGE_CHARS` characters (a long answer or a pasted log ends where the talk goes
 *   on), and all of them within `MAX_QUERY_CHARS` together with the message (older ones dropped
 *   first), so the per-turn cost stays that of one long message.
 *
 * Chit-chat needs no rule of its own: an earlier "ok, thanks" has no content word and adds
 * nothing, and a long query keeps only its rarest terms for the search (`specificTerms`).
 *
 * A session moves on: a question that names what it asks about is hurt by the topics before it
 * (LoCoMo questions after two others: R@5 .636 → .594; CMRC2018 .957 → .845). So the message
 * is recalled alone first, and the conversation is read only when alone it would not open the
 * injection gate (`answeredAlone`); docs/recall.md, "The live conversation". A remark is read so
 * too: the notes of the topic before it come back to recall, but the pre-step does not quote
 * again a note the conversation already shows (`lib/plugin/shown-notes.ts`).
 */

/** Most earlier messages of a conversation read with the one being answered. */
export const EARLIER_MESSAGES = 8

/** Characters read of one earlier message (its end). */
export const EARLIER_MESSAGE_CHARS = 1_000

/**
 * The weighted turns of a message with the earlier messages of its conversation (oldest first).
 * Without earlier messages this is exactly the message's own turns (`queryTurns`).
 */
export function conversationTurns(message: string, earlier: readonly string[] = []): QueryTurn[] {
  const own = boundedTurns(message)
  if (earlier.length === 0) return own
  // A one-turn message is the conversation's last turn; a pasted transcript already weighs its own last line.
  const latest = own.length === 1 ? [{ text: own[0]!.text, weight: LAST_TURN_WEIGHT }] : own
  let room = MAX_QUERY_CHARS - latest.reduce((n, t) => n + t.text.length, 0)
  const context: QueryTurn[] = []
  for (let i = earlier.length - 1; i >= Math.max(0, earlier.length - EARLIER_MESSAGES) && room > 0; i--) {
    const text = earlier[i]!.slice(-Math.min(EARLIER_MESSAGE_CHARS, room)).trim()
    if (text === '') continue
    // A chat pasted earlier loses its speaker labels as a pasted query does.
    context.unshift(...queryTurns(text).map((turn) => ({ text: turn.text, weight: 1, context: true })))
    room -= text.length
  }
  return [...context, ...latest]
}

/**
 * Evidence (`evidenceOf`: the relevances of the best five non-pinned hits, summed) at which a
 * message matches the store by itself: what opens the injection gate (`DEFAULT_MIN_RELEVANCE`),
 * so a message that would be injected alone is answered alone. Twice that read the conversation
 * more often: live MADial R@5 +.035 on half a, but CMRC2018 after unrelated questions −.009
 * (docs/recall.md, "The live conversation").
 */
export const ALONE_EVIDENCE = DEFAULT_MIN_RELEVANCE

/**
 * Whether a message's own recall (`hits`) stands without the conversation before it: it
 * abstained (it names a string the store lacks: the
 * conversation cannot change that), an exact symbol of it pinned a note, its evidence reaches
 * `ALONE_EVIDENCE`, or it names only people or things the store has never heard of (`namesIn`;
 * the relevance rule of the same name): a question about someone else is not made relevant by
 * the words of the questions before it (LoCoMo asked of the next conversation's store, live:
 * false injections 9.0 → 4.2 % on half a, the same as without the conversation).
 * A remark is not answered alone for being a remark: its chat is often about the note ("哈哈，对啊！
 * 上次我藏在一个树后面…"; MADial live R@5 +.047 / +.044 on halves a / b), and the topic before it
 * comes back only as notes the pre-step has already shown (docs/recall.md, "The live conversation").
 */
export function answeredAlone(hits: readonly Hit[], message: string, store: Pick<RecallSource, 'matchCount'>): boolean {
  if (isAbstention(hits) || hits.some((h) => h.exact) || evidenceOf(hits) >= ALONE_EVIDENCE) return true
  const names = namesIn(message)
  return names.length > 0 && names.every((name) => store.matchCount(matchPhrase(name)) === 0)
}
