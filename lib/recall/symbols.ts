import { bigrams, cjkRuns } from '../text/cjk.ts'
import { ENGLISH_STOPWORDS, CJK_FUNCTION_WORDS } from './stopwords.ts'

/**
 * What recall takes out of a query. HologramAgent calls these "symbols": the exact strings and
 * content words a note must contain to be about the same thing.
 */
export interface QueryAnalysis {
  /** Exact symbols: numbers, versions, IPs, dates, paths, identifiers with digits (lower-cased). A hit pins the block. */
  exact: string[]
  /** Latin content words of 3+ letters, lower-cased, English stop words removed. */
  words: string[]
  /** Chinese/Japanese/Korean words (2+ characters) from the built-in ICU segmenter, function words removed. */
  cjkWords: string[]
  /** Overlapping bigrams of the query's CJK runs: what the FTS `cjk` column is searched with. */
  cjkBigrams: string[]
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
  const text = query.length > MAX_QUERY_CHARS ? query.slice(-MAX_QUERY_CHARS) : query
  const exact = new Set<string>()
  const words = new Set<string>()
  for (const match of text.matchAll(CODE_TOKEN)) {
    const token = match[0].replace(TRAILING, '').toLowerCase()
    if (token.length < 2) continue
    if (HAS_DIGIT.test(token) || (GLUED.test(token.slice(1)) && token.length >= 4)) {
      exact.add(token)
      continue
    }
    for (const word of token.split(/[^a-z]+/)) {
      if (word.length >= 3 && !ENGLISH_STOPWORDS.has(word)) words.add(word)
    }
  }
  const cjkWords = new Set<string>()
  const grams = new Set<string>()
  for (const run of cjkRuns(text)) {
    for (const gram of bigrams(run)) grams.add(gram)
    for (const segment of segmenter.segment(run)) {
      const word = segment.segment
      if (segment.isWordLike && Array.from(word).length >= 2 && !CJK_FUNCTION_WORDS.has(word)) cjkWords.add(word)
    }
  }
  return { exact: [...exact], words: [...words], cjkWords: [...cjkWords], cjkBigrams: [...grams] }
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

function isAlnum(ch: string): boolean {
  return ch !== '' && /[a-z0-9_]/.test(ch)
}
