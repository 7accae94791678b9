import type pg from 'pg'
import { decisiveSymbols } from '../recall/abstain.ts'
import { matchAny, matchPhrase, MAX_MATCH_TERMS, quoteTerm } from '../recall/fts-query.ts'
import { CANDIDATES, EXACT_CANDIDATES, MAX_SEARCH_TERMS, recallBlocks, SEARCH_POSTINGS, searchTerms, specificTerms } from '../recall/recall.ts'
import { analyzeQuery, symbolVariants, type QueryAnalysis } from '../recall/symbols.ts'
import type { Hit } from '../recall/types.ts'
import { scrubQuery } from '../text/normalize.ts'
import { B, idf, K1, parseMatch, phraseKey, TeamSnapshot, type TeamRow } from './snapshot.ts'
import { tokens, termKey, unpackTokens } from './terms.ts'

/**
 * The team layer's recall: the same lexical ranking as the local store's (`recallBlocks`), run
 * over a `TeamSnapshot` filled from PostgreSQL in two round trips of prepared statements:
 * 1. the namespace's note and token counts, the document frequency of every single-token term
 *    of the query (the `terms` table), and the holders of each multi-token exact phrase
 *    (`10.0.0.1`, `v2.3.1`), found through the postings of its two rarest tokens and confirmed
 *    on the server token by token;
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
  /**
   * Ids that a current team note supersedes: every such id of the namespace when there are at
   * most `SUPERSEDED_SET` (read with the counts, so the local recall need not be waited for),
   * else those among the local recall's ids (asked for with the candidates, or after them).
   */
  supersededLocal: Set<string>
  /** Round trips this recall took: 1 (`RECALL`), 2 (counts, then candidates), one more for late local ids past `SUPERSEDED_SET`. */
  statements: number
  /** True when the server's choice of search terms differed from the client's and the candidates were asked again. */
  fallback: boolean
}

/**
 * Rows the server sends for the OR search, its best by bm25 (also of the newest holders of a lone
 * common term). The local search keeps `CANDIDATES` (200) and scores them all, but what it
 * returns comes from the top of that list: coverage, the character backoff and scene context
 * move a note a few places, not from the bottom of 200 to the top 5 of a turn's recall. Sending
 * 64 rather than 256 halves the client's CPU (parsing, unpacking tokens, scoring again) and keeps
 * R@5 on every eval set (docs/benchmarks.md).
 */
const RANKED_ROWS = 64
/** Rows per single-token exact symbol: the local search keeps `EXACT_CANDIDATES`. */
const EXACT_ROWS = EXACT_CANDIDATES + 14
/** Most holders returned per multi-token phrase, the shortest (the best by bm25 for one occurrence), as many as per single-token symbol. */
const PHRASE_ROWS = EXACT_ROWS
/** Most holders of a phrase's rarest token read to find the phrase. */
const PHRASE_SCAN = 4_000
/** Most multi-token phrases looked up per query. */
const MAX_PHRASES = 8
/**
 * Most notes with a `supersedes` link whose targets come back with the counts. While a namespace
 * has no more (the common case: few notes replace another), a recall knows every id a current
 * team note supersedes after its first round trip and needs neither the local recall's ids nor
 * a third statement to check them; past it, the ids are asked about as before. Bounded so the
 * first statement reads at most this many index entries for it, whatever the namespace holds.
 */
export const SUPERSEDED_SET = 256

/** A note row as the driver returns it (`rowMode: 'array'`; bigints as strings); candidate rows add the supersede answer. */
type DbRow = [seq: string | null, id: string, text: string, toks: string, member: string, createdAt: string, scene: string, supersededBy: string | null, superseded?: string[] | null]

function fromDb([seq, id, text, toks, member, createdAt, scene, supersededBy]: DbRow): TeamRow {
  return { seq: Number(seq), id, text, tokens: unpackTokens(toks), member, createdAt: Number(createdAt), scene, supersededBy }
}

/** The note columns of a recall's rows. */
const NOTE_COLUMNS = 'n.seq, n.id, n.text, n.toks, n.member, n.created_at, n.scene, n.superseded_by'
const NO_NOTE = 'NULL::bigint, NULL, NULL, NULL, NULL, NULL::bigint, NULL, NULL'

