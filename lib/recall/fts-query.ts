import { bigrams } from '../text/cjk.ts'
import type { QueryAnalysis } from './symbols.ts'

/**
 * Builds FTS5 MATCH expressions. This is the only place a MATCH string is made: every term is
 * wrapped in double quotes (an FTS5 string, inside which `AND`, `NEAR`, `*`, `:` and parentheses
 * are plain text) with embedded quotes doubled, and every term is tied to a column by name.
 */

/**
 * Longest OR list sent to FTS5 (counting repeats). A pasted chat keeps its heaviest terms first;
 * on the MADial chats (≈ 225 characters, up to ≈ 900 weighted phrases) 256 loses no recall and
 * costs a third of the FTS time of 1024 (docs/recall.md).
 */
export const MAX_MATCH_TERMS = 256

/** An FTS5 string literal: quotes doubled, NUL removed. */
export function quoteTerm(term: string): string {
  return `"${term.replace(/\0/g, '').replace(/"/g, '""')}"`
}

/**
 * One MATCH expression that ORs every term of the analysis, each against its own column; '' when
 * there is none. A term of weight w is listed w times: FTS5's bm25 sums one score per listed
 * phrase, so repetition is how a query term weighs more (see `QueryAnalysis.weights`).
 */
export function matchAny(analysis: QueryAnalysis): string {
  const terms: string[] = []
  for (const symbol of analysis.exact) terms.push(`latin : ${quoteTerm(symbol)}`)
  const weighted = [
    ...analysis.words.map((term) => ({ column: 'latin', term })),
    ...analysis.cjkBigrams.map((term) => ({ column: 'cjk', term })),
  ].map((t, order) => ({ ...t, order, weight: analysis.weights.get(t.term) ?? 1 }))
  // Heaviest terms first (stable), so the bound drops only the least weighty terms of a huge query.
  weighted.sort((a, b) => b.weight - a.weight || a.order - b.order)
  for (const { column, term, weight } of weighted) {
    const phrase = `${column} : ${quoteTerm(term)}`
    for (let i = 0; i < weight && terms.length < MAX_MATCH_TERMS; i++) terms.push(phrase)
  }
  return terms.slice(0, MAX_MATCH_TERMS).join(' OR ')
}

/** A MATCH expression for one exact symbol or Latin word as a phrase in the Latin column. */
export function matchPhrase(symbol: string): string {
  return `latin : ${quoteTerm(symbol)}`
}

/** A MATCH expression for a CJK word as the phrase of its bigrams in the CJK column (a note holding the word holds it). */
export function matchCjkPhrase(word: string): string {
  return `cjk : ${quoteTerm(bigrams(word).join(' '))}`
}
