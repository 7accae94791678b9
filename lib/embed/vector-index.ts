import type { BlockStore } from '../store/store.ts'
import type { StoredVector } from '../store/vectors.ts'
import { centre, usableCentroid } from './centroid.ts'
import { Int8Rows } from './int8-rows.ts'
import { SignCodes } from './sign-codes.ts'

/** Rows read per query while loading. */
const PAGE = 4096

/**
 * From this many vectors on, `search` is staged (sign codes, int8, exact re-rank); below it the
 * exact scan costs a few ms (≈4 ms at 10k × 512) and is used as it is. Measured in bench:vectors.
 */
export const APPROXIMATE_FROM = 10_000
/** Smallest shortlist by sign code, whatever k (docs/benchmarks.md, "Vectors at 100k"). */
export const SHORTLIST_MIN = 2048
/** Shortlist rows per requested neighbour, when that is more than `SHORTLIST_MIN`. */
export const SHORTLIST_PER_K = 16
/** Smallest number of shortlisted rows, best by int8 dot product, re-ranked with the exact cosine. */
export const RERANK_MIN = 256
/** Exactly re-ranked rows per requested neighbour, when that is more than `RERANK_MIN`. */
export const RERANK_PER_K = 4

/** How one index searches; the defaults are the measured choice. */
export interface VectorIndexOptions {
  /** Vector count from which `search` is approximate (default `APPROXIMATE_FROM`; Infinity: always exact). */
  approximateFrom?: number
  /** Smallest shortlist (default `SHORTLIST_MIN`). */
  shortlistMin?: number
  /** Smallest exact re-rank (default `RERANK_MIN`). */
  rerankMin?: number
}

/** A nearest-neighbour hit: block id and cosine (centred when the centroid is in use). */
export interface VectorHit {
  id: string
  score: number
}

/**
 * Cosine search over one contiguous Float32Array per vector space (model, dims), loaded from the
 * store once and then extended with only the vectors written since (by `seq`). Rows are stored
 * centred when the centroid is in use; a change of that decision, or a forget, reloads the space.
 * Two paths: the exact brute-force scan (`searchExact`; chosen over sqlite-vec by measurement,
 * docs/embeddings.md), and from `APPROXIMATE_FROM` vectors on a staged search (`search`): a shortlist
 * by one-bit sign codes against the query's weighted signs, its best rows by int8 dot product, and
 * those re-ranked with the exact cosine, the first two as WebAssembly SIMD kernels (chosen over a
 * native HNSW index and over a plain-JS Hamming pass by measurement, docs/decisions.md D14, D15).
 * All of it lives in memory only: nothing outlives a forgotten note's vector row.
 */
export class VectorIndex {
  readonly model: string
  readonly dims: number
  private data = new Float32Array(0)
  private ids: string[] = []
  private rowOf = new Map<string, number>()
  private langs: string[] = []
  private lastSeq = 0
  private centroid: Float32Array | null = null
  private forgetEpoch = 0
  private signs: SignCodes
  private int8: Int8Rows
  private readonly approximateFrom: number
  private readonly shortlistMin: number
  private readonly rerankMin: number

  constructor(model: string, dims: number, options: VectorIndexOptions = {}) {
    this.model = model
    this.dims = dims
    this.signs = new SignCodes(dims)
    this.int8 = new Int8Rows(dims)
    this.approximateFrom = options.approximateFrom ?? APPROXIMATE_FROM
    this.shortlistMin = options.shortlistMin ?? SHORTLIST_MIN
    this.rerankMin = options.rerankMin ?? RERANK_MIN
  }

  /** Number of vectors loaded. */
  get size(): number {
    return this.ids.length
  }

  /** True when centring is in use. */
  get centred(): boolean {
    return this.centroid !== null
  }

  /** Loads vectors written since the last refresh; reloads everything if the centroid decision changed or notes were forgotten. */
  refresh(store: BlockStore): void {
    const centroid = usableCentroid(store, this.model, this.dims)
    // Forgotten notes' vectors must leave memory too, not only the file.
    if (!sameVector(centroid, this.centroid) || store.forgetEpoch !== this.forgetEpoch) {
      this.centroid = centroid
      this.forgetEpoch = store.forgetEpoch
      this.data = new Float32Array(0)
      this.ids = []
      this.rowOf = new Map()
      this.langs = []
      this.lastSeq = 0
      this.signs = new SignCodes(this.dims)
      this.int8 = new Int8Rows(this.dims)
    }
    const dims = this.dims
    for (let page = store.vectors.since(this.model, dims, this.lastSeq, PAGE); page.length > 0; page = store.vectors.since(this.model, dims, this.lastSeq, PAGE)) {
      for (const row of page) this.append(row)
    }
  }

  /** Copies one stored row into the contiguous array (centred when the centroid is in use). */
  private append(row: StoredVector): void {
    const dims = this.dims
    const bytesPerRow = dims * 4
    this.lastSeq = row.seq
    if (row.vector.byteLength !== bytesPerRow) return
    const n = this.ids.length
    if ((n + 1) * dims > this.data.length) {
      const grown = new Float32Array(Math.max(dims * 1024, this.data.length * 2))
      grown.set(this.data)
      this.data = grown
    }
    new Uint8Array(this.data.buffer, n * bytesPerRow, bytesPerRow).set(row.vector)
    if (this.centroid) this.data.set(centre(this.data.subarray(n * dims, (n + 1) * dims), this.centroid), n * dims)
    this.rowOf.set(row.blockId, n)
    this.ids.push(row.blockId)
    this.langs.push(row.lang)
  }