/**
 * The counts' part of a recall (`STATS`, `RECALL`): the holders of each multi-token phrase
 * (`10.0.0.1`, `v2.3.1`: phrase $5[i] has the token keys $4 where $3 = i). A phrase is looked up
 * through the postings of its rarest token (an index range of the primary key), the holders of
 * its second rarest probed by key beside it; only the notes left are read, and the phrase is
 * confirmed on their packed tokens (` 10 0 0 1 ` in the Latin ones, as FTS5 matches a phrase). A
 * phrase with a token no note holds costs one index probe. At most `PHRASE_SCAN` holders of the
 * rarest token are read, the newest, and the count is scaled up from them past that; per phrase
 * the `PHRASE_ROWS` shortest holders come back, with the count. (Earlier releases found phrases
 * with `pg_trgm` over the text: 350 ms of server CPU per digit-heavy symbol at 100k, whose
 * trigrams every IP shares.)
 */
const PHRASE_CTES = `pt AS (SELECT DISTINCT ph, term FROM unnest($3::int[], $4::text[]) AS u(ph, term)),
    rarity AS (SELECT pt.ph, pt.term, coalesce(t.df, 0) AS df, row_number() OVER (PARTITION BY pt.ph ORDER BY coalesce(t.df, 0), pt.term) AS r
      FROM pt LEFT JOIN stablemem.terms t ON t.namespace = $1 AND t.term = pt.term),
    phrase AS (SELECT f.i::int AS i, f.needle, r1.term AS t1, r1.df AS df1, r2.term AS t2 FROM unnest($5::text[]) WITH ORDINALITY AS f(needle, i)
      JOIN rarity r1 ON r1.ph = f.i AND r1.r = 1 LEFT JOIN rarity r2 ON r2.ph = f.i AND r2.r = 2 WHERE r1.df > 0),
    held AS (SELECT phrase.i, phrase.df1, ${NOTE_COLUMNS} FROM phrase
      CROSS JOIN LATERAL (SELECT s.seq FROM (SELECT p.seq FROM stablemem.postings p WHERE p.namespace = $1 AND p.term = phrase.t1 ORDER BY p.seq DESC LIMIT ${PHRASE_SCAN}) s
        WHERE phrase.t2 IS NULL OR EXISTS (SELECT 1 FROM stablemem.postings q WHERE q.namespace = $1 AND q.term = phrase.t2 AND q.seq = s.seq)) c
      JOIN stablemem.notes n ON n.namespace = $1 AND n.seq = c.seq
      WHERE strpos(' ' || split_part(n.toks, chr(1), 1) || ' ', phrase.needle) > 0),
    counted AS (SELECT held.*, count(*) OVER w AS n, row_number() OVER (w ORDER BY length(held.text), held.id) AS k FROM held WINDOW w AS (PARTITION BY held.i))`

/**
 * The counts row's first columns: the note and token counts (`stats`), the document frequencies
 * `dfs` of the keys $2 (as JSON), the superseded set (`SUPERSEDED_SET`).
 */
const countColumns = (dfs: string, stats: string) => `(SELECT notes FROM ${stats}) AS n1, (SELECT tokens FROM ${stats}) AS n2,
      (SELECT json_object_agg(term, df) FROM ${dfs})::text AS df,
      (SELECT CASE WHEN count(*) <= ${SUPERSEDED_SET} THEN coalesce(array_agg(s.supersedes) FILTER (WHERE s.superseded_by IS NULL), '{}') END
        FROM (SELECT supersedes, superseded_by FROM stablemem.notes WHERE namespace = $1 AND supersedes <> '' LIMIT ${SUPERSEDED_SET + 1}) s) AS sup`
/** Each phrase holder, a row of its own, with its phrase's number, count and rarest token's count. */
const PHRASE_HOLDERS = `SELECT 1, i, n, df1, NULL, NULL, NULL::text[], NULL::int[], NULL::boolean, NULL::text[], seq, id, text, toks, member, created_at, scene, superseded_by FROM counted WHERE k <= ${PHRASE_ROWS}`

