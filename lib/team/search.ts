import type pg from 'pg'
import { decisiveSymbols } from '../recall/abstain.ts'
import { matchAny, matchPhrase } from '../recall/fts-query.ts'
import { recallBlocks, searchTerms, specificTerms } from '../recall/recall.ts'
import { analyzeQuery, symbolVariants } from '../recall/symbols.ts'
import type { Hit } from '../recall/types.ts'
import { scrubQuery } from '../text/normalize.ts'
import { parseMatch, phraseKey, TeamSnapshot, type TeamRow } from './snapshot.ts'
import { phraseHits, tokens, termKey, unpackTokens } from './terms.ts'

/**
 * The team layer's recall: the same lexical ranking as the local store's (`recallBlocks`), run
 * over a `TeamSnapshot` filled from PostgreSQL in two round trips:
 * 1. the namespace's note and token counts, the document frequency of every single-token term
 *    of the query (the `terms` table), and, per multi-token exact phrase (`10.0.0.1`, `v2.3.1`),
 *    the notes whose lower-cased text holds it (the `pg_trgm` index), checked token by token;
 * 2. the notes holding any term the search keeps (`searchTerms`: rarest first within the same
 *    postings bound as locally), through the `tsvector` GIN index — shortest first, at most
 *    `MAX_ROWS` (with one term, bm25 orders by length).
 * The local pipeline then runs unchanged: candidates by bm25, character backoff, coverage, pins,
 * scene context, arbitration, relevance. Abstention is decided across both layers by the merge
 * (`merge.ts`), so here it only reports which decisive symbols the team holds.
 */

/** A team note recalled: a hit, with who shared it and when. */
export interface TeamHit extends Hit {
  team: { member: string, savedAt: number }
}

/** What one team recall returns. */
export interface TeamResult {
  hits: TeamHit[]
  /** The query's decisive symbols (`abstain.ts`) some team note holds. */
  heldSymbols: Set<string>
  /** Local ids that a current team note supersedes (asked for once the local recall is done). */
  supersededLocal: Set<string>
}

/** Most candidate rows read per query. */
export const MAX_ROWS = 2_000
/** Most rows read per multi-token phrase. */
const PHRASE_ROWS = 200
/** Most multi-token phrases looked up per query. */
const MAX_PHRASES = 8

const ROW_COLUMNS = 'id, text, toks, member, created_at, scene, superseded_by'

interface DbRow { id: string, text: string, toks: string, member: string, created_at: string, scene: string, superseded_by: string | null }

function toRow(r: DbRow): TeamRow {
  return { id: r.id, text: r.text, tokens: unpackTokens(r.toks), member: r.member, createdAt: Number(r.created_at), scene: r.scene, supersededBy: r.superseded_by }
}

/** A LIKE pattern that finds `text` as a substring, its wildcards escaped. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** A tsquery that ORs term keys (our tokens hold only letters, numbers and `:`, quoted anyway). */
function orQuery(keys: readonly string[]): string {
  return keys.map((k) => `'${k.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`).join(' | ')
}

/** Thrown by `teamRecall` when its deadline passed: the caller has stopped waiting, so the scoring is skipped. */
export class TeamRecallLate extends Error {}

/**
 * Runs one team recall on a connected client. `localIds` is read after the candidates arrive.
 * Past `deadline` (a `performance.now()` time) it stops before its next step: the work runs on
 * the agent's event loop, and scoring a result nobody waits for would only delay the turn.
 */
