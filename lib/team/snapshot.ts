import type { RecallSource } from '../recall/source.ts'
import type { FtsCandidate } from '../store/fts-reads.ts'
import type { Block } from '../store/types.ts'
import { noteTokens, phraseHits, termKey, tokens, type Column, type NoteTokens } from './terms.ts'

/**
 * One query's view of the team layer, as the local recall reads a store (`RecallSource`): the
 * statistics fetched from PostgreSQL (note count, token total, document frequencies of the
 * query's terms, counts of its multi-token phrases) and the candidate rows. bm25 is computed here
 * exactly as FTS5 computes it (k1 1.2, b .75, IDF `ln((N − n + ½)/(n + ½))` floored at 1e-6, the
 * document length over both columns, one summand per listed phrase), so `recallBlocks` over a
 * snapshot ranks team notes the way it ranks a local store's.
 */

/** A team note as read from PostgreSQL. */
export interface TeamRow {
  /** Its insertion number in the namespace: "newest" means the highest, as a local rowid. */
  seq: number
  id: string
  text: string
  /** Its tokens as stored (`toks`); tokenised from the text when absent. */
  tokens?: NoteTokens
  member: string
  createdAt: number
  scene: string
  supersededBy: string | null
}

/** One phrase of a MATCH expression: its column and its tokens. */
interface Phrase {
  column: Column
  tokens: string[]
}

/** bm25's parameters, as FTS5 sets them (the server's prefilter ranks with the same, `search.ts`). */
export const K1 = 1.2
export const B = 0.75

/** A phrase's IDF among `notes` notes when `n` hold it, as FTS5 computes it. */
export function idf(notes: number, n: number): number {
  const value = Math.log((notes - n + 0.5) / (n + 0.5))
  return value <= 0 ? 1e-6 : value
}
const PHRASE = /(latin|cjk) : "((?:[^"]|"")*)"/g

/** The phrases of a MATCH expression built by `lib/recall/fts-query.ts`, repeats kept. */
export function parseMatch(match: string): Phrase[] {
  const out: Phrase[] = []
  for (const m of match.matchAll(PHRASE)) out.push({ column: m[1] as Column, tokens: tokens(m[2]!.replace(/""/g, '"')) })
  return out
}

/** The key of a phrase in the count maps. */
export function phraseKey(column: Column, phraseTokens: readonly string[]): string {
  return phraseTokens.length === 1 ? termKey(column, phraseTokens[0]!) : `${column}|${phraseTokens.join(' ')}`
}

/** A per-query snapshot of the team layer that the lexical recall reads. */
export class TeamSnapshot implements RecallSource {
  private readonly notes: number
  private readonly avgLength: number
  private readonly counts: Map<string, number>
  private readonly rows: TeamRow[] = []
  private readonly rowTokens: NoteTokens[] = []
  private readonly byId = new Map<string, number>()

  constructor(notes: number, totalTokens: number, counts: Map<string, number>) {
    this.notes = notes
    this.avgLength = notes > 0 ? totalTokens / notes : 0
    this.counts = counts
  }

  /** Adds candidate rows (a row seen twice is kept once). */
  addRows(rows: readonly TeamRow[]): void {
    for (const row of rows) {
      if (this.byId.has(row.id)) continue
      this.byId.set(row.id, this.rows.length)
      this.rows.push(row)
      this.rowTokens.push(row.tokens ?? noteTokens(row.text))
    }
  }

  /** The row with this id, if fetched. */
  row(id: string): TeamRow | undefined {
    const i = this.byId.get(id)
    return i === undefined ? undefined : this.rows[i]
  }

  count(): number {
    return this.notes
  }

  /** Notes holding the phrase: from PostgreSQL's statistics; a phrase they lack counts among the fetched rows. */
  private phraseCount(phrase: Phrase): number {
    const known = this.counts.get(phraseKey(phrase.column, phrase.tokens))
    if (known !== undefined) return known
    if (phrase.tokens.length === 1) return 0 // a term absent from the term table is in no note
    let n = 0
    for (const t of this.rowTokens) if (phraseHits(phrase.column === 'latin' ? t.latin : t.cjk, phrase.tokens) > 0) n++
    return n
  }