/**
 * The candidate searches over `q(term, idf)`, the OR search's term keys and IDFs (summed over
 * repeats), given how each statement spells the rest: `newest` whether its lone term is past the
 * postings bound (then that term, `first`, gives its newest holders instead), `exact` the exact
 * symbols' keys, bm25's length normalisation as `a` + `b` × length (the constant factor k1 + 1
 * left out: it does not change the order). Every condition is spelt so that a generic plan,
 * which cannot see the values, still uses the indexes.
 */
function candidateSearch(p: { newest: string, first: string, exact: string, a: string, b: string }): string {
  return `ranked AS (SELECT p.seq FROM q JOIN stablemem.postings p ON p.namespace = $1 AND p.term = q.term WHERE NOT ${p.newest}
      GROUP BY p.seq ORDER BY sum(q.idf * p.tf / (p.tf + ${p.a} + ${p.b} * p.doc_len)) DESC, p.seq DESC LIMIT ${RANKED_ROWS}),
    newest AS (SELECT s.seq FROM (SELECT p.seq, p.tf, p.doc_len FROM stablemem.postings p WHERE ${p.newest} AND p.namespace = $1 AND p.term = ${p.first} ORDER BY p.seq DESC LIMIT ${CANDIDATES}) s
      ORDER BY s.tf / (s.tf + ${p.a} + ${p.b} * s.doc_len) DESC, s.seq DESC LIMIT ${RANKED_ROWS}),
    exact AS (SELECT x.seq FROM unnest(${p.exact}) AS e(term) CROSS JOIN LATERAL (SELECT p.seq FROM stablemem.postings p
      WHERE p.namespace = $1 AND p.term = e.term ORDER BY p.tf / (p.tf + ${p.a} + ${p.b} * p.doc_len) DESC, p.seq DESC LIMIT ${EXACT_ROWS}) x)`
}
/** The candidates' notes, from `candidateSearch`. */
const CANDIDATE_NOTES = `FROM stablemem.notes n WHERE n.namespace = $1 AND n.seq = ANY (ARRAY(SELECT seq FROM ranked UNION SELECT seq FROM newest UNION SELECT seq FROM exact))`
/** Which of the local ids `ids` a current team note supersedes (`supersedes <> ''` is the partial index's predicate). */
const supersededAmong = (ids: string) => `ARRAY(SELECT supersedes FROM stablemem.notes WHERE namespace = $1 AND supersedes <> '' AND supersedes = ANY(${ids}) AND superseded_by IS NULL)`

/**
 * A recall in one round trip, prepared once per connection (node-postgres names it): the counts
 * of `STATS`, then the search terms chosen on the server from the document frequencies it just
 * read, by `searchTerms`' rule, then the candidates ranked with them. The client sends every
 * Latin word and CJK bigram of the query that could be searched (`termPlan`): its key ($6), its
 * place among them in alphabetical order ($7, the tie-break, ranked by the client so no collation
 * is involved), its place in the OR list's order ($8) and how often it is listed there ($9); the
 * exact symbols' single-token keys and their places in that list ($10, $11) and how many places
 * the exact symbols take ($12). The server keeps the rarest held terms while their postings fit
 * in `SEARCH_POSTINGS`, at most `MAX_SEARCH_TERMS`, lists them up to `MAX_MATCH_TERMS` as
 * `matchAny` does, and sums each key's IDF per listing, as the client would. The counts row
 * returns what it chose (keys in the OR list's order, listings, whether the lone term is past the
 * bound), so the client checks it against its own choice over the same frequencies and asks
 * `CANDIDATES_SQL` with its own when they differ. Rows: `kind` 0 the counts, 1 a phrase holder,
 * 2 a candidate.
 */
