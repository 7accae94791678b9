import type pg from 'pg'
import { decisiveSymbols } from '../recall/abstain.ts'
import { matchAny, matchPhrase } from '../recall/fts-query.ts'
import { CANDIDATES, EXACT_CANDIDATES, recallBlocks, SEARCH_POSTINGS, searchTerms, specificTerms } from '../recall/recall.ts'
import { analyzeQuery, symbolVariants } from '../recall/symbols.ts'
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

/**
 * The statements of a recall, prepared once per connection (node-postgres names them). The first:
 * the counts, the document frequencies of the single-token keys $2, and the holders of each
 * multi-token phrase (`10.0.0.1`, `v2.3.1`: phrase $5[i] has the token keys $4 where $3 = i).
 * A phrase is looked up through the postings of its rarest token (an index range of the
 * primary key), the holders of its second rarest probed by key beside it; only the notes left
 * are read, and the phrase is confirmed on their packed tokens (` 10 0 0 1 ` in the Latin ones,
 * as FTS5 matches a phrase). A phrase with a token no note holds costs one index probe. At most
 * `PHRASE_SCAN` holders of the rarest token are read, the newest, and the count is scaled up
 * from them past that; per phrase the `PHRASE_ROWS` shortest holders come back, with the count.
 * (Earlier releases found phrases with `pg_trgm` over the text: 350 ms of server CPU per
 * digit-heavy symbol at 100k, whose trigrams every IP shares.) Row 1 has `ph` null and the
 * counts (and the superseded ids, `SUPERSEDED_SET`); each further row is a phrase holder.
 */
const STATS = {
  name: 'stablemem.recall.stats',
  text: `WITH pt AS (SELECT DISTINCT ph, term FROM unnest($3::int[], $4::text[]) AS u(ph, term)),
    rarity AS (SELECT pt.ph, pt.term, coalesce(t.df, 0) AS df, row_number() OVER (PARTITION BY pt.ph ORDER BY coalesce(t.df, 0), pt.term) AS r
      FROM pt LEFT JOIN stablemem.terms t ON t.namespace = $1 AND t.term = pt.term),
    phrase AS (SELECT f.i::int AS i, f.needle, r1.term AS t1, r1.df AS df1, r2.term AS t2 FROM unnest($5::text[]) WITH ORDINALITY AS f(needle, i)
      JOIN rarity r1 ON r1.ph = f.i AND r1.r = 1 LEFT JOIN rarity r2 ON r2.ph = f.i AND r2.r = 2 WHERE r1.df > 0),
    held AS (SELECT phrase.i, phrase.df1, n.seq, n.id, n.text, n.toks, n.member, n.created_at, n.scene, n.superseded_by FROM phrase
      CROSS JOIN LATERAL (SELECT s.seq FROM (SELECT p.seq FROM stablemem.postings p WHERE p.namespace = $1 AND p.term = phrase.t1 ORDER BY p.seq DESC LIMIT ${PHRASE_SCAN}) s
        WHERE phrase.t2 IS NULL OR EXISTS (SELECT 1 FROM stablemem.postings q WHERE q.namespace = $1 AND q.term = phrase.t2 AND q.seq = s.seq)) c
      JOIN stablemem.notes n ON n.namespace = $1 AND n.seq = c.seq
      WHERE strpos(' ' || split_part(n.toks, chr(1), 1) || ' ', phrase.needle) > 0),
    counted AS (SELECT held.*, count(*) OVER w AS n, row_number() OVER (w ORDER BY length(held.text), held.id) AS k FROM held WINDOW w AS (PARTITION BY held.i))
    SELECT NULL::int AS ph, (SELECT notes FROM stablemem.stats WHERE namespace = $1) AS n1, (SELECT tokens FROM stablemem.stats WHERE namespace = $1) AS n2,
      (SELECT json_object_agg(term, df) FROM stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[]))::text AS df,
      (SELECT CASE WHEN count(*) <= ${SUPERSEDED_SET} THEN coalesce(array_agg(s.supersedes) FILTER (WHERE s.superseded_by IS NULL), '{}') END
        FROM (SELECT supersedes, superseded_by FROM stablemem.notes WHERE namespace = $1 AND supersedes <> '' LIMIT ${SUPERSEDED_SET + 1}) s) AS sup,
      NULL::bigint AS seq, NULL AS id, NULL AS text, NULL AS toks, NULL AS member, NULL::bigint AS created_at, NULL AS scene, NULL AS superseded_by
    UNION ALL SELECT i, n, df1, NULL, NULL, seq, id, text, toks, member, created_at, scene, superseded_by FROM counted WHERE k <= ${PHRASE_ROWS}`,
}
/** A row of `STATS` (`rowMode: 'array'`; bigints as strings): the counts, or a phrase holder with its phrase's count. */
type StatsRow = [ph: number | null, n1: string | null, n2: string | null, df: string | null, sup: string[] | null, ...note: DbRow]

