import type { RecallSource } from './source.ts'
import { matchPhrase } from './fts-query.ts'
import { bigrams } from '../text/cjk.ts'
import { scrubQuery } from '../text/normalize.ts'
import { analyzeQuery, containsWhole, containsWordStem, symbolVariants, type QueryAnalysis } from './symbols.ts'

/**
 * Absolute relevance: how much of what is specific in the query a note actually holds. Recall's
 * score is relative (the best candidate's bm25 becomes 1), so the best of an unrelated lot still
 * looks like a match; this signal is not. Every part of the query that names something — each
 * Latin content word, each CJK bigram, each exact symbol — weighs its query weight (1, or the
 * turn-weighted count in a pasted transcript) times its smoothed IDF in the store,
 * `ln(1 + (N − df + ½)/(df + ½))`; a part no note holds weighs as much as the rarest part a note
 * can hold (df 1), because a name or a number the store has never seen is as specific as a query
 * gets — and the store cannot say it is rarer than that (with df 0, one absent word outweighed
 * two present ones four to one in a store of one note). (A CJK
 * bigram no note holds counts only inside a content word of the segmenter: one straddling two
 * words, "的端" of "服务的端口", is an artefact of cutting text into pairs, and in a small store
 * nearly all of them are absent.) A note's
 * relevance is the share of that mass it holds, in [0, 1]. The same rule serves every language
 * and query shape; the document frequencies are the ones recall already read (cached per store
 * version), so it costs a few string searches per returned hit.
 */

/** One specific part of the query, with the mass it carries. */
interface Part {
  kind: 'word' | 'bigram' | 'exact'
  term: string
  mass: number
}

/** The query's specific parts and their total mass; `relevance()` scores one note against them. */
export interface QueryContent {
  parts: readonly Part[]
  total: number
}

/**
 * Smoothed IDF that stays positive (the same as coverage's), so common parts weigh little but
 * never nothing; a part no note holds counts as held by one.
 */
function idf(n: number, df: number): number {
  const held = Math.max(1, df)
  return Math.log(1 + (n - held + 0.5) / (held + 0.5))
}

/**
 * The specific parts of an analysed query, weighted against this store. Use the full analysis
 * (not the one cut to its rarest terms for the search): parts no note holds are exactly what
 * makes a store irrelevant to a query.
 */
export function queryContent(store: RecallSource, analysis: QueryAnalysis): QueryContent {
  const n = store.count()
  const parts: Part[] = []
  for (const word of analysis.words) {
    parts.push({ kind: 'word', term: word, mass: (analysis.weights.get(word) ?? 1) * idf(n, store.matchCount(matchPhrase(word))) })
  }
  const bigramDf = store.cjkDocumentFrequencies(analysis.cjkBigrams)
  const inWords = new Set(analysis.cjkWords.flatMap((w) => bigrams(w)))
  for (const gram of analysis.cjkBigrams) {
    const df = bigramDf.get(gram) ?? 0
    // An absent bigram that straddles two words ("的端" in "服务的端口") names nothing; an
    // absent one inside a content word does (a name, a term the store has never seen).
    if (df === 0 && !inWords.has(gram)) continue
    parts.push({ kind: 'bigram', term: gram, mass: (analysis.weights.get(gram) ?? 1) * idf(n, df) })
  }
  for (const symbol of analysis.exact) {
    const df = Math.max(...symbolVariants(symbol).map((v) => store.matchCount(matchPhrase(v))))
    parts.push({ kind: 'exact', term: symbol, mass: idf(n, df) })
  }
  return { parts, total: parts.reduce((sum, p) => sum + p.mass, 0) }
}

/**
 * The share (0…1) of the query's specific mass that a note (its lower-cased text) holds: a word
 * as in coverage (the stem as a word prefix), a bigram as a substring, an exact symbol as a whole
 * token in any of its spellings. 0 for a query with nothing specific.
 */
export function relevance(content: QueryContent, lowerText: string): number {
  if (content.total <= 0) return 0
  let held = 0
  for (const part of content.parts) {
    const found = part.kind === 'word' ? containsWordStem(lowerText, part.term)
      : part.kind === 'bigram' ? lowerText.includes(part.term)
        : symbolVariants(part.term).some((v) => containsWhole(lowerText, v))
    if (found) held += part.mass
  }
  return Math.min(1, held / content.total)
}

/** Relevance of any note text to a raw query (for notes found by other means than the lexical recall, e.g. vectors). */
export function queryRelevance(store: RecallSource, query: string): (text: string) => number {
  const content = queryContent(store, analyzeQuery(scrubQuery(query)))
  return (text) => relevance(content, text.toLowerCase())
}