const RECALL = {
  name: 'stablemem.recall.one',
  text: `WITH ${PHRASE_CTES},
    st AS (SELECT notes, tokens FROM stablemem.stats WHERE namespace = $1),
    dfs AS (SELECT term, df FROM stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[])),
    held_terms AS (SELECT u.key, u.r, u.o, u.w, d.df FROM unnest($6::text[], $7::int[], $8::int[], $9::int[]) AS u(key, r, o, w) JOIN dfs d ON d.term = u.key WHERE d.df > 0),
    by_rarity AS (SELECT h.*, row_number() OVER r AS i, sum(h.df) OVER r AS postings FROM held_terms h WINDOW r AS (ORDER BY h.df, h.r ROWS UNBOUNDED PRECEDING)),
    kept AS (SELECT * FROM by_rarity WHERE i <= least(${MAX_SEARCH_TERMS}, greatest(1, (SELECT count(*) FROM by_rarity WHERE postings <= ${SEARCH_POSTINGS})))),
    listed AS (SELECT key, o, df, least(w, greatest(0, ${MAX_MATCH_TERMS} - $12::int - (sum(w) OVER (ORDER BY o ROWS UNBOUNDED PRECEDING) - w)))::int AS n FROM kept),
    listing AS (SELECT e.key, e.pos, 1 AS n, coalesce(d.df, 0) AS df FROM unnest($10::text[], $11::int[]) AS e(key, pos) LEFT JOIN dfs d ON d.term = e.key
      UNION ALL SELECT l.key, $12::int + l.o, l.n, l.df FROM listed l WHERE l.n > 0),
    q AS (SELECT l.key AS term, min(l.pos) AS pos, sum(l.n)::int AS n, sum(l.n) * min(CASE WHEN v.x <= 1 THEN 1e-6::float8 ELSE ln(v.x) END) AS idf
      FROM listing l CROSS JOIN LATERAL (SELECT (st.notes::float8 - l.df + 0.5) / (l.df + 0.5) AS x FROM st) v GROUP BY l.key),
    flag AS (SELECT coalesce(sum(df), 0) > ${SEARCH_POSTINGS} AS newest FROM kept),
    ${candidateSearch({ newest: '(SELECT newest FROM flag)', first: '(SELECT term FROM q ORDER BY pos LIMIT 1)', exact: '$15::text[]', a: '$13::float8', b: '(SELECT CASE WHEN st.notes > 0 AND st.tokens > 0 THEN $14::float8 / (st.tokens::float8 / st.notes) ELSE 0 END FROM st)' })}
    SELECT 0 AS kind, NULL::int AS ph, ${countColumns('dfs', 'st')}, (SELECT array_agg(term ORDER BY pos) FROM q) AS qkeys, (SELECT array_agg(n ORDER BY pos) FROM q) AS qn,
      (SELECT newest FROM flag) AS newest, ${supersededAmong('$16::text[]')} AS superseded, ${NO_NOTE}
    UNION ALL ${PHRASE_HOLDERS}
    UNION ALL SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${NOTE_COLUMNS} ${CANDIDATE_NOTES}`,
}

/**
 * The counts alone, the first of two round trips: what `RECALL` reads before choosing, for a
 * query whose choice the server cannot make (`termPlan`) and for measuring the two paths
 * against each other. Rows as `RECALL`'s, without candidates.
 */
const STATS = {
  name: 'stablemem.recall.stats',
  text: `WITH ${PHRASE_CTES}
    SELECT 0 AS kind, NULL::int AS ph, ${countColumns('stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[])', 'stablemem.stats WHERE namespace = $1')}, NULL::text[] AS qkeys, NULL::int[] AS qn, NULL::boolean AS newest, NULL::text[] AS superseded, ${NO_NOTE}
    UNION ALL ${PHRASE_HOLDERS}`,
}
/** A row of `RECALL` or `STATS` (`rowMode: 'array'`; bigints as strings). */
type RecallRow = [kind: number, ph: number | null, n1: string | null, n2: string | null, df: string | null, sup: string[] | null,
  qkeys: string[] | null, qn: number[] | null, newest: boolean | null, superseded: string[] | null, ...note: DbRow]

/**
 * The candidates with the search terms the client chose: $2/$3 the OR search's term keys and
 * their IDFs, $4 whether its lone term is past the postings bound, $5 the exact symbols' keys,
 * $6/$7 bm25's length normalisation. The rows are the candidates' notes, and one row with `seq`
 * null holding which of the local ids $8 a current team note supersedes.
 */
