import type { QueryAnalysis } from './symbols.ts'

/**
 * Builds FTS5 MATCH expressions. This is the only place a MATCH string is made: every term is
 * wrapped in double quotes (an FTS5 string, inside which `AND`, `NEAR`, `*`, `:` and parentheses
 * are plain text) with embedded quotes doubled, and every term is tied to a column by name.
 */

/** Longest OR list sent to FTS5; a whole chat as a query is cut to its most specific terms. */
export const MAX_MATCH_TERMS = 64

/** An FTS5 string literal: quotes doubled, NUL removed. */
export function quoteTerm(term: string): string {
  return `"${term.replace(/\0/g, '').replace(/"/g, '""')}"`
}

/** One MATCH expression that ORs every term of the analysis, each against its own column; '' when there is none. */
export function matchAny(analysis: QueryAnalysis): string {
  const terms: string[] = []
  for (const symbol of analysis.exact) terms.push(`latin : ${quoteTerm(symbol)}`)
  for (const word of analysis.words) terms.push(`latin : ${quoteTerm(word)}`)
  for (const gram of analysis.cjkBigrams) terms.push(`cjk : ${quoteTerm(gram)}`)
  return terms.slice(0, MAX_MATCH_TERMS).join(' OR ')
}

/** A MATCH expression for one exact symbol as a phrase in the Latin column. */
export function matchPhrase(symbol: string): string {
  return `latin : ${quoteTerm(symbol)}`
}