  /**
   * Cosine of the query to each of these blocks (same centring as `search`); blocks without a
   * vector, or whose language fails `allow`, are left out.
   */
  scoreIds(query: Float32Array, ids: readonly string[], allow: (lang: string) => boolean): Map<string, number> {
    const out = new Map<string, number>()
    if (query.length !== this.dims) return out
    const q = this.centroid ? centre(query, this.centroid) : query
    const dims = this.dims
    for (const id of ids) {
      const r = this.rowOf.get(id)
      if (r === undefined || !allow(this.langs[r]!)) continue
      let s = 0
      for (let i = 0, off = r * dims; i < dims; i++) s += this.data[off + i]! * q[i]!
      out.set(id, s)
    }
    return out
  }

  /**
   * The `k` nearest blocks to a unit query vector that pass `allow` (language, and block id for a
   * scope filter; asked only of rows that would enter the top k), best first. From `approximateFrom`
   * vectors on, only a shortlist by sign code (at least `shortlistMin`, or 16 per k, rows) is scored
   * in int8, and only its best (at least `rerankMin`, or 4 per k, rows) by the exact cosine; when
   * fewer than `k` of those pass `allow` (a narrow scope), the exact scan answers instead.
   */
  search(query: Float32Array, k: number, allow: (lang: string, id: string) => boolean): VectorHit[] {
    if (query.length !== this.dims || k <= 0) return []
    const q = this.centroid ? centre(query, this.centroid) : query
    const n = this.ids.length
    if (n >= this.approximateFrom) {
      this.signs.sync(this.data, n)
      this.int8.sync(this.data, n)
      const shortlist = this.signs.nearest(q, Math.max(this.shortlistMin, SHORTLIST_PER_K * k))
      const rerank = this.int8.best(q, shortlist, Math.max(this.rerankMin, RERANK_PER_K * k))
      const hits = this.scan(q, k, allow, rerank)
      if (hits.length >= Math.min(k, n) || rerank.length === n) return hits
    }
    return this.scan(q, k, allow, null)
  }

  /** `search` by the exact brute-force scan of every row, whatever the size. */
  searchExact(query: Float32Array, k: number, allow: (lang: string, id: string) => boolean): VectorHit[] {
    if (query.length !== this.dims || k <= 0) return []
    return this.scan(this.centroid ? centre(query, this.centroid) : query, k, allow, null)
  }

  /** The top k of these rows (all rows when null) by dot product with the (centred) query. */
  private scan(q: Float32Array, k: number, allow: (lang: string, id: string) => boolean, rows: Int32Array | null): VectorHit[] {
    const dims = this.dims
    const data = this.data
    const count = rows === null ? this.ids.length : rows.length
    const topIdx = new Int32Array(k).fill(-1)
    const topScore = new Float64Array(k).fill(-Infinity)
    let worst = -Infinity
    const tail = dims - (dims % 4)
    for (let j = 0; j < count; j++) {
      const r = rows === null ? j : rows[j]!
      const off = r * dims
      // Four independent sums: measured ≈1.3× faster than one running sum in V8.
      let s0 = 0
      let s1 = 0
      let s2 = 0
      let s3 = 0
      for (let i = 0; i < tail; i += 4) {
        s0 += data[off + i]! * q[i]!
        s1 += data[off + i + 1]! * q[i + 1]!
        s2 += data[off + i + 2]! * q[i + 2]!
        s3 += data[off + i + 3]! * q[i + 3]!
      }
      for (let i = tail; i < dims; i++) s0 += data[off + i]! * q[i]!
      const s = s0 + s1 + s2 + s3
      if (!(s > worst)) continue
      if (!allow(this.langs[r]!, this.ids[r]!)) continue
      let p = k - 1
      while (p > 0 && topScore[p - 1]! < s) {
        topScore[p] = topScore[p - 1]!
        topIdx[p] = topIdx[p - 1]!
        p--
      }
      topScore[p] = s
      topIdx[p] = r
      worst = topScore[k - 1]!
    }
    const out: VectorHit[] = []
    for (let p = 0; p < k && topIdx[p]! >= 0; p++) out.push({ id: this.ids[topIdx[p]!]!, score: topScore[p]! })
    return out
  }
}

const indexes = new WeakMap<BlockStore, Map<string, VectorIndex>>()

/** The (cached, refreshed) index of one vector space of a store. */
export function vectorIndexFor(store: BlockStore, model: string, dims: number): VectorIndex {
  let perStore = indexes.get(store)
  if (!perStore) indexes.set(store, perStore = new Map())
  const key = `${dims}\u0000${model}`
  let index = perStore.get(key)
  if (!index) perStore.set(key, index = new VectorIndex(model, dims))
  index.refresh(store)
  return index
}

function sameVector(a: Float32Array | null, b: Float32Array | null): boolean {
  if (a === null || b === null) return a === b
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