const CANDIDATES_SQL = {
  name: 'stablemem.recall.candidates',
  text: `WITH q AS (SELECT * FROM unnest($2::text[], $3::float8[]) AS q(term, idf)),
    ${candidateSearch({ newest: '$4', first: '($2::text[])[1]', exact: '$5::text[]', a: '$6::float8', b: '$7::float8' })}
    SELECT ${NOTE_COLUMNS}, NULL::text[] AS superseded ${CANDIDATE_NOTES}
    UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${supersededAmong('$8::text[]')}`,
}
const SUPERSEDED = {
  name: 'stablemem.recall.superseded',
  text: `SELECT array_agg(supersedes) AS superseded FROM stablemem.notes WHERE namespace = $1 AND supersedes <> '' AND supersedes = ANY($2::text[]) AND superseded_by IS NULL`,
}

/** Thrown by `teamRecall` when its deadline passed: the caller has stopped waiting, so the scoring is skipped. */
export class TeamRecallLate extends Error {}

/**
 * What a team recall knows of the local recall running beside it (`layer.ts`): `now()` is its
 * hits' ids once it is done, undefined before; `done` resolves with them. The team recall checks
 * them for team notes that supersede them.
 */
export interface LocalIds {
  now(): readonly string[] | undefined
  done: PromiseLike<readonly string[]>
}

/** For a team recall with no local recall beside it. */
export const NO_LOCAL: LocalIds = { now: () => [], done: Promise.resolve([]) }

/** How `teamRecall` asks the server. */
export interface TeamRecallOptions {
  /** The counts and the candidates in two round trips, the terms chosen here (what the one-statement path falls back to); for measurements and tests. */
  twoStatements?: boolean
}

/**
 * What the server needs to choose the search terms as `searchTerms` would (`RECALL`): every word
 * and bigram of the query that can be held, with its key, tie-break rank, place and listings in
 * `matchAny`'s order; the exact symbols' single-token keys with their places. Undefined when a
 * word is several tokens (its count is a phrase's, which the server's choice does not read):
 * the query is asked in two statements. The query's analysis before `specificTerms` is the
 * right input: keeping the rarest 64 bigrams and 32 words cannot drop any of the at most
 * `MAX_SEARCH_TERMS` rarest of all, so it changes nothing the server chooses.
 */
interface TermPlan { keys: string[], ties: number[], order: number[], listings: number[], exactKeys: string[], exactAt: number[], exactListed: number }

function termPlan(full: QueryAnalysis): TermPlan | undefined {
  const terms = [...full.words.map((term) => ({ column: 'latin' as const, term })), ...full.cjkBigrams.map((term) => ({ column: 'cjk' as const, term }))]
    .map((t, i) => ({ ...t, i, weight: full.weights.get(t.term) ?? 1 }))
  // `matchAny`'s order: heaviest first, then as in the query.
  const byWeight = [...terms].sort((a, b) => b.weight - a.weight || a.i - b.i)
  const order = new Map(byWeight.map((t, o) => [t, o]))
  const alphabetical = new Map([...terms].sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0)).map((t, r) => [t, r]))
  const plan: TermPlan = { keys: [], ties: [], order: [], listings: [], exactKeys: [], exactAt: [], exactListed: Math.min(full.exact.length, MAX_MATCH_TERMS) }
  for (const t of terms) {
    const tokens = parseMatch(`${t.column} : ${quoteTerm(t.term)}`)[0]?.tokens ?? []
    if (t.column === 'latin' && tokens.length > 1) return undefined
    // A bigram counts only as the one token it is (`TeamSnapshot.cjkDocumentFrequencies`); a term of no token is in no note.
    if (tokens.length !== 1 || (t.column === 'cjk' && tokens[0] !== t.term)) continue
    plan.keys.push(termKey(t.column, tokens[0]!))
    plan.ties.push(alphabetical.get(t)!)
    plan.order.push(order.get(t)!)
    plan.listings.push(Math.max(0, Math.ceil(t.weight)))
  }
  full.exact.slice(0, MAX_MATCH_TERMS).forEach((symbol, at) => {
    const phrase = parseMatch(matchPhrase(symbol))[0]
    if (phrase?.tokens.length === 1) { plan.exactKeys.push(termKey('latin', phrase.tokens[0]!)); plan.exactAt.push(at) }
  })
  return plan
}

