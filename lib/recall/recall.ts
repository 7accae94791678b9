import type { Block } from '../store/types.ts'
import { bigrams } from '../text/cjk.ts'
import { scrubQuery } from '../text/normalize.ts'
import { decisiveSymbols, markAbstained, MENTIONED_WORDS, typoVariants, type RecallHits } from './abstain.ts'
import { arbitrate } from './arbitration.ts'
import { CHAR_SHARE, charOverlap, queryChars } from './char-overlap.ts'
import { COVERAGE_SHARE, coverage, weightedWords } from './coverage.ts'
import { matchAny, matchCjkPhrase, matchPhrase } from './fts-query.ts'
import { phraseForms, presentNeighbours } from './near-symbols.ts'
import { queryContent, relevance } from './relevance.ts'
import { recallPass } from './pass-source.ts'
import { areNeighbours, liftNeighbours, neighbourRowids } from './neighbours.ts'
import { applySceneContext, SCENE_WEIGHT } from './scene-context.ts'
import type { RecallSource } from './source.ts'
import { answeredAlone, conversationTurns } from './conversation.ts'
import { analyzeTurns, containsWhole, isEmptyAnalysis, symbolVariants, type QueryAnalysis } from './symbols.ts'
import type { Hit, RecallOptions } from './types.ts'

/** Missing strings an abstention looks for typo neighbours of (each costs up to 64 cached index lookups). */
const NEAR_SYMBOLS = 4

/** Hits returned when the caller does not say. */
export const DEFAULT_TOP_K = 5
/** Largest accepted topK. */
export const MAX_TOP_K = 100
/** FTS candidates scored per query; the rest of the index is never read. */
export const CANDIDATES = 200
/** Candidates fetched per exact symbol, so a pinned block can never fall outside the candidate list. */
export const EXACT_CANDIDATES = 50
/** The pin: an exact hit scores 1 + this × its lexical score (HologramAgent's boolean pin). */
const PIN_TIEBREAK = 0.01

/** The parts of the ranking a caller (a test, a measurement) may switch off; all on by default. */
export interface RankingSwitches {
  /** IDF-weighted coverage of the query's Latin words (`coverage.ts`). */
  coverage?: boolean
  /** Character backoff for CJK queries (`char-overlap.ts`). */
  charOverlap?: boolean
  /** Scene context (`scene-context.ts`). */
  sceneContext?: boolean
  /** Time arbitration between conflicting notes (`arbitration.ts`). */
  arbitration?: boolean
  /** Abstention on absent exact symbols (`abstain.ts`). */
  abstain?: boolean
  /** The absolute relevance of each hit (`relevance.ts`); off, every hit carries 1 (nothing is gated). */
  relevance?: boolean
  /** Conversation neighbours (`neighbours.ts`); always off for a source whose rowids are not the save order. */
  neighbours?: boolean
}

interface Candidate {
  id: string
  text: string
  lower: string
  score: number
  exact: boolean
  exactMatched: string[]
  createdAt: number
  scene: string
  /** Place in save order (the store's rowid), which the conversation neighbours read. */
  rowid: number
  lexical: number
  /** The conversation neighbour that lifted it (`neighbours.ts`). */
  beside?: string
}

/**
 * Synchronous, deterministic lexical recall: the path every turn's injection uses.
 *
 * 1. Analyse the query into exact symbols, Latin words and CJK bigrams, each with a weight
 *    (`symbols.ts`; a pasted transcript loses its speaker labels and weighs repeated terms and
 *    its last turn more; the live conversation's earlier messages, `options.earlier`, are read
 *    the same way, `conversation.ts`); a long query keeps its rarest terms (`specificTerms`).
 * 2. FTS5 generates candidates: an OR by bm25 of the terms some note holds, rarest first within
 *    a postings bound (`searchTerms`), plus each exact symbol as a phrase. When even the rarest
 *    term is past the bound (a lone 服务 in a big store), the newest notes holding it are the
 *    candidates, each with its bm25, rather than every one scored. Superseded blocks are dropped.
 * 3. Abstention, before the candidates are read: if the query names specific numeric strings and
 *    the store holds none of them, return no hits, marked with the reason (`abstain.ts`).
 * 4. Lexical score in [0, 1]: bm25 relative to the best candidate, blended with the share of the
 *    query's CJK characters the note holds (`char-overlap.ts`) and with IDF-weighted coverage of
 *    the query's Latin words (`coverage.ts`).
 * 5. A candidate containing an exact symbol as a whole token is pinned: 1 + 0.01 × (exact
 *    coverage + lexical) / 2, so it outranks every non-exact hit whatever the noise.
 * 6. Non-pinned scores are blended with their scene's context (`scene-context.ts`).
 * 7. Sort (ties: newer first, then id, so the order never depends on SQLite's plan), then drop
 *    notes a later candidate explicitly replaces (`arbitration.ts`), then cut to topK.
 * 8. Each returned hit carries its absolute relevance: how much of the query's specific content
 *    it holds, or of its own the query mentions (`relevance.ts`), which the injection gate reads (`gate.ts`).
 *
 * With the live conversation's earlier messages (`options.earlier`) the message is first recalled
 * alone; only when that would not open the injection gate (`answeredAlone`) is it recalled again
 * with them (`conversation.ts`).
 */
