import { DatabaseSync } from 'node:sqlite'

/**
 * The same-run floors: plain SQLite FTS5 BM25 over an OR of the query's terms, no stop words, on
 * a bare table that shares nothing with our store or recall code. The four tokenisations of
 * `../shared/eval/README.md`: `unicode61`, `porter` (unicode61 + English stemming), `trigram`
 * (FTS5's trigram tokenizer; the query's terms are the 3-character windows of its tokens, so
 * shorter tokens cannot match), and `cjk_bigram` (unicode61 over text whose CJK runs are rewritten
 * to overlapping 2-character tokens, at index and query time). Every figure the bench prints
 * reads as a gain over these.
 */

/** The floor variants the bench measures. */
export const FLOORS = ['unicode61', 'porter', 'trigram', 'cjk_bigram'] as const
/** One floor variant. */
export type FloorName = typeof FLOORS[number]

const CJK_RUN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+/gu
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu

/** A bare FTS5 table over one store's blocks. */
export class FloorIndex {
  private readonly db = new DatabaseSync(':memory:')
  private readonly floor: FloorName
  private readonly ids: string[] = []

  constructor(floor: FloorName, blocks: ReadonlyArray<{ id: string, text: string }>) {
    this.floor = floor
    const tokenize = floor === 'porter' ? 'porter unicode61' : floor === 'trigram' ? 'trigram' : 'unicode61'
    this.db.exec(`CREATE VIRTUAL TABLE f USING fts5(body, tokenize = '${tokenize}')`)
    const insert = this.db.prepare('INSERT INTO f (rowid, body) VALUES (?, ?)')
    this.db.exec('BEGIN')
    for (const block of blocks) {
      this.ids.push(block.id)
      insert.run(this.ids.length, this.rewrite(block.text))
    }
    this.db.exec('COMMIT')
  }

  /** The ids of the best `limit` blocks by bm25 for an OR of the query's tokens. */
  search(query: string, limit: number): string[] {
    const tokens = this.rewrite(query).toLowerCase().match(TOKEN) ?? []
    const terms = [...new Set(this.floor === 'trigram' ? tokens.flatMap(trigrams) : tokens)]
    if (terms.length === 0) return []
    const match = terms.map((t) => `"${t}"`).join(' OR ')
    const rows = this.db.prepare('SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f), rowid LIMIT ?').all(match, limit)
    return rows.map((r) => this.ids[Number(r.rowid) - 1]!)
  }

  /** Frees the table. */
  close(): void {
    this.db.close()
  }

  private rewrite(text: string): string {
    if (this.floor !== 'cjk_bigram') return text
    return text.replace(CJK_RUN, (run) => {
      const chars = Array.from(run)
      if (chars.length < 2) return ` ${run} `
      const grams: string[] = []
      for (let i = 0; i + 1 < chars.length; i++) grams.push(chars[i]! + chars[i + 1]!)
      return ` ${grams.join(' ')} `
    })
  }
}

/** The overlapping 3-character windows of a token (none for a shorter one). */
function trigrams(token: string): string[] {
  const chars = Array.from(token)
  const out: string[] = []
  for (let i = 0; i + 2 < chars.length; i++) out.push(chars[i]! + chars[i + 1]! + chars[i + 2]!)
  return out
}
