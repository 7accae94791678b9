import type { StatementSync } from 'node:sqlite'

/** One stored block vector. */
export interface StoredVector {
  seq: number
  blockId: string
  lang: string
  vector: Uint8Array
}

/** A block that has no vector yet for some model. */
export interface UnvectoredBlock {
  rowid: number
  id: string
  text: string
}

/** The stored library mean of one vector space. */
export interface StoredCentroid {
  vector: Uint8Array
  sampleCount: number
  builtAt: number
}

/** What `BlockStore` lends the vector table: its cached statements, transactions and clock. */
export interface VectorTableHost {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  now(): number
}

/**
 * The scene predecessor of a note. `p.scene <> ''` repeats what `b.scene <> ''` implies so the
 * partial index `blocks_scene` serves the join (scene = ? AND rowid < ?); without it SQLite walks
 * the rowids backwards, a scan of the library for a scene's first note and a quadratic backfill.
 */
export const SCENE_PREDECESSOR_SQL = `SELECT p.text AS text FROM blocks b
  JOIN blocks p ON p.scene = b.scene AND p.scene <> '' AND p.rowid < b.rowid AND p.superseded_by IS NULL
  WHERE b.id = ? AND b.scene <> '' ORDER BY p.rowid DESC LIMIT 1`

/**
 * The `vectors` and `centroids` tables. Every read and write names (model, dims), so vectors of
 * two models can never meet in one search. Vectors are plain float32 blobs; the maths lives in
 * `lib/embed/`.
 */
export class VectorTable {
  private readonly host: VectorTableHost

  constructor(host: VectorTableHost) {
    this.host = host
  }

  /** Stores vectors (one per block; an existing one is kept). Returns how many were new. */
  put(model: string, dims: number, rows: ReadonlyArray<{ blockId: string, lang: string, vector: Uint8Array }>): number {
    const insert = this.host.stmt('vec.put', `INSERT INTO vectors (block_id, model, dims, lang, vector, created_at)
      SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM blocks WHERE id = ?1) ON CONFLICT DO NOTHING`)
    const now = this.host.now()
    return this.host.transaction(() => {
      let added = 0
      for (const row of rows) added += Number(insert.run(row.blockId, model, dims, row.lang, row.vector, now).changes)
      return added
    })
  }

  /** Up to `limit` vectors of one space written after `afterSeq`, oldest first (page through large loads). */
  since(model: string, dims: number, afterSeq: number, limit: number): StoredVector[] {
    const rows = this.host.stmt('vec.since', 'SELECT seq, block_id, lang, vector FROM vectors WHERE model = ? AND dims = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(model, dims, afterSeq, limit) as Array<{ seq: number, block_id: string, lang: string, vector: Uint8Array }>
    return rows.map((r) => ({ seq: Number(r.seq), blockId: r.block_id, lang: r.lang, vector: r.vector }))
  }

  /** Up to `limit` blocks after `afterRowid` that have no vector in this space, by rowid. */
  missing(model: string, dims: number, afterRowid: number, limit: number): UnvectoredBlock[] {
    const rows = this.host.stmt('vec.missing', `SELECT b.rowid AS rowid, b.id AS id, b.text AS text FROM blocks b
      WHERE b.rowid > ? AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ? AND v.dims = ? AND v.block_id = b.id)
      ORDER BY b.rowid LIMIT ?`).all(afterRowid, model, dims, limit)
    return rows.map((r) => ({ rowid: Number(r.rowid), id: String(r.id), text: String(r.text) }))
  }

  /**
   * The text of the note saved just before this one in the same scene (highest lower rowid, not
   * superseded), or null when the note has no scene or opens it. The embedder reads a note with
   * it (`lib/embed/embed-text.ts`).
   */
  scenePredecessor(blockId: string): string | null {
    const row = this.host.stmt('vec.scenePredecessor', SCENE_PREDECESSOR_SQL).get(blockId) as { text: string } | undefined
    return row === undefined ? null : String(row.text)
  }

  /** How many vectors this space holds. */
  count(model: string, dims: number): number {
    const row = this.host.stmt('vec.count', 'SELECT count(*) AS n FROM vectors WHERE model = ? AND dims = ?').get(model, dims) as { n: number }
    return Number(row.n)
  }

  /** The stored centroid of this space, if any. */
  centroid(model: string, dims: number): StoredCentroid | undefined {
    const row = this.host.stmt('vec.centroid', 'SELECT vector, sample_count, built_at FROM centroids WHERE model = ? AND dims = ?').get(model, dims) as
      { vector: Uint8Array, sample_count: number, built_at: number } | undefined
    return row ? { vector: row.vector, sampleCount: Number(row.sample_count), builtAt: Number(row.built_at) } : undefined
  }

  /** Replaces the centroid of this space. */
  putCentroid(model: string, dims: number, vector: Uint8Array, sampleCount: number): void {
    this.host.stmt('vec.putCentroid', `INSERT INTO centroids (model, dims, vector, sample_count, built_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT(model, dims) DO UPDATE SET vector = excluded.vector, sample_count = excluded.sample_count, built_at = excluded.built_at`)
      .run(model, dims, vector, sampleCount, this.host.now())
  }
}
