import type { QueryAnalysis } from './symbols.ts'

/**
 * Builds FTS5 MATCH expressions. This is the only place a MATCH string is made: every term is
 * wrapped in double quotes (an FTS5 string, inside which `AND`, `NEAR`, `*`, `:` and parentheses
 * are plain text) with embedded quotes doubled, and every term is tied to a column by name.
 */

/**
 * Longest OR list sent to FTS5. A whole pasted chat keeps all its terms (its bigrams are the
 * evidence); the bound only keeps a pathological query from costing more than a long message.
 */
export const MAX_MATCH_TERMS = 1024

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
  const add = (column: string, term: string) => {
    const phrase = `${column} : ${quoteTerm(term)}`
    for (let i = 0; i < (analysis.weights.get(term) ?? 1); i++) terms.push(phrase)
  }
  for (const word of analysis.words) add('latin', word)
  for (const gram of analysis.cjkBigrams) add('cjk', gram)
  return terms.slice(0, MAX_MATCH_TERMS).join(' OR ')
}

/** A MATCH expression for one exact symbol or Latin word as a phrase in the Latin column. */
export function matchPhrase(symbol: string): string {
  return `latin : ${quoteTerm(symbol)}`
}