export async function teamRecall(client: pg.ClientBase, namespace: string, query: string, topK: number, localIds: () => readonly string[], deadline = Infinity): Promise<TeamResult> {
  const late = () => {
    if (performance.now() > deadline) throw new TeamRecallLate('the team recall ran out of its budget')
  }
  const text = scrubQuery(typeof query === 'string' ? query : '')
  const full = analyzeQuery(text)
  const decisive = decisiveSymbols(text, full.exact)
  const symbolPhrases = [...new Set(full.exact.flatMap((s) => symbolVariants(s)).concat(decisive.flatMap((s) => /^v\d/.test(s) ? [s.slice(1)] : [])))]
  const phrases = [...full.words.map(matchPhrase), ...symbolPhrases.map(matchPhrase), ...full.cjkBigrams.map((b) => `cjk : "${b}"`)]
  const single = new Set<string>()
  const multi: string[] = []
  for (const match of phrases) {
    const phrase = parseMatch(match)[0]
    if (!phrase || phrase.tokens.length === 0) continue
    if (phrase.tokens.length === 1) single.add(phraseKey(phrase.column, phrase.tokens))
    else if (phrase.column === 'latin') multi.push(match.slice('latin : '.length + 1, -1).replace(/""/g, '"'))
  }

  const stats = await client.query<{ notes: string | null, tokens: string | null, df: Record<string, number> | null }>(
    `SELECT (SELECT notes FROM stablemem.stats WHERE namespace = $1) AS notes, (SELECT tokens FROM stablemem.stats WHERE namespace = $1) AS tokens,
      (SELECT json_object_agg(term, df) FROM stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[])) AS df`,
    [namespace, [...single]])
  late()
  const s = stats.rows[0]!
  const counts = new Map<string, number>(Object.entries(s.df ?? {}))
  const snapshot = new TeamSnapshot(Number(s.notes ?? 0), Number(s.tokens ?? 0), counts)
  for (const symbol of [...new Set(multi)].slice(0, MAX_PHRASES)) {
    const { rows } = await client.query<DbRow>(`SELECT ${ROW_COLUMNS} FROM stablemem.notes WHERE namespace = $1 AND lower(text) LIKE $2
      ORDER BY length(text), id LIMIT ${PHRASE_ROWS}`, [namespace, containsPattern(symbol.toLowerCase())])
    const phrase = tokens(symbol)
    const held = rows.filter((r) => phraseHits(unpackTokens(r.toks).latin, phrase) > 0)
    counts.set(phraseKey('latin', phrase), held.length)
    snapshot.addRows(held.map(toRow))
  }
  if (snapshot.count() === 0) return { hits: [], heldSymbols: new Set(), supersededLocal: new Set() }

  late()
  const kept = searchTerms(snapshot, specificTerms(snapshot, full))
  const keys = new Set<string>()
  for (const p of parseMatch(matchAny(kept))) if (p.tokens.length === 1) keys.add(termKey(p.column, p.tokens[0]!))
  if (keys.size > 0) {
    const { rows } = await client.query<DbRow>(`SELECT ${ROW_COLUMNS} FROM stablemem.notes WHERE namespace = $1 AND terms @@ $2::tsquery
      ORDER BY doc_len, id LIMIT ${MAX_ROWS}`, [namespace, orQuery([...keys])])
    late()
    snapshot.addRows(rows.map(toRow))
  }
  const hits = recallBlocks(snapshot, query, { topK, abstain: false }).map((h): TeamHit => {
    const row = snapshot.row(h.id)!
    return { ...h, team: { member: row.member, savedAt: row.createdAt } }
  })
  const heldSymbols = new Set(decisive.filter((d) => {
    const variants = /^v\d/.test(d) ? [d, d.slice(1)] : symbolVariants(d)
    return variants.some((v) => snapshot.matchCount(matchPhrase(v)) > 0)
  }))
  const ids = localIds()
  let supersededLocal = new Set<string>()
  if (ids.length > 0) {
    const { rows } = await client.query<{ supersedes: string }>(`SELECT supersedes FROM stablemem.notes
      WHERE namespace = $1 AND supersedes = ANY($2::text[]) AND superseded_by IS NULL`, [namespace, [...ids]])
    supersededLocal = new Set(rows.map((r) => r.supersedes))
  }
  return { hits, heldSymbols, supersededLocal }
}