export function recallBlocks(source: RecallSource, query: string, options: RecallOptions & RankingSwitches = {}): RecallHits {
  const earlier = options.earlier ?? []
  if (earlier.length === 0) return recallTurns(source, query, [], options)
  const alone = recallTurns(source, query, [], { ...options, recordAccess: false })
  if (!answeredAlone(alone, query, source)) return recallTurns(source, query, earlier, options)
  if (options.recordAccess) source.recordAccess(alone.map((h) => h.id))
  return alone
}

/** `recallBlocks` of one message read with the earlier messages given (none: the message alone). */
function recallTurns(source: RecallSource, query: string, earlier: readonly string[], options: RecallOptions & RankingSwitches): RecallHits {
  const store = recallPass(source) // each count read once per pass (`pass-source.ts`)
  const topK = clampTopK(options.topK)
  const text = scrubQuery(typeof query === 'string' ? query : '')
  const turns = conversationTurns(text, earlier.map(scrubQuery))
  const full = analyzeTurns(turns)
  const analysis = specificTerms(store, full)
  if (isEmptyAnalysis(analysis)) return []
  const bm25 = new Map<number, number>()
  // A union one of whose scopes holds every note is read as the whole store: the same rows, without a membership test per row.
  const scopes = options.scopes !== undefined && store.scopes.coversAll?.(options.scopes) === true ? undefined : options.scopes
  const addCandidates = (match: string, limit: number, newest = false) => {
    if (match === '') return
    const candidates = scopes ? store.scopes.ftsCandidates(match, limit, scopes, undefined, newest) : store.ftsCandidates(match, limit, undefined, newest)
    for (const c of candidates) {
      const known = bm25.get(c.rowid)
      if (known === undefined || c.bm25 < known) bm25.set(c.rowid, c.bm25)
    }
  }
  const terms = searchTerms(store, analysis)
  // Each spelling of each exact symbol, unranked first (`exactProbes`): an absent one leaves the
  // OR search, which it could not change, and one whose every note the OR search already ranked is not searched again.
  const probes = exactProbes(store, analysis.exact)
  // Abstention is decided before any candidate is searched for or read: it depends only on
  // whether the asked strings are held, and its notice on which query words are.
  if (options.abstain !== false) {
    const decisive = decisiveSymbols(text, analysis.exact)
    const held = (s: string) => inStore(store, s, scopes)
    if (decisive.length > 0 && decisive.every((s) => !held(s))) {
      // The neighbours' presence in the whole store in a few lookups (`near-symbols.ts`), then scopes as for any string.
      const near = decisive.slice(0, NEAR_SYMBOLS).flatMap((s) => {
        const typos = typoVariants(s)
        const present = presentNeighbours(store, s, typos.flatMap(phraseForms))
        return typos.filter((v) => inStore(store, v, scopes, present))
      })
      return markAbstained([], { missing: decisive, mentioned: mentionedWords(store, analysis, scopes), near: [...new Set(near)] })
    }
  }
  const orTerms = { ...terms, exact: terms.exact.filter((s) => probes.get(matchPhrase(s))!.length > 0) }
  addCandidates(matchAny(orTerms), CANDIDATES, postings(store, terms) > SEARCH_POSTINGS)
  for (const symbol of analysis.exact) {
    for (const variant of symbolVariants(symbol)) {
      const match = matchPhrase(variant)
      const probe = probes.get(match)!
      if (probe.length === 0) continue // no note holds it: nothing to rank
      if (probe.length <= EXACT_CANDIDATES && orTerms.exact.includes(variant) && probe.every((rowid) => bm25.has(rowid))) continue // the OR search ranked them all
      addCandidates(match, EXACT_CANDIDATES)
    }
  }
  const blocks = current([...store.blocksByRowid([...bm25.keys()])], store, scopes)
  if (blocks.length === 0) return []

  let best = 0
  for (const [rowid] of blocks) best = Math.min(best, bm25.get(rowid)!)
  const words = options.coverage === false ? [] : weightedWords(store, analysis)
  const chars = options.charOverlap === false ? undefined : charOverlap(queryChars(turns, analysis.transcript), blocks.map(([, b]) => b.text))
  const scored: Candidate[] = []
  for (const [i, [rowid, block]] of blocks.entries()) {
    const lower = block.text.toLowerCase()
    const bm25Share = best < 0 ? bm25.get(rowid)! / best : 0
    const relative = chars === undefined ? bm25Share : (1 - CHAR_SHARE) * bm25Share + CHAR_SHARE * chars[i]!
    const covered = coverage(words, lower)
    const lexical = covered === undefined ? relative : (1 - COVERAGE_SHARE) * relative + COVERAGE_SHARE * covered
    const exactMatched = analysis.exact.filter((s) => symbolVariants(s).some((v) => containsWhole(lower, v)))
    const exact = exactMatched.length > 0
    const score = exact ? 1 + PIN_TIEBREAK * (exactMatched.length / analysis.exact.length + lexical) / 2 : lexical
    scored.push({ id: block.id, text: block.text, lower, score, exact, exactMatched, createdAt: block.createdAt, scene: block.scene, rowid, lexical })
  }
  const neighbours = options.neighbours !== false && source.rowidsInSaveOrder !== false
  if (neighbours) scored.push(...unmatchedNeighbours(store, scored, scopes))
  applySceneContext(scored, options.sceneContext === false ? 0 : SCENE_WEIGHT)
  if (neighbours) liftNeighbours(scored)
  scored.sort((a, b) => b.score - a.score || b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const kept = options.arbitration === false ? scored.slice(0, topK) : arbitrate(scored, topK)
  const content = options.relevance === false || kept.length === 0 ? undefined : queryContent(store, full, turns)
  const hits = kept.map((c) => {
    const hit: Hit = {
      id: c.id, text: c.text, score: c.score, exact: c.exact, relevance: content === undefined ? 1 : relevance(content, c.text, c.id),
      why: explain(c.exactMatched, matchedWords(analysis, c.lower), c.lexical, c.beside),
    }
    if (c.beside !== undefined) hit.beside = c.beside
    if (c.scene !== '') hit.scene = c.scene
    return hit
  })
  if (options.recordAccess) store.recordAccess(hits.map((h) => h.id))
  return hits
}

/** Most CJK bigrams a query is searched with; a longer query keeps its rarest ones. */
export const MAX_QUERY_BIGRAMS = 64
/** Most Latin words a query is searched with; a longer query keeps its rarest ones. */
export const MAX_QUERY_WORDS = 32

/**
 * A long query (a pasted chat) has hundreds of terms; most are common ("我们", "really") and each
 * costs FTS work on every note that holds it — a ten-turn English chat against 2 760 notes took
 * 25 ms at the median. Past `MAX_QUERY_BIGRAMS` bigrams / `MAX_QUERY_WORDS` words, keep the rarest
 * in the store (bigram frequencies from the index vocabulary in one read; word frequencies from
 * cached phrase counts), in query order; terms no note contains are dropped as they cannot match.
 */
export function specificTerms(store: RecallSource, analysis: QueryAnalysis): QueryAnalysis {
  let { cjkBigrams, words } = analysis
  if (cjkBigrams.length > MAX_QUERY_BIGRAMS) {
    cjkBigrams = rarest(cjkBigrams, store.cjkDocumentFrequencies(cjkBigrams), MAX_QUERY_BIGRAMS)
  }
  if (words.length > MAX_QUERY_WORDS) {
    words = rarest(words, new Map(words.map((w) => [w, store.matchCount(matchPhrase(w))])), MAX_QUERY_WORDS)
  }
  return cjkBigrams === analysis.cjkBigrams && words === analysis.words ? analysis : { ...analysis, cjkBigrams, words }
}

/**
 * Most postings (notes per term, summed over the searched terms) one query's FTS search reads,
 * unless its rarest term alone has more. FTS5 scores every note that holds any OR'ed term against
 * every term, so one term found in 8% of a 100k store ("服务") costs more than all the
 * others together, and the cost grows with the store. Such a term weighs little in bm25, and the
 * notes only it would add are outranked by those holding the rarer terms. On the evaluation sets
 * (≤ 2,760 notes) 1,500 loses no R@5 (LoCoMo global gains .0007); 1,000 and 500 would lose some
 * (docs/benchmarks.md).
 */
export const SEARCH_POSTINGS = 1_500

/**
 * Most distinct terms one query's FTS search runs on (its rarest). Past the postings, FTS5's cost
 * is per phrase: each one is looked up in every segment of the index to be matched, and again by
 * bm25 to count its notes, whatever its length; a pasted chat keeps 30–40 terms inside the postings
 * bound, most of them rare filler, and those lookups were most of its search (docs/benchmarks.md,
 * "Recall at 100k: the last two kinds"). The rarest terms carry bm25's ranking (highest IDF); the
 * dropped ones still count in coverage, the character backoff and relevance.
 */
export const MAX_SEARCH_TERMS = 24

/**
 * The terms the FTS search runs on: the query's Latin words and CJK bigrams that some note holds
 * (a term no note holds scores nothing and only costs), rarest first while their postings fit in
 * `postingsBound` and they number at most `MAX_SEARCH_TERMS`, in query order. Only candidate
 * generation and bm25 use this: coverage, the character backoff and the exact pin still see the
 * whole query, and exact symbols are always searched.
 */
export function searchTerms(store: RecallSource, analysis: QueryAnalysis, postingsBound = SEARCH_POSTINGS): QueryAnalysis {
  const df = store.cjkDocumentFrequencies(analysis.cjkBigrams)
  for (const word of analysis.words) df.set(word, store.matchCount(matchPhrase(word)))
  const present = [...analysis.words, ...analysis.cjkBigrams].filter((t) => df.get(t)! > 0)
  present.sort((a, b) => df.get(a)! - df.get(b)! || (a < b ? -1 : a > b ? 1 : 0))
  const kept = new Set<string>()
  let postings = 0
  for (const term of present) {
    postings += df.get(term)!
    if (kept.size > 0 && postings > postingsBound) break
    if (kept.size === MAX_SEARCH_TERMS) break
    kept.add(term)
  }
  const keep = (t: string) => kept.has(t)
  return { ...analysis, words: analysis.words.filter(keep), cjkBigrams: analysis.cjkBigrams.filter(keep) }
}

/**
 * The postings the FTS search of these terms reads (their document frequencies, summed; cached).
 * Past `SEARCH_POSTINGS` only the rarest term is left and it alone is that common: ranking every
 * note that holds it grows with the store (120 ms for a lone 服务 at a million notes).
 */
function postings(store: RecallSource, terms: QueryAnalysis): number {
  let total = 0
  for (const n of store.cjkDocumentFrequencies(terms.cjkBigrams).values()) total += n
  for (const word of terms.words) total += store.matchCount(matchPhrase(word))
  return total
}

/** The `limit` terms with the lowest non-zero frequency (ties: alphabetical), in their original order. */
function rarest(terms: readonly string[], df: ReadonlyMap<string, number>, limit: number): string[] {
  const present = terms.filter((t) => (df.get(t) ?? 0) > 0)
  present.sort((a, b) => df.get(a)! - df.get(b)! || (a < b ? -1 : a > b ? 1 : 0))
  const kept = new Set(present.slice(0, limit))
  return terms.filter((t) => kept.has(t))
}

/**
 * The notes holding each spelling of each exact symbol (`symbolVariants`), keyed by its phrase
 * expression: all of them when there are at most `EXACT_CANDIDATES`, else `EXACT_CANDIDATES + 1`,
 * in one unranked pass each. A ranked phrase search walks the phrase's postings twice (bm25 counts
 * the phrase's notes for its IDF first), and a phrase of common tokens (`10 · 3 · 7 · 9`) reads
 * long lists at a million notes, so the probe settles what the ranked searches would only repeat:
 * a spelling no note holds adds no candidate and no bm25 to any (FTS5 scores an absent phrase 0),
 * and a phrase of the OR search gives each of its notes there a bm25 at least as good as its own
 * search would. The whole store is probed, also within scopes: absent there is absent in every scope.
 */
function exactProbes(store: RecallSource, exact: readonly string[]): Map<string, number[]> {
  const probes = new Map<string, number[]>()
  for (const symbol of exact) {
    for (const variant of symbolVariants(symbol)) {
      const match = matchPhrase(variant)
      if (!probes.has(match)) probes.set(match, store.ftsRowids(match, EXACT_CANDIDATES + 1))
    }
  }
  return probes
}

/**
 * Whether any note holds the exact string, as the index tokenises it. A version is found with or
 * without its `v` (`v2.3.1` ↔ `2.3.1`): abstaining wrongly costs more than a weak hit. `present`,
 * when given, says which phrase forms the whole store holds (`presentNeighbours`).
 */
function inStore(store: RecallSource, symbol: string, scopes: readonly string[] | undefined, present?: ReadonlySet<string>): boolean {
  return phraseForms(symbol).some((v) => {
    const match = matchPhrase(v)
    if (present ? !present.has(v) : store.matchCount(match) === 0) return false // cached: absent from every scope
    // Within scopes only notes of the union count.
    return scopes === undefined || store.scopes.anyMatch(match, scopes)
  })
}

/**
 * Drops superseded candidates. Within scopes, supersede works inside the union: a note replaced by
 * a note the union cannot see (saved in another workspace) stays current here.
 */
export function current(blocks: Array<[number, Block]>, store: RecallSource, scopes: readonly string[] | undefined): Array<[number, Block]> {
  const successors = blocks.flatMap(([, b]) => b.supersededBy ?? [])
  if (successors.length === 0) return blocks
  const visible = scopes ? store.scopes.visible(successors, scopes) : undefined
  return blocks.filter(([, b]) => b.supersededBy === null || (visible !== undefined && !visible.has(b.supersededBy)))
}

/**
 * The conversation neighbours of the best candidates that no term made candidates
 * (`neighbourRowids`), read in one statement, current and within the scopes, as candidates that
 * matched nothing: lexical 0, so only scene context and the neighbour lift can rank them.
 */
function unmatchedNeighbours(store: RecallSource, scored: readonly Candidate[], scopes: readonly string[] | undefined): Candidate[] {
  const rowids = neighbourRowids(scored)
  if (rowids.length === 0) return []
  let near = current([...store.blocksByRowid(rowids)], store, scopes).filter(([rowid, b]) => scored.some((c) => areNeighbours(c, { rowid, scene: b.scene, createdAt: b.createdAt })))
  if (scopes !== undefined && near.length > 0) {
    const visible = store.scopes.visible(near.map(([, b]) => b.id), scopes)
    near = near.filter(([, b]) => visible.has(b.id))
  }
  return near.map(([rowid, b]) => ({ id: b.id, text: b.text, lower: b.text.toLowerCase(), score: 0, exact: false, exactMatched: [], createdAt: b.createdAt, scene: b.scene, rowid, lexical: 0 }))
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

/**
 * Query words some note the recall can see holds, in query order (Latin words, CJK words, CJK
 * bigrams; a term inside one already listed is skipped), at most `MENTIONED_WORDS`: what the
 * abstention notice says the store does know about. Read from the index's document frequencies,
 * which this pass has mostly read already, and within scopes from the union, so an abstaining
 * query reads no candidate.
 */
function mentionedWords(store: RecallSource, analysis: QueryAnalysis, scopes: readonly string[] | undefined): string[] {
  const cjk = [...analysis.cjkWords, ...analysis.cjkBigrams]
  const single = store.cjkDocumentFrequencies(cjk.filter((w) => bigrams(w).length === 1))
  const out: string[] = []
  const terms: Array<[term: string, match: string]> = [...analysis.words.map((w): [string, string] => [w, matchPhrase(w)]), ...cjk.map((w): [string, string] => [w, matchCjkPhrase(w)])]
  for (const [term, match] of terms) {
    if (out.length >= MENTIONED_WORDS) break
    if (out.some((w) => w.includes(term))) continue
    const held = single.has(term) ? single.get(term)! > 0 : store.matchCount(match) > 0 // cached: absent from every scope
    if (held && (scopes === undefined || store.scopes.anyMatch(match, scopes))) out.push(term)
  }
  return out
}

function explain(exact: string[], words: string[], lexical: number, beside: string | undefined): string {
  const parts: string[] = []
  if (exact.length > 0) parts.push(`exact ${exact.join(', ')}`)
  if (words.length > 0) parts.push(`words ${words.join(', ')}`)
  parts.push(`lexical ${lexical.toFixed(3)}`)
  if (beside !== undefined) parts.push(`beside ${beside}`)
  return parts.join('; ')
}