/** The search terms as the client chooses them over a snapshot's counts: the OR search's keys with their IDFs and listings, in its order. */
interface Choice { weights: Map<string, number>, listings: Map<string, number>, newest: boolean }

function chooseTerms(snapshot: TeamSnapshot, full: QueryAnalysis, notes: number, counts: ReadonlyMap<string, number>): Choice {
  const analysis = specificTerms(snapshot, full)
  const kept = searchTerms(snapshot, analysis)
  const weights = new Map<string, number>() // term key → its IDF, once per listing in the OR
  const listings = new Map<string, number>()
  for (const p of parseMatch(matchAny(kept))) {
    if (p.tokens.length !== 1) continue
    const key = termKey(p.column, p.tokens[0]!)
    weights.set(key, (weights.get(key) ?? 0) + idf(notes, counts.get(key) ?? 0))
    listings.set(key, (listings.get(key) ?? 0) + 1)
  }
  let postings = 0
  for (const n of snapshot.cjkDocumentFrequencies(kept.cjkBigrams).values()) postings += n
  for (const word of kept.words) postings += snapshot.matchCount(matchPhrase(word))
  return { weights, listings, newest: postings > SEARCH_POSTINGS }
}

/** Whether the server chose what the client chose: the same keys in the same order, listed as often, and the same mode. */
function sameChoice(choice: Choice, keys: readonly string[] | null, listings: readonly number[] | null, newest: boolean | null): boolean {
  const mine = [...choice.listings]
  const theirs = keys ?? []
  return newest === choice.newest && mine.length === theirs.length && mine.every(([key, n], i) => theirs[i] === key && listings?.[i] === n)
}

/**
 * Runs one team recall on a connected client: in one round trip (`RECALL`), or in two when the
 * server's choice of search terms is not the client's (counted in `fallback`) or cannot be made
 * (`termPlan`). The local ids known when it starts are sent with it; when the local recall is
 * not done by then and the namespace has too many superseded notes to send them all, its ids
 * are awaited at the end (within the deadline) and asked about in one more statement.
 * Past `deadline` (a `performance.now()` time) it stops before its next step: scoring a result
 * nobody waits for would only take CPU from the turn.
 */