  matchCount(match: string): number {
    const phrases = parseMatch(match)
    if (phrases.length === 1) return this.phraseCount(phrases[0]!)
    let n = 0
    for (const t of this.rowTokens) if (phrases.some((p) => phraseHits(p.column === 'latin' ? t.latin : t.cjk, p.tokens) > 0)) n++
    return n
  }

  cjkDocumentFrequencies(bigrams: readonly string[]): Map<string, number> {
    const out = new Map<string, number>()
    for (const gram of bigrams) {
      const t = tokens(gram)
      out.set(gram, t.length === 1 && t[0] === gram ? (this.counts.get(termKey('cjk', gram)) ?? 0) : 0)
    }
    return out
  }

  /** Rows matching `match`, at most `limit`: abstention asks whether any note holds a typo neighbour. */
  ftsRowids(match: string, limit: number): number[] {
    return this.ftsCandidates(match, limit).map((c) => c.rowid)
  }

  /** As the store's: by bm25, or with `newest` the `limit` latest matches (by `seq`), each with its bm25. */
  ftsCandidates(match: string, limit: number, _weights?: readonly [number, number], newest = false): FtsCandidate[] {
    const phrases = parseMatch(match).filter((p) => p.tokens.length > 0)
    const weights = phrases.map((p) => idf(this.notes, this.phraseCount(p)))
    // Per column: token → indexes of the phrases that are that one token.
    const singles = { latin: new Map<string, number[]>(), cjk: new Map<string, number[]>() }
    phrases.forEach((p, i) => {
      if (p.tokens.length !== 1) return
      const column = singles[p.column]
      column.set(p.tokens[0]!, [...(column.get(p.tokens[0]!) ?? []), i])
    })
    const multi = phrases.map((p, i) => [p, i] as const).filter(([p]) => p.tokens.length > 1)
    const out: FtsCandidate[] = []
    const freq = new Float64Array(phrases.length)
    this.rowTokens.forEach((t, rowid) => {
      freq.fill(0)
      let matched = false
      const count = (column: Map<string, number[]>, seq: readonly string[]) => {
        if (column.size === 0) return
        for (const token of seq) {
          const hit = column.get(token)
          if (hit === undefined) continue
          matched = true
          for (const i of hit) freq[i]!++
        }
      }
      count(singles.latin, t.latin)
      count(singles.cjk, t.cjk)
      for (const [p, i] of multi) {
        const f = phraseHits(p.column === 'latin' ? t.latin : t.cjk, p.tokens)
        if (f > 0) { freq[i] = f; matched = true }
      }
      if (!matched) return
      const length = t.latin.length + t.cjk.length
      const norm = K1 * (1 - B + (this.avgLength > 0 ? B * length / this.avgLength : 0))
      let score = 0
      for (let i = 0; i < phrases.length; i++) {
        const f = freq[i]!
        if (f > 0) score += weights[i]! * (f * (K1 + 1)) / (f + norm)
      }
      out.push({ rowid, bm25: -score })
    })
    const byRank = (list: FtsCandidate[]) => list.sort((a, b) => a.bm25 - b.bm25 || a.rowid - b.rowid)
    if (!newest) return byRank(out).slice(0, limit)
    return byRank(out.sort((a, b) => this.rows[b.rowid]!.seq - this.rows[a.rowid]!.seq).slice(0, limit))
  }

  blocksByRowid(rowids: readonly number[]): Map<number, Block> {
    const out = new Map<number, Block>()
    for (const rowid of rowids) {
      const row = this.rows[rowid]
      if (!row) continue
      out.set(rowid, {
        id: row.id, text: row.text, source: '', scene: row.scene, semanticType: '', createdAt: row.createdAt, updatedAt: row.createdAt,
        accessCount: 0, lastAccessAt: null, supersededBy: row.supersededBy,
      })
    }
    return out
  }

  /** Team notes keep no access counts (they are the team's, not this agent's). */
  recordAccess(): void {}

  /** Team notes have no scopes: the namespace is the scope. These serve a scoped call as an unscoped one. */
  readonly scopes = {
    ftsCandidates: (match: string, limit: number, _scopes: readonly string[], _weights?: readonly [number, number], newest = false) => this.ftsCandidates(match, limit, undefined, newest),
    anyMatch: (match: string) => this.matchCount(match) > 0,
    visible: (ids: readonly string[]) => new Set(ids.filter((id) => this.byId.has(id))),
  }
}
