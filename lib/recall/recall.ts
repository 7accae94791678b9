import type { BlockStore } from '../store/store.ts'
import { scrubQuery } from '../text/normalize.ts'
import { matchAny, matchPhrase } from './fts-query.ts'
import { analyzeQuery, containsWhole, isEmptyAnalysis, type QueryAnalysis } from './symbols.ts'
import type { Hit, RecallOptions } from './types.ts'

/** Hits returned when the caller does not say. */
export const DEFAULT_TOP_K = 5
/** Largest accepted topK. */
export const MAX_TOP_K = 100
/** FTS candidates scored per query; the rest of the index is never read. */
const CANDIDATES = 200
/** Candidates fetched per exact symbol, so a pinned block can never fall outside the candidate list. */
const EXACT_CANDIDATES = 50
/** The pin: an exact hit scores 1 + this × its lexical score (HologramAgent's boolean pin). */
const PIN_TIEBREAK = 0.01

/**
 * Synchronous, deterministic lexical recall: the path every turn's injection uses.
 *
 * 1. Analyse the query into exact symbols, Latin words and CJK bigrams (`symbols.ts`).
 * 2. FTS5 generates candidates: an OR of every term by bm25, plus each exact symbol as a phrase.
 * 3. Each candidate's lexical score is its bm25 relative to the best candidate, in (0, 1].
 * 4. A candidate containing an exact symbol as a whole token is pinned: 1 + 0.01 × (exact
 *    coverage + lexical) / 2, so it outranks every non-exact hit whatever the noise.
 * 5. Ties break by newer first, then id, so the order never depends on SQLite's plan.
 */
export function recallBlocks(store: BlockStore, query: string, options: RecallOptions = {}): Hit[] {
  const topK = clampTopK(options.topK)
  const analysis = analyzeQuery(scrubQuery(typeof query === 'string' ? query : ''))
  if (isEmptyAnalysis(analysis)) return []
  const bm25 = new Map<number, number>()
  const addCandidates = (match: string, limit: number) => {
    for (const c of store.ftsCandidates(match, limit)) {
      const known = bm25.get(c.rowid)
      if (known === undefined || c.bm25 < known) bm25.set(c.rowid, c.bm25)
    }
  }
  addCandidates(matchAny(analysis), CANDIDATES)
  for (const symbol of analysis.exact) addCandidates(matchPhrase(symbol), EXACT_CANDIDATES)
  if (bm25.size === 0) return []

  let best = 0
  for (const value of bm25.values()) best = Math.min(best, value)
  const blocks = store.blocksByRowid([...bm25.keys()])
  const scored: Array<{ id: string, text: string, score: number, exactMatched: string[], lexical: number, createdAt: number }> = []
  for (const [rowid, block] of blocks) {
    const lexical = best < 0 ? bm25.get(rowid)! / best : 0
    const lower = block.text.toLowerCase()
    const exactMatched = analysis.exact.filter((s) => containsWhole(lower, s))
    const score = exactMatched.length > 0
      ? 1 + PIN_TIEBREAK * (exactMatched.length / analysis.exact.length + lexical) / 2
      : lexical
    scored.push({ id: block.id, text: block.text, score, exactMatched, lexical, createdAt: block.createdAt })
  }
  scored.sort((a, b) => b.score - a.score || b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  // Explanations only for the hits returned, not for every candidate.
  const hits: Hit[] = scored.slice(0, topK).map((c) => ({
    id: c.id, text: c.text, score: c.score, exact: c.exactMatched.length > 0,
    why: explain(c.exactMatched, matchedWords(analysis, c.text.toLowerCase()), c.lexical),
  }))
  if (options.recordAccess) store.recordAccess(hits.map((h) => h.id))
  return hits
}

/** Clamps a caller's topK to 1…MAX_TOP_K, defaulting to DEFAULT_TOP_K. */
export function clampTopK(topK: number | undefined): number {
  if (typeof topK !== 'number' || !Number.isFinite(topK)) return DEFAULT_TOP_K
  return Math.max(1, Math.min(MAX_TOP_K, Math.floor(topK)))
}

function matchedWords(analysis: QueryAnalysis, lower: string): string[] {
  const out: string[] = []
  for (const word of analysis.words) if (containsWhole(lower, word)) out.push(word)
  for (const word of analysis.cjkWords) if (lower.includes(word)) out.push(word)
  return out
}

function explain(exact: string[], words: string[], lexical: number): string {
  const parts: string[] = []
  if (exact.length > 0) parts.push(`exact ${exact.join(', ')}`)
  if (words.length > 0) parts.push(`words ${words.join(', ')}`)
  parts.push(`bm25 ${lexical.toFixed(3)}`)
  return parts.join('; ')
}
