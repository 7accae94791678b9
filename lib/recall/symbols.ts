import { bigrams, cjkRuns } from '../text/cjk.ts'
import { ENGLISH_STOPWORDS, CJK_FUNCTION_WORDS } from './stopwords.ts'

/**
 * What recall takes out of a query. HologramAgent calls these "symbols": the exact strings and
 * content words a note must contain to be about the same thing.
 */
export interface QueryAnalysis {
  /** Exact symbols: numbers, versions, IPs, dates, paths, identifiers with digits (lower-cased). A hit pins the block. */
  exact: string[]
  /** Latin content words of 3+ letters, lower-cased, English stop words removed; and the symbols of context turns (`analyzeTurns`). */
  words: string[]
  /** Chinese/Japanese/Korean words (2+ characters) from the built-in ICU segmenter, function words removed. */
  cjkWords: string[]
  /** Overlapping bigrams of the query's CJK runs: what the FTS `cjk` column is searched with. */
  cjkBigrams: string[]
  /**
   * Weight of each Latin word and CJK bigram in the query: 1, except in a pasted transcript, where
   * it is the term's weighted frequency across turns (see `queryTurns`) — a bigram that is a whole
   * two-character word per the segmenter counts once more than one spanning two words — capped at
   * `MAX_TERM_WEIGHT`.
   */
  weights: Map<string, number>
  /** True when the query is a pasted multi-turn transcript. */
  transcript: boolean
}

/** Latin/number tokens, including the punctuation that glues paths, IPs, versions and identifiers together. */
const CODE_TOKEN = /[~/]?[A-Za-z0-9_][A-Za-z0-9_.:/@~+-]*/g
/** Punctuation that may trail a token in prose ("port 8080." / "see /etc/hosts,") and is not part of it. */
const TRAILING = /[.:/@~+-]+$/
const HAS_DIGIT = /\d/
const GLUED = /[./_]/

/** Bounds the analysed text so that a 1 MB query costs no more than a long message. */
export const MAX_QUERY_CHARS = 8_192

const segmenter = new Intl.Segmenter('zh', { granularity: 'word' })

/**
 * Splits a query into exact symbols, Latin words and CJK words. Deterministic and order-preserving
 * (first occurrence wins), so the same query always produces the same recall.
 *
 * Differences from HologramAgent's `QuerySymbols`, each fixing a bug its spec records:
 * a date, IP or version is one symbol (`2026-09-04`, never the pins `09`/`04`); digits inside an
 * identifier stay inside it (`f91b27a`, never `91`/`27`); one-character tokens are never symbols.
 */
export function analyzeQuery(query: string): QueryAnalysis {
  return analyzeTurns(boundedTurns(query))
}

/**
 * `analyzeQuery` over a query already cut into weighted turns (`queryTurns`, or a live
 * conversation's `conversationTurns`). A symbol of a context turn (an earlier message) is searched
 * and weighed like a word, but pins nothing and never makes recall abstain: it is what the
 * conversation was about, not what is asked now.
 */
export function analyzeTurns(turns: readonly QueryTurn[]): QueryAnalysis {
  const exact = new Set<string>()
  const words = new Set<string>()
  const cjkWords = new Set<string>()
  const grams = new Set<string>()
  const counts = new Map<string, number>()
  for (const { text, weight, context } of turns) {
    const count = (t: string) => counts.set(t, (counts.get(t) ?? 0) + weight)
    const word = (w: string) => {
      words.add(w)
      count(w)
    }
    latinTerms(text, context === true ? { add: word } : exact, word)
    for (const run of cjkRuns(text)) {
      for (const gram of bigrams(run)) {
        grams.add(gram)
        count(gram)
      }
      for (const segment of segmenter.segment(run)) {
        const word = segment.segment
        if (!segment.isWordLike || CJK_FUNCTION_WORDS.has(word)) continue
        const length = Array.from(word).length
        if (length >= 2) cjkWords.add(word)
        if (length === 2) count(word)
      }
    }
  }
  const transcript = turns.length > 1
  const weights = new Map<string, number>()
  for (const [term, n] of counts) weights.set(term, transcript ? Math.min(MAX_TERM_WEIGHT, n) : 1)
  for (const symbol of exact) words.delete(symbol) // asked now: pinned, not also a word
  return { exact: [...exact], words: [...words], cjkWords: [...cjkWords], cjkBigrams: [...grams], weights, transcript }
}

/** The weighted turns of one query string, read from its last `MAX_QUERY_CHARS` characters (a 1 MB query costs no more than a long message). */
export function boundedTurns(query: string): QueryTurn[] {
  return queryTurns(query.length > MAX_QUERY_CHARS ? query.slice(-MAX_QUERY_CHARS) : query)
}

/** The exact symbols (into `exact`) and Latin content words (to `onWord`) of one stretch of text. */
function latinTerms(text: string, exact: { add: (symbol: string) => unknown }, onWord: (word: string) => void): void {
  for (const match of text.matchAll(CODE_TOKEN)) {
    const token = match[0].replace(TRAILING, '').toLowerCase()
    if (token.length < 2) continue
    if (HAS_DIGIT.test(token) || (GLUED.test(token.slice(1)) && token.length >= 4)) {
      exact.add(token)
      continue
    }
    for (const word of token.split(/[^a-z]+/)) if (word.length >= 3 && !ENGLISH_STOPWORDS.has(word)) onWord(word)
  }
}

