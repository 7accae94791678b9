import type pg from 'pg'
import { decisiveSymbols } from '../recall/abstain.ts'
import { matchAny, matchPhrase } from '../recall/fts-query.ts'
import { CANDIDATES, EXACT_CANDIDATES, recallBlocks, SEARCH_POSTINGS, searchTerms, specificTerms } from '../recall/recall.ts'
import { analyzeQuery, symbolVariants } from '../recall/symbols.ts'
import type { Hit } from '../recall/types.ts'
import { scrubQuery } from '../text/normalize.ts'
import { B, idf, K1, parseMatch, phraseKey, TeamSnapshot, type TeamRow } from './snapshot.ts'
import { phraseHits, tokens, termKey, unpackTokens } from './terms.ts'

/**
 * The team layer's recall: the same lexical ranking as the local store's (`recallBlocks`), run
 * over a `TeamSnapshot` filled from PostgreSQL in two round trips of prepared statements (and
 * one more, planned for its pattern, per multi-token exact phrase):
 * 1. the namespace's note and token counts and the document frequency of every single-token term
 *    of the query (the `terms` table); then, per multi-token exact phrase (`10.0.0.1`, `v2.3.1`),
 *    the notes whose lower-cased text holds it (the `pg_trgm` index), checked token by token here;
 * 2. the candidates, ranked on the server from the postings (`schema.ts`): bm25 over the terms
 *    the search keeps (`searchTerms`, the rarest within the same postings bound as locally), the
 *    best `RANKED_ROWS`; or, when that lone term is past the bound, its newest holders, as the
 *    local search takes them; and the best holders of each single-token exact symbol. Only those
 *    rows leave the server; the local supersede check rides along.
 * The local pipeline then runs unchanged on the rows: candidates by bm25 (computed again here,
 * exactly; the server's order is only the prefilter, with a margin for rounding at the cut),
 * character backoff, coverage, pins, scene context, arbitration, relevance. Abstention is decided
 * across both layers by the merge (`merge.ts`), so here it only reports which decisive symbols
 * the team holds.
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
  /** Local ids that a current team note supersedes (asked for with the candidates, the local recall done by then). */
  supersededLocal: Set<string>
}

/** Rows the server ranks for the OR search: the local search keeps `CANDIDATES`; the margin absorbs rounding at the cut. */
const RANKED_ROWS = CANDIDATES + 56
/** Rows per single-token exact symbol: the local search keeps `EXACT_CANDIDATES`. */
const EXACT_ROWS = EXACT_CANDIDATES + 14
/** Most rows read per multi-token phrase. */
const PHRASE_ROWS = 200
/** Most multi-token phrases looked up per query. */
const MAX_PHRASES = 8

/** A note row as the driver returns it (`rowMode: 'array'`; bigints as strings); candidate rows add the supersede answer. */
type DbRow = [seq: string | null, id: string, text: string, toks: string, member: string, createdAt: string, scene: string, supersededBy: string | null, superseded?: string[] | null]

function fromDb([seq, id, text, toks, member, createdAt, scene, supersededBy]: DbRow): TeamRow {
  return { seq: Number(seq), id, text, tokens: unpackTokens(toks), member, createdAt: Number(createdAt), scene, supersededBy }
}

/** The statements of a recall, prepared once per connection (node-postgres names them). The counts and the document frequencies of the keys $2. */
const STATS = {
  name: 'stablemem.recall.stats',
  text: `SELECT (SELECT notes FROM stablemem.stats WHERE namespace = $1) AS notes, (SELECT tokens FROM stablemem.stats WHERE namespace = $1) AS tokens,
    (SELECT json_object_agg(term, df) FROM stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[])) AS df`,
}
/**
 * The shortest notes holding the substring $2 (a LIKE pattern). Deliberately not a named
 * statement: only a plan made for the pattern itself uses the `pg_trgm` index; a generic plan
 * cannot see the pattern and scans every note (365 ms of server CPU per query at 100k).
 */
const PHRASE = {
  text: `SELECT n.seq, n.id, n.text, n.toks, n.member, n.created_at, n.scene, n.superseded_by FROM stablemem.notes n
    WHERE n.namespace = $1 AND lower(n.text) LIKE $2 ORDER BY length(n.text), n.id LIMIT ${PHRASE_ROWS}`,
}
/**
 * The candidates: $2/$3 the OR search's term keys and their IDFs (summed over repeats), $4
 * whether its lone term is past the postings bound (then its newest holders instead), $5 the
 * exact symbols' keys, bm25's length normalisation as $6 + $7 × length (the constant factor
 * k1 + 1 left out: it does not change the order). The rows are the candidates' notes, and one
 * row with `seq` null holding which of the local ids $8 a current team note supersedes. Every
 * condition is spelt so that a generic plan, which cannot see the values, still uses the
 * indexes (`supersedes <> ''` is the partial index's predicate).
 */