/**
 * The candidates: $2/$3 the OR search's term keys and their IDFs (summed over repeats), $4
 * whether its lone term is past the postings bound (then the newest holders of that term, $9, instead), $5 the
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
    newest AS (SELECT s.seq FROM (SELECT p.seq, p.tf, p.doc_len FROM stablemem.postings p WHERE $4 AND p.namespace = $1 AND p.term = $9::text ORDER BY p.seq DESC LIMIT ${CANDIDATES}) s
      ORDER BY s.tf / (s.tf + $6::float8 + $7::float8 * s.doc_len) DESC, s.seq DESC LIMIT ${RANKED_ROWS}),
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

/**
 * Runs one team recall on a connected client. The local ids are sent with the candidates when
 * the local recall is done by then; otherwise they are awaited at the end (within the deadline)
 * and asked about in one more statement.
 * Past `deadline` (a `performance.now()` time) it stops before its next step: scoring a result
 * nobody waits for would only take CPU from the turn.
 */
export async function teamRecall(client: pg.ClientBase, namespace: string, query: string, topK: number, local: LocalIds = NO_LOCAL, deadline = Infinity): Promise<TeamResult> {
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
  const stats = await client.query<StatsRow>({ ...STATS, rowMode: 'array', values: [namespace, [...single], phraseOf, phraseTokens, phraseList.map((p) => ` ${p.join(' ')} `)] })
  late()
  const [, notesText, tokensText, df, supersededAll] = stats.rows[0]!
  const counts = new Map<string, number>(Object.entries(df === null ? {} : JSON.parse(df) as Record<string, number>))
  const notes = Number(notesText ?? 0)
  const tokenTotal = Number(tokensText ?? 0)
  const snapshot = new TeamSnapshot(notes, tokenTotal, counts)
  for (const phrase of phraseList) counts.set(phraseKey('latin', phrase), 0)
  for (const [ph, n, rarest, , , ...note] of stats.rows.slice(1)) {
    const phrase = phraseList[ph! - 1]!
    // Past the scan bound the count is the share of the rarest token's holders read, scaled up.
    counts.set(phraseKey('latin', phrase), Math.round(Number(n) * Math.max(1, Number(rarest) / PHRASE_SCAN)))
    snapshot.addRows([fromDb(note)])
  }
  if (snapshot.count() === 0) return { hits: [], heldSymbols: new Set(), supersededLocal: new Set(supersededAll ?? []) }

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
  // Past the bound the search keeps one term beside the exact symbols, which the OR list names first.
  const lone = postings > SEARCH_POSTINGS ? parseMatch(matchAny({ ...kept, exact: [] })).find((p) => p.tokens.length === 1) : undefined
  const exactKeys = new Set<string>()
  for (const symbol of analysis.exact) {
    for (const variant of symbolVariants(symbol)) {
      const phrase = parseMatch(matchPhrase(variant))[0]
      if (phrase?.tokens.length === 1) exactKeys.add(phraseKey(phrase.column, phrase.tokens))
    }
  }
  // With the namespace's superseded ids known, the local ids are not needed at all.
  const ids = supersededAll !== null ? [] : local.now()
  const avgLength = notes > 0 ? tokenTotal / notes : 0
  const found = await client.query<DbRow>({ ...CANDIDATES_SQL, rowMode: 'array', values: [namespace, [...weights.keys()], [...weights.values()],
    postings > SEARCH_POSTINGS, [...exactKeys], K1 * (1 - B), avgLength > 0 ? K1 * B / avgLength : 0, [...ids ?? []],
    lone === undefined ? null : termKey(lone.column, lone.tokens[0]!)] })
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
  // Not done when the candidates were asked for: wait for the local recall (within the deadline), then ask.
  const after = ids !== undefined ? [] : await untilLate(local.done, deadline)
  late()
  const superseded = supersededAll ?? (after.length > 0 ? (await client.query<{ superseded: string[] | null }>({ ...SUPERSEDED, values: [namespace, [...after]] })).rows[0]!.superseded : answer?.[8])
  const supersededLocal = new Set(superseded ?? [])
  return { hits, heldSymbols, supersededLocal }
}

/**
 * `done`'s value, or nothing once `deadline` (a `performance.now()` time) has passed — not before:
 * a timer counts whole milliseconds of the event loop's time, so it fires up to a millisecond
 * before a `performance.now()` deadline (the recall would then carry on past its budget without
 * the local ids, instead of stopping); it is armed again for what is left.
 */
export async function untilLate(done: PromiseLike<readonly string[]>, deadline: number): Promise<readonly string[]> {
  if (deadline === Infinity) return await done
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<readonly string[]>((resolve) => {
    const wait = () => {
      const left = deadline - performance.now()
      if (left <= 0) resolve([])
      else timer = setTimeout(wait, Math.ceil(left))
    }
    wait()
  })
  try {
    return await Promise.race([done, late])
  } finally {
    clearTimeout(timer)
  }
}
