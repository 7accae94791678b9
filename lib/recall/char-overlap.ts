import { cjkRuns } from '../text/cjk.ts'
import { boundedTurns, MAX_TERM_WEIGHT, type QueryTurn } from './symbols.ts'

/**
 * Character backoff for Chinese: the share of the query's single CJK characters a candidate
 * contains, each weighted by its IDF among the candidates. Bigrams are exact about words but
 * blind to a shared morpheme: "小花" finds nothing in "收到花束", "颜色" nothing in "彩色画笔",
 * "早餐" nothing in "野餐". A Chinese character carries meaning on its own, so a candidate that
 * shares the query's rare characters is more likely about the same thing; common characters
 * (的, 了, 在, 我) carry no weight because most candidates hold them.
 *
 * It re-ranks only the candidates FTS already found (the index holds bigrams, not characters),
 * so the IDF is local: computed over the candidate set, which needs no extra read. It is a
 * backoff, not a second retriever: its share of the lexical score is `CHAR_SHARE`.
 */

/** Share of the lexical score that character overlap contributes when the query has CJK text. */
export const CHAR_SHARE = 0.4

/**
 * Most distinct characters a query is scored with. A chat keeps all of its own (MADial's hold
 * 42–125); a pasted 8 000-character text keeps its heaviest, which bounds the backoff at about
 * 1 ms for 200 candidates (≈ 0.1 ms for a one-line question).
 */
export const MAX_QUERY_CJK_CHARS = 128

/**
 * The query's CJK characters (of a string, or of turns already cut) with their weights: in a pasted transcript or a conversation a character weighs its
 * turn-weighted frequency capped at `MAX_TERM_WEIGHT` (as bigrams do), in a one-line query 1.
 * Like `analyzeQuery`, a huge query is read from its last `MAX_QUERY_CHARS` characters; past
 * `MAX_QUERY_CJK_CHARS` distinct characters the heaviest are kept (ties: first seen).
 */
export function queryChars(query: string | readonly QueryTurn[], transcript: boolean): Map<string, number> {
  const out = new Map<string, number>()
  for (const turn of typeof query === 'string' ? boundedTurns(query) : query) {
    for (const run of cjkRuns(turn.text)) {
      for (const ch of run) out.set(ch, transcript ? Math.min(MAX_TERM_WEIGHT, (out.get(ch) ?? 0) + turn.weight) : 1)
    }
  }
  if (out.size <= MAX_QUERY_CJK_CHARS) return out
  return new Map([...out].sort((a, b) => b[1] - a[1]).slice(0, MAX_QUERY_CJK_CHARS))
}

/**
 * For each candidate text, the IDF-weighted share of `chars` it contains, divided by the best
 * candidate's share so the best is 1 (like the relative bm25 it is blended with); undefined when
 * the query has no CJK character or no candidate shares one.
 */
export function charOverlap(chars: ReadonlyMap<string, number>, texts: readonly string[]): number[] | undefined {
  const n = texts.length
  if (chars.size === 0 || n === 0) return undefined
  const held = holdings(chars, texts)
  const scores = new Array<number>(n).fill(0)
  const holders: number[] = []
  let c = 0
  for (const weight of chars.values()) {
    holders.length = 0
    const row = c++ * n
    for (let t = 0; t < n; t++) if (held[row + t] === 1) holders.push(t)
    if (holders.length === 0) continue
    const idf = Math.log(1 + (n - holders.length + 0.5) / (holders.length + 0.5))
    for (const t of holders) scores[t]! += weight * idf
  }
  const best = Math.max(...scores)
  return best > 0 ? scores.map((s) => s / best) : undefined
}

/**
 * Which text holds which query character: cell `c × texts.length + t` is 1 when text `t` holds the
 * `c`-th character of `chars`. One pass over each text's UTF-16 units with an array lookup per
 * unit (`SLOT`), rather than a substring search of every text per character (a long query has
 * 50–128 characters, and each search scanned the whole text). Every CJK character (`CJK_CHAR`)
 * is one unit; a key that is not (none the query side makes) is searched for as before.
 */
function holdings(chars: ReadonlyMap<string, number>, texts: readonly string[]): Uint8Array {
  const n = texts.length
  const held = new Uint8Array(chars.size * n)
  const units: number[] = []
  let c = 0
  for (const ch of chars.keys()) {
    if (ch.length === 1) {
      SLOT[ch.charCodeAt(0)] = c + 1
      units.push(ch.charCodeAt(0))
    } else {
      for (let t = 0; t < n; t++) if (texts[t]!.includes(ch)) held[c * n + t] = 1
    }
    c++
  }
  try {
    for (let t = 0; t < n; t++) {
      const text = texts[t]!
      for (let i = 0; i < text.length; i++) {
        const at = SLOT[text.charCodeAt(i)]!
        if (at !== 0) held[(at - 1) * n + t] = 1
      }
    }
  } finally {
    for (const unit of units) SLOT[unit] = 0 // all zero again between calls
  }
  return held
}

/** Per UTF-16 unit, 1 + the index of the query character it is during a `holdings` call, else 0. */
const SLOT = new Uint16Array(0x10000)