export async function teamRecall(client: pg.ClientBase, namespace: string, query: string, topK: number, local: LocalIds = NO_LOCAL, deadline = Infinity,
  options: TeamRecallOptions = {}): Promise<TeamResult> {
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

  const phraseList = [...new Set(multi)].slice(0, MAX_PHRASES).map(tokens)
  const phraseOf: number[] = []
  const phraseTokens: string[] = []
  phraseList.forEach((phrase, i) => {
    for (const token of phrase) { phraseOf.push(i + 1); phraseTokens.push(termKey('latin', token)) }
  })
  const plan = options.twoStatements === true ? undefined : termPlan(full)
  // The server reads each key's frequency once (`dfs`): the keys it chooses among are asked for with the rest.
  for (const key of [...plan?.keys ?? [], ...plan?.exactKeys ?? []]) single.add(key)
  const counting = [namespace, [...single], phraseOf, phraseTokens, phraseList.map((p) => ` ${p.join(' ')} `)]
  const exactKeys = exactKeysOf(full)
  // The local ids known now go with the first statement; they are needed only past `SUPERSEDED_SET`.
  const ids = local.now()
  const first = plan === undefined
    ? await client.query<RecallRow>({ ...STATS, rowMode: 'array', values: counting })
    : await client.query<RecallRow>({ ...RECALL, rowMode: 'array', values: [...counting, plan.keys, plan.ties, plan.order, plan.listings, plan.exactKeys, plan.exactAt,
        plan.exactListed, K1 * (1 - B), K1 * B, exactKeys, [...ids ?? []]] })
  late()
  const [, , notesText, tokensText, df, supersededAll, serverKeys, serverListings, serverNewest, supersededSent] = first.rows[0]!
  const counts = new Map<string, number>(Object.entries(df === null ? {} : JSON.parse(df) as Record<string, number>))
  const notes = Number(notesText ?? 0)
  const tokenTotal = Number(tokensText ?? 0)
  const snapshot = new TeamSnapshot(notes, tokenTotal, counts)
  for (const phrase of phraseList) counts.set(phraseKey('latin', phrase), 0)
  const candidates: TeamRow[] = []
  for (const [kind, ph, n, rarest, , , , , , , ...note] of first.rows.slice(1)) {
    if (kind === 2) { candidates.push(fromDb(note)); continue }
    const phrase = phraseList[ph! - 1]!
    // Past the scan bound the count is the share of the rarest token's holders read, scaled up.
    counts.set(phraseKey('latin', phrase), Math.round(Number(n) * Math.max(1, Number(rarest) / PHRASE_SCAN)))
    snapshot.addRows([fromDb(note)])
  }
  if (snapshot.count() === 0) return { hits: [], heldSymbols: new Set(), supersededLocal: new Set(supersededAll ?? []), statements: 1, fallback: false }

  const choice = chooseTerms(snapshot, full, notes, counts)
  let statements = 1
  let fallback = false
  // What the candidates' statement said of the local ids it was sent (undefined: none were known).
  let supersededSeen = ids === undefined ? undefined : supersededSent
  if (plan !== undefined && sameChoice(choice, serverKeys, serverListings, serverNewest)) {
    snapshot.addRows(candidates)
  } else {
    fallback = plan !== undefined
    statements++
    const avgLength = notes > 0 ? tokenTotal / notes : 0
    const found = await client.query<DbRow>({ ...CANDIDATES_SQL, rowMode: 'array', values: [namespace, [...choice.weights.keys()], [...choice.weights.values()],
      choice.newest, exactKeys, K1 * (1 - B), avgLength > 0 ? K1 * B / avgLength : 0, [...ids ?? []]] })
    late()
    if (ids !== undefined) supersededSeen = found.rows.find((r) => r[0] === null)?.[8] ?? []
    snapshot.addRows(found.rows.filter((r) => r[0] !== null).map(fromDb))
  }
  const hits = recallBlocks(snapshot, query, { topK, abstain: false }).map((h): TeamHit => {
    const row = snapshot.row(h.id)!
    return { ...h, team: { member: row.member, savedAt: row.createdAt } }
  })
  const heldSymbols = new Set(decisive.filter((d) => {
    const variants = /^v\d/.test(d) ? [d, d.slice(1)] : symbolVariants(d)
    return variants.some((v) => snapshot.matchCount(matchPhrase(v)) > 0)
  }))
  let superseded = supersededAll ?? supersededSeen
  if (superseded === undefined) {
    // Past the bound, and the local recall was not done when the recall started: wait for it (within the deadline), then ask.
    const after = await untilLate(local.done, deadline)
    late()
    superseded = after.length === 0 ? [] : (await client.query<{ superseded: string[] | null }>({ ...SUPERSEDED, values: [namespace, [...after]] })).rows[0]!.superseded ?? []
    if (after.length > 0) statements++
  }
  return { hits, heldSymbols, supersededLocal: new Set(superseded ?? []), statements, fallback }
}

/** The single-token keys of every spelling of the query's exact symbols: each one's best holders are candidates. */
function exactKeysOf(full: QueryAnalysis): string[] {
  const keys = new Set<string>()
  for (const symbol of full.exact) {
    for (const variant of symbolVariants(symbol)) {
      const phrase = parseMatch(matchPhrase(variant))[0]
      if (phrase?.tokens.length === 1) keys.add(phraseKey(phrase.column, phrase.tokens))
    }
  }
  return [...keys]
}

/** `done`'s value, or nothing once `deadline` (a `performance.now()` time) passed. */
async function untilLate(done: PromiseLike<readonly string[]>, deadline: number): Promise<readonly string[]> {
  if (deadline === Infinity) return await done
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<readonly string[]>((resolve) => { timer = setTimeout(() => resolve([]), Math.max(0, deadline - performance.now())) })
  try {
    return await Promise.race([done, late])
  } finally {
    clearTimeout(timer)
  }
}
