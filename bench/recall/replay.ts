/**
 * A pasted chat replayed as a live dsh conversation, turn by turn: the asker's lines are sent in
 * order (`askerLines`), each with the lines before it as its earlier messages (the last
 * `EARLIER_MESSAGES`, as `lib/plugin/conversation-memory.ts` keeps them), and each turn's
 * injection is what the pre-step would add: the gated hits (`gateHits`), less the notes an earlier
 * turn of the chat already showed (`lib/plugin/shown-notes.ts`; the chat is short, so no
 * compaction takes a message away), rendered by the plugin's `renderRecall`, or the abstention
 * notice of a question. The same replay without the repeat memory is measured beside it.
 *
 * - Own store: the share of each chat's gold notes shown on some turn of it (no turn shows more
 *   than `topK`; a note shown twice counts once), and the characters the chat's recall messages
 *   hold: injected once, and re-sent, each message counted once for its own request and once for
 *   every later turn's (one request a turn: a turn with tool steps re-sends them more often).
 * - Negatives (another set's store): a false injection is a turn that adds a recall message; the
 *   rate is over turns (the bound, like the live row's) and over chats (any turn of it);
 *   characters a noise turn are the mean over every turn, those that add nothing included. An
 *   abstention notice counts in characters, not as an injection, as in the live rows.
 */
import { abstentionOf } from '../../lib/recall/abstain.ts'
import { EARLIER_MESSAGES } from '../../lib/recall/conversation.ts'
import { gateHits, type GateOptions } from '../../lib/recall/gate.ts'
import type { Hit } from '../../lib/recall/types.ts'
import { renderAbstention, renderRecall } from '../../lib/plugin/render.ts'
import { isQuestion } from '../../lib/text/question.ts'
import type { BlockStore } from '../../lib/store/store.ts'
import { buildStore, partition } from './build-store.ts'
import type { EvalBlock, EvalQuery, EvalSet } from './eval-set.ts'
import { askerLines } from './live.ts'
import { round } from './metrics.ts'
import type { RecallFn } from './recall-fn.ts'

/** Characters of one replayed chat, with the repeat memory and without it. */
interface Chars {
  injected: number
  resent: number
}

/** One chat replayed against one store. */
interface ChatReplay {
  turns: number
  /** Turns that added a recall message (with the repeat memory; without it the same or more). */
  injectedTurns: number
  injectedTurnsWithout: number
  /** Ids of every note shown on some turn. */
  shown: Set<string>
  with: Chars
  without: Chars
}

/** Replays one chat's asker lines against `store`. */
async function replayChat(store: BlockStore, lines: readonly string[], recall: RecallFn, gate: GateOptions, budget: number): Promise<ChatReplay> {
  const out: ChatReplay = { turns: lines.length, injectedTurns: 0, injectedTurnsWithout: 0, shown: new Set(), with: { injected: 0, resent: 0 }, without: { injected: 0, resent: 0 } }
  const stored = store.count()
  for (let i = 0; i < lines.length; i++) {
    const message = lines[i]!
    const hits = await recall(store, message, { topK: gate.topK, earlier: lines.slice(Math.max(0, i - EARLIER_MESSAGES), i) })
    const later = lines.length - i // this turn's request and every later one
    const add = (chars: Chars, length: number) => {
      chars.injected += length
      chars.resent += length * later
    }
    const abstention = abstentionOf(hits)
    if (abstention !== undefined) {
      const notice = isQuestion(message) && stored > 0 ? renderAbstention(abstention).length : 0
      // Counted in characters, not as an injection: as the live rows count a notice (precision.ts).
      for (const chars of [out.with, out.without]) add(chars, notice)
      continue
    }
    const gated: Hit[] = gateHits(hits, gate)
    const all = renderRecall(gated, budget)
    add(out.without, all.text.length)
    if (all.shown > 0) out.injectedTurnsWithout++
    const fresh = gated.filter((h) => !out.shown.has(h.id))
    const rendered = renderRecall(fresh, budget)
    add(out.with, rendered.text.length)
    if (rendered.shown > 0) out.injectedTurns++
    for (const h of fresh.slice(0, rendered.shown)) out.shown.add(h.id)
  }
  return out
}

/** What `replayChats` measures for a set whose queries are pasted chats. */
export interface ReplayResult {
  chats: number
  turns: number
  /** Mean over chats of the share of its gold notes shown on some turn. */
  shown_recall: number
  /** Means a chat, own store: characters injected and re-sent, with and without the repeat memory. */
  chars_per_chat: { with: Chars, without: Chars, resent_saved: number }
  /** Per other set's store: false injections over turns and over chats, mean characters a turn; with (and without) the repeat memory. */
  negatives: Array<{ against: string, turns: number, rate: number, rate_without: number, chats_rate: number, chars_per_turn: number, chars_per_turn_without: number }>
}

