import type { RecallSource } from './source.ts'
import { matchPhrase } from './fts-query.ts'
import { containsWordStem, type QueryAnalysis } from './symbols.ts'

/**
 * IDF-weighted coverage of the query's Latin words: the share of the query's rare-word mass a
 * note contains. BM25 alone lets one frequent word repeated in a long note outrank a short note
 * that mentions every word asked about; coverage rewards answering the whole question. It uses a
 * smoothed IDF that stays positive (FTS5's bm25 zeroes terms found in over half the notes, which
 * in a small personal store are often the names asked about).
 *
 * Only Latin words take part: measured on the CJK sets, coverage over CJK words or bigrams did
 * not help (see docs/recall.md), and their document frequencies would cost one lookup per bigram.
 */

/** Share of the final lexical score that coverage contributes when the query has Latin words. */
export const COVERAGE_SHARE = 0.7

/** One query word with its IDF weight. */
export interface WeightedWord {
  word: string
  weight: number
}

/** The query's Latin words that occur in the store, weighted by smoothed IDF × query weight. */
export function weightedWords(store: RecallSource, analysis: QueryAnalysis): WeightedWord[] {
  if (analysis.words.length === 0) return []
  const n = store.count()
  const out: WeightedWord[] = []
  for (const word of analysis.words) {
    const df = store.matchCount(matchPhrase(word))
    if (df === 0) continue
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5))
    out.push({ word, weight: idf * (analysis.weights.get(word) ?? 1) })
  }
  return out
}

/** The weighted share (0…1) of `words` found in `lowerText`; undefined when there is nothing to cover. */
export function coverage(words: readonly WeightedWord[], lowerText: string): number | undefined {
  let total = 0
  let found = 0
  for (const w of words) {
    total += w.weight
    if (containsWordStem(lowerText, w.word)) found += w.weight
  }
  return total === 0 ? undefined : found / total
}