const CANDIDATES_SQL = {
  name: 'stablemem.recall.candidates',
  text: `WITH q AS (SELECT * FROM unnest($2::text[], $3::float8[]) AS q(term, idf)),
    ranked AS (SELECT p.seq FROM q JOIN stablemem.postings p ON p.namespace = $1 AND p.term = q.term WHERE NOT $4
      GROUP BY p.seq ORDER BY sum(q.idf * p.tf / (p.tf + $6::float8 + $7::float8 * p.doc_len)) DESC, p.seq DESC LIMIT ${RANKED_ROWS}),
    newest AS (SELECT p.seq FROM stablemem.postings p WHERE $4 AND p.namespace = $1 AND p.term = ($2::text[])[1] ORDER BY p.seq DESC LIMIT ${CANDIDATES}),
    exact AS (SELECT x.seq FROM unnest($5::text[]) AS e(term) CROSS JOIN LATERAL (SELECT p.seq FROM stablemem.postings p
      WHERE p.namespace = $1 AND p.term = e.term ORDER BY p.tf / (p.tf + $6::float8 + $7::float8 * p.doc_len) DESC, p.seq DESC LIMIT ${EXACT_ROWS}) x)
    SELECT n.seq, n.id, n.text, n.toks, n.member, n.created_at, n.scene, n.superseded_by, NULL::text[] AS superseded FROM stablemem.notes n
      WHERE n.namespace = $1 AND n.seq = ANY (ARRAY(SELECT seq FROM ranked UNION SELECT seq FROM newest UNION SELECT seq FROM exact))
    UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ARRAY(SELECT supersedes FROM stablemem.notes
      WHERE namespace = $1 AND supersedes <> '' AND supersedes = ANY($8::text[]) AND superseded_by IS NULL)`,
}
const SUPERSEDED = {
  name: 'stablemem.recall.superseded',
  text: `SELECT array_agg(supersedes) AS superseded FROM stablemem.notes WHERE namespace = $1 AND supersedes <> '' AND supersedes = ANY($2::text[]) AND superseded_by IS NULL`,
}

/** A LIKE pattern that finds `text` as a substring, its wildcards escaped. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** Thrown by `teamRecall` when its deadline passed: the caller has stopped waiting, so the scoring is skipped. */
export class TeamRecallLate extends Error {}

/**
 * Runs one team recall on a connected client. `localIds` (the local hits, to check for team
 * notes superseding them) is read when the candidates are asked for — the local recall has
 * usually finished by then — and, if it was still empty, once more at the end.
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

  const phraseList = [...new Set(multi)].slice(0, MAX_PHRASES)
  const stats = await client.query<{ notes: string | null, tokens: string | null, df: Record<string, number> | null }>({ ...STATS, values: [namespace, [...single]] })
  late()
  const s = stats.rows[0]!
  const counts = new Map<string, number>(Object.entries(s.df ?? {}))
  const notes = Number(s.notes ?? 0)
  const tokenTotal = Number(s.tokens ?? 0)
  const snapshot = new TeamSnapshot(notes, tokenTotal, counts)
  for (const symbol of notes === 0 ? [] : phraseList) {
    const { rows } = await client.query<DbRow>({ ...PHRASE, rowMode: 'array', values: [namespace, containsPattern(symbol.toLowerCase())] })
    late()
    const phrase = tokens(symbol)
    const held = rows.map(fromDb).filter((r) => phraseHits(r.tokens!.latin, phrase) > 0)
    counts.set(phraseKey('latin', phrase), held.length)
    snapshot.addRows(held)
  }
  if (snapshot.count() === 0) return { hits: [], heldSymbols: new Set(), supersededLocal: new Set() }

  const analysis = specificTerms(snapshot, full)
  const kept = searchTerms(snapshot, analysis)
  const weights = new Map<string, number>() // term key → its IDF, once per listing in the OR
  for (const p of parseMatch(matchAny(kept))) {
    if (p.tokens.length !== 1) continue
    const key = termKey(p.column, p.tokens[0]!)
    weights.set(key, (weights.get(key) ?? 0) + idf(notes, counts.get(key) ?? 0))
  }
  let postings = 0
  for (const n of snapshot.cjkDocumentFrequencies(kept.cjkBigrams).values()) postings += n
  for (const word of kept.words) postings += snapshot.matchCount(matchPhrase(word))
  const exactKeys = new Set<string>()
  for (const symbol of analysis.exact) {
    for (const variant of symbolVariants(symbol)) {
      const phrase = parseMatch(matchPhrase(variant))[0]
      if (phrase?.tokens.length === 1) exactKeys.add(phraseKey(phrase.column, phrase.tokens))
    }
  }
  const ids = localIds()
  const avgLength = notes > 0 ? tokenTotal / notes : 0
  const found = await client.query<DbRow>({ ...CANDIDATES_SQL, rowMode: 'array', values: [namespace, [...weights.keys()], [...weights.values()],
    postings > SEARCH_POSTINGS, [...exactKeys], K1 * (1 - B), avgLength > 0 ? K1 * B / avgLength : 0, [...ids]] })
  late()
  const answer = found.rows.find((r) => r[0] === null)
  snapshot.addRows(found.rows.filter((r) => r[0] !== null).map(fromDb))
  const hits = recallBlocks(snapshot, query, { topK, abstain: false }).map((h): TeamHit => {
    const row = snapshot.row(h.id)!
    return { ...h, team: { member: row.member, savedAt: row.createdAt } }
  })
  const heldSymbols = new Set(decisive.filter((d) => {
    const variants = /^v\d/.test(d) ? [d, d.slice(1)] : symbolVariants(d)
    return variants.some((v) => snapshot.matchCount(matchPhrase(v)) > 0)
  }))
  // The local recall usually finished before the candidates were asked for; if not, ask now.
  const after = ids.length > 0 ? [] : localIds()
  const superseded = after.length > 0 ? (await client.query<{ superseded: string[] | null }>({ ...SUPERSEDED, values: [namespace, [...after]] })).rows[0]!.superseded : answer?.[8]
  const supersededLocal = new Set(superseded ?? [])
  return { hits, heldSymbols, supersededLocal }
}