/** Replays every chat query of `set` (scoped stores) and against each other set's store; undefined when it has none. */
export async function replayChats(set: EvalSet, others: readonly EvalSet[], options: { gate: GateOptions, half?: 'a' | 'b', recall: RecallFn, budgetChars?: number }): Promise<ReplayResult | undefined> {
  const budget = options.budgetChars ?? 2_000
  const chats = set.queries.filter((_, i) => options.half === undefined || i % 2 === (options.half === 'a' ? 0 : 1))
    .flatMap((q) => { const lines = askerLines(q.query); return lines === undefined ? [] : [{ q, lines }] })
  if (chats.length === 0) return undefined
  let found = 0
  let turns = 0
  const withChars: Chars = { injected: 0, resent: 0 }
  const withoutChars: Chars = { injected: 0, resent: 0 }
  for (const [scope, blocks] of partition(set, 'scoped')) {
    const { store, evalIds } = buildStore(blocks)
    try {
      for (const { q, lines } of chats.filter((c) => c.q.scope === scope)) {
        const r = await replayChat(store, lines, options.recall, options.gate, budget)
        turns += r.turns
        found += goldShare(q, r.shown, evalIds)
        for (const [to, from] of [[withChars, r.with], [withoutChars, r.without]] as const) {
          to.injected += from.injected
          to.resent += from.resent
        }
      }
    } finally {
      store.close()
    }
  }
  const perChat = (c: Chars): Chars => ({ injected: round(c.injected / chats.length), resent: round(c.resent / chats.length) })
  const result: ReplayResult = {
    chats: chats.length,
    turns,
    shown_recall: round(found / chats.length),
    chars_per_chat: { with: perChat(withChars), without: perChat(withoutChars), resent_saved: round(withoutChars.resent === 0 ? 0 : 1 - withChars.resent / withoutChars.resent) },
    negatives: [],
  }
  for (const other of others) result.negatives.push({ against: other.name, ...await replayNegatives(chats.map((c) => c.lines), other.blocks, options.recall, options.gate, budget) })
  return result
}

/** Every chat against a store that holds nothing meant for it. */
async function replayNegatives(chats: readonly string[][], blocks: readonly EvalBlock[], recall: RecallFn, gate: GateOptions, budget: number) {
  const { store } = buildStore(blocks)
  let turns = 0
  let injected = 0
  let injectedWithout = 0
  let chatsInjected = 0
  let chars = 0
  let charsWithout = 0
  try {
    for (const lines of chats) {
      const r = await replayChat(store, lines, recall, gate, budget)
      turns += r.turns
      injected += r.injectedTurns
      injectedWithout += r.injectedTurnsWithout
      if (r.injectedTurns > 0) chatsInjected++
      chars += r.with.injected
      charsWithout += r.without.injected
    }
  } finally {
    store.close()
  }
  const per = (n: number, of: number) => round(of === 0 ? 0 : n / of)
  return { turns, rate: per(injected, turns), rate_without: per(injectedWithout, turns), chats_rate: per(chatsInjected, chats.length), chars_per_turn: per(chars, turns), chars_per_turn_without: per(charsWithout, turns) }
}

/** |gold ∩ shown| / |gold|, shown mapped back to the set's ids. */
function goldShare(q: EvalQuery, shown: ReadonlySet<string>, evalIds: ReadonlyMap<string, string[]>): number {
  const ids = new Set([...shown].flatMap((id) => evalIds.get(id) ?? []))
  return q.gold.filter((g) => ids.has(g)).length / q.gold.length
}

/** The replay as a short table. */
export function replayTable(name: string, r: ReplayResult): string {
  const lines = [`${name} · replayed turn by turn · ${r.chats} chats · ${r.turns} turns · gold shown on some turn ${r.shown_recall.toFixed(3)}`,
    `chars a chat (with / without the repeat memory): injected ${r.chars_per_chat.with.injected.toFixed(0)} / ${r.chars_per_chat.without.injected.toFixed(0)}, ` +
    `re-sent ${r.chars_per_chat.with.resent.toFixed(0)} / ${r.chars_per_chat.without.resent.toFixed(0)} (saved ${(100 * r.chars_per_chat.resent_saved).toFixed(1)} %)`]
  for (const n of r.negatives) {
    lines.push(`  against ${n.against}: false injections ${n.rate.toFixed(3)} of turns (without the memory ${n.rate_without.toFixed(3)}), ${n.chats_rate.toFixed(3)} of chats; ` +
      `chars a noise turn ${n.chars_per_turn.toFixed(0)} (${n.chars_per_turn_without.toFixed(0)})`)
  }
  return lines.join('\n')
}