/** Largest weight one query term gets from repetition in a transcript (BM25's query-term saturation). */
export const MAX_TERM_WEIGHT = 3

/** How much the last turn of a transcript counts: it is the message being answered now. */
export const LAST_TURN_WEIGHT = 2

/** A line-initial speaker label of a pasted transcript: "Bart: …", "用户：…" (no digits, at most 24 characters). */
const SPEAKER_LABEL = /^[ \t]*([^\s:：\d"“]{1,24})[ \t]*[:：]/u

/** One stretch of a query with the weight its terms get. */
export interface QueryTurn {
  text: string
  weight: number
  /** An earlier message of a live conversation (`conversationTurns`): its symbols neither pin nor abstain. */
  context?: boolean
  /** The speaker label a line of a pasted transcript opened with (`queryTurns`). */
  speaker?: string
}

/**
 * Splits a query into weighted turns. A pasted transcript (two or more lines opening with a
 * speaker label) loses its labels — who spoke is not what the chat is about, and a speaker's name
 * would match every note about that person — and its last line weighs `LAST_TURN_WEIGHT`, the
 * others 1. Any other query is one turn of weight 1; a single "key: value" line keeps its key.
 */
export function queryTurns(text: string): QueryTurn[] {
  const lines = text.split(/\r\n|\r|\n/)
  const labels = lines.map((line) => SPEAKER_LABEL.exec(line))
  if (labels.filter((m) => m !== null).length < 2) return [{ text, weight: 1 }]
  let last = lines.length - 1
  while (last > 0 && lines[last]!.trim() === '') last--
  return lines.map((line, i) => {
    const label = labels[i]
    const turn: QueryTurn = { text: label ? line.slice(label[0].length) : line, weight: i === last ? LAST_TURN_WEIGHT : 1 }
    if (label) turn.speaker = label[1]!
    return turn
  })
}

/** True when the analysis found nothing searchable (only stop words, punctuation, single letters). */
export function isEmptyAnalysis(a: QueryAnalysis): boolean {
  return a.exact.length === 0 && a.words.length === 0 && a.cjkBigrams.length === 0
}

/**
 * Whether `symbol` occurs in `lowerText` as a whole token: not glued to a longer number or
 * identifier on either side. `8080` is in "port 8080." and "端口8080" but not in "18080" or
 * "8080a"; `1.2` is not in "1.2.3"; `billing` is not in "billing2".
 */
export function containsWhole(lowerText: string, symbol: string): boolean {
  let from = 0
  for (;;) {
    const at = lowerText.indexOf(symbol, from)
    if (at < 0) return false
    const before = lowerText[at - 1] ?? ''
    const after = lowerText[at + symbol.length] ?? ''
    const afterNext = lowerText[at + symbol.length + 1] ?? ''
    const beforePrev = lowerText[at - 2] ?? ''
    const gluedBefore = isAlnum(before) || ('._-'.includes(before) && before !== '' && isAlnum(beforePrev) && HAS_DIGIT.test(symbol[0]!))
    const gluedAfter = isAlnum(after) || ('._-'.includes(after) && after !== '' && isAlnum(afterNext))
    if (!gluedBefore && !gluedAfter) return true
    from = at + 1
  }
}

/**
 * The spellings of one exact symbol that name the same thing: a dotted version with or without
 * its `v` (`v2.3.1` ↔ `2.3.1`). Notes and questions drop or add the `v` freely, and the index
 * keeps `v2` and `2` as different tokens, so both spellings are searched and either one pins.
 */
export function symbolVariants(symbol: string): string[] {
  if (/^v\d+(\.\d+)+$/.test(symbol)) return [symbol, symbol.slice(1)]
  if (/^\d+(\.\d+)+$/.test(symbol)) return [symbol, `v${symbol}`]
  return [symbol]
}

/** `ch` (one UTF-16 unit, or '' past either end) is one of `[a-z0-9_]`. */
function isAlnum(ch: string): boolean {
  if (ch.length !== 1) return false
  const c = ch.charCodeAt(0)
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f
}

/** English inflection endings stripped before a word is looked for as a prefix ("painted" ↔ "painting"): -ing, -ed, -es, -s. */

/**
 * Whether `lowerText` has a word starting with the stem of `word`: a light stand-in for the
 * index's Porter stemmer, so coverage counts "paints" and "painting" for the query word "painted".
 */
export function containsWordStem(lowerText: string, word: string): boolean {
  return containsStem(lowerText, wordStem(word))
}

/** What `containsWordStem` looks for: a word of 5+ letters without its inflection ending, a shorter one as it is. */
export function wordStem(word: string): string {
  if (word.length <= 4) return word
  if (word.endsWith('ing')) return word.slice(0, -3)
  if (word.endsWith('ed') || word.endsWith('es')) return word.slice(0, -2)
  return word.endsWith('s') ? word.slice(0, -1) : word
}

/** Whether `lowerText` has a word starting with `stem` (one not preceded by a letter, digit or underscore). */
export function containsStem(lowerText: string, stem: string): boolean {
  let from = 0
  for (;;) {
    const at = lowerText.indexOf(stem, from)
    if (at < 0) return false
    if (!isAlnum(lowerText[at - 1] ?? '')) return true
    from = at + 1
  }
}
