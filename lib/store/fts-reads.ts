/**
 * Reads of the full-text index for recall: ranked candidates, match counts (a term's document
 * frequency, which recall turns into IDF weights), CJK bigram frequencies and "does any note hold
 * this". The counts are cached until the next write by any connection (`PRAGMA data_version`),
 * so a store read far more than written pays once per term. Every MATCH expression comes from
 * `lib/recall/fts-query.ts`, which quotes every term; user text never reaches MATCH directly.
 */
import type { StatementSync } from 'node:sqlite'
import type { FtsCandidate } from './types.ts'

/** Distinct FTS expressions whose match counts are kept between writes. */
const MATCH_COUNT_CACHE = 50_000

/** What the index reads need from the store that owns the connection. */
export interface FtsReadHost {
  stmt(key: string, sql: string): StatementSync
  /** Runs SQL with no result (the vocabulary table is created once per connection). */
  exec(sql: string): void
  /** SQLite's `data_version`: changes when another connection writes the file. */
  dataVersion(): number
}

/** The index reads of one connection, with their count cache. */
export class FtsReads {
  private readonly host: FtsReadHost
  private readonly matchCounts = new Map<string, number>()
  private matchCountsVersion = -1
  private vocabReady = false

  constructor(host: FtsReadHost) {
    this.host = host
  }

  /** Empties the count cache: this connection wrote (its own writes do not change `data_version`). */
  forgetCounts(): void {
    this.matchCounts.clear()
  }

  /**
   * Runs an FTS5 MATCH expression and returns up to `limit` candidates by bm25 with the given
   * column weights (or the newest `limit`, with theirs). The expression must come from `lib/recall/fts-query.ts`, which quotes
   * every term; user text never reaches MATCH directly.
   */
  candidates(match: string, limit: number, weights: readonly [number, number], newest: boolean): FtsCandidate[] {
    // `newest`: the latest `limit` matches (FTS5 walks the postings from the end and stops), each
    // with its bm25, instead of scoring every match to keep the best: a lone very common term.
    const sql = `SELECT rowid, bm25(blocks_fts, ?, ?) AS bm25 FROM blocks_fts WHERE blocks_fts MATCH ? ORDER BY ${newest ? 'rowid DESC' : 'bm25'} LIMIT ?`
    const rows = this.host.stmt(newest ? 'ftsNewest' : 'fts', sql).all(weights[0], weights[1], match, limit) as Array<{ rowid: number, bm25: number }>
    return rows.map((r) => ({ rowid: Number(r.rowid), bm25: Number(r.bm25) }))
  }

  /**
   * How many blocks match an FTS5 expression (from `lib/recall/fts-query.ts`): a term's document
   * frequency, which recall turns into IDF weights. Cached until the next write by this or any
   * other connection (`PRAGMA data_version`), so a store read far more than written pays once per term.
   */
  matchCount(match: string): number {
    const counts = this.freshMatchCounts()
    const cached = counts.get(match)
    if (cached !== undefined) return cached
    const row = this.host.stmt('matchCount', 'SELECT count(*) AS n FROM blocks_fts WHERE blocks_fts MATCH ?').get(match) as { n: number }
    return this.rememberCount(match, Number(row.n))
  }

  /**
   * How many blocks contain each of these CJK bigrams (document frequency in the `cjk` column);
   * absent bigrams map to 0. Bigrams not yet cached are read from the FTS index's vocabulary in
   * one statement, and all are cached like `matchCount`, so a query whose bigrams were seen
   * before costs no SQL. Recall uses it to keep a query's most specific bigrams.
   */
  cjkDocumentFrequencies(bigrams: readonly string[]): Map<string, number> {
    const counts = this.freshMatchCounts()
    const out = new Map<string, number>()
    const missing: string[] = []
    for (const bigram of bigrams) {
      const cached = counts.get(cjkCountKey(bigram))
      if (cached !== undefined) out.set(bigram, cached)
      else missing.push(bigram)
    }
    if (missing.length === 0) return out
    if (!this.vocabReady) {
      this.host.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stablemem_vocab USING fts5vocab(main, 'blocks_fts', 'col')")
      this.vocabReady = true
    }
    const rows = this.host.stmt('vocab', `SELECT term, doc FROM temp.stablemem_vocab
      WHERE col = 'cjk' AND term IN (SELECT value FROM json_each(?))`).all(JSON.stringify(missing))
    const found = new Map(rows.map((row) => [String(row.term), Number(row.doc)]))
    for (const bigram of missing) out.set(bigram, this.rememberCount(cjkCountKey(bigram), found.get(bigram) ?? 0))
    return out
  }

  /**
   * Rowids of up to `limit` blocks matching an FTS5 expression (from `lib/recall/fts-query.ts`),
   * unranked: the cheapest "does any note hold this" the index answers (it stops at the first).
   * Fewer than `limit` rows are all the matches, so their number is cached as `matchCount`'s.
   */
  rowids(match: string, limit: number): number[] {
    // No version check here: every reader of the cache checks it first, and clears what was cached before a write.
    const rowids = this.host.stmt('ftsRowids', 'SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT ?').all(match, limit).map((r) => Number(r.rowid))
    if (rowids.length < limit) this.rememberCount(match, rowids.length)
    return rowids
  }

  /** The document-frequency cache, emptied first if any connection wrote since it was filled. */
  private freshMatchCounts(): Map<string, number> {
    const version = this.host.dataVersion()
    if (version !== this.matchCountsVersion) {
      this.matchCounts.clear()
      this.matchCountsVersion = version
    }
    return this.matchCounts
  }

  /** Caches one document frequency (bounded: the cache starts over when full) and returns it. */
  private rememberCount(key: string, n: number): number {
    if (this.matchCounts.size >= MATCH_COUNT_CACHE) this.matchCounts.clear()
    this.matchCounts.set(key, n)
    return n
  }
}

/** Cache key of a CJK bigram's document frequency; the NUL keeps it apart from every MATCH expression. */
function cjkCountKey(bigram: string): string {
  return `cjk\0${bigram}`
}
