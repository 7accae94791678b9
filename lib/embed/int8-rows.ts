import { LANE_BYTES, laneAligned, SimdMemory } from './simd-kernels.ts'

/** The query is scaled to ±this (12 bits): fine enough that the rows' 8 bits dominate the error. */
const QUERY_RANGE = 2047

/**
 * An int8 copy of a vector space's float rows, each scaled by 127 / its largest component, for the
 * middle stage of approximate search: the int8 dot product ranks a sign-code shortlist almost as the
 * exact cosine does (recall@10 of the int8 ranking alone ≈ .97–.99, docs/benchmarks.md), at a
 * quarter of the bytes and 16 dimensions a SIMD instruction (`simd-kernels.ts`), so only its best
 * few rows need the exact float re-rank. Memory only, rebuilt from the float rows, like the codes.
 */
export class Int8Rows {
  readonly dims: number
  /** Bytes per row (a whole number of SIMD lanes). */
  private readonly stride: number
  private readonly simd = new SimdMemory()
  private rows = 0
  /** Per row, 1 / the scale it was stored at. */
  private unscale = new Float32Array(0)

  constructor(dims: number) {
    this.dims = dims
    this.stride = laneAligned(dims)
  }

  /** Rows held. */
  get size(): number {
    return this.rows
  }

  /** Quantises rows `[size, n)` of `data` (contiguous rows of `dims` floats). */
  sync(data: Float32Array, n: number): void {
    if (n < this.rows) throw new Error(`int8 rows hold ${this.rows} rows, asked to sync to ${n}`)
    if (n === this.rows) return
    this.simd.reserve(n * this.stride)
    if (this.unscale.length < n) {
      const grown = new Float32Array(Math.max(n, 2 * this.unscale.length))
      grown.set(this.unscale.subarray(0, this.rows))
      this.unscale = grown
    }
    const out = new Int8Array(this.simd.buffer)
    const dims = this.dims
    for (let r = this.rows; r < n; r++) {
      const off = r * dims
      const scale = 127 / largest(data, off, dims)
      const at = r * this.stride
      for (let i = 0; i < dims; i++) out[at + i] = Math.round(data[off + i]! * scale)
      this.unscale[r] = 1 / scale
    }
    this.rows = n
  }

  /**
   * The `keep` rows of `candidates` (row numbers, ascending) with the largest int8 dot product with
   * `query`, still ascending; all of them when there are no more than `keep`. Ties at the cut are
   * taken in row order.
   */
  best(query: Float32Array, candidates: Int32Array, keep: number): Int32Array {
    const count = candidates.length
    if (count <= keep) return candidates
    const blocks = this.stride / LANE_BYTES
    const queryAt = laneAligned(this.rows * this.stride)
    const listAt = queryAt + 2 * this.stride
    const outAt = listAt + 4 * count
    this.simd.reserve(outAt + 4 * count)
    const buffer = this.simd.buffer
    const q = new Int16Array(buffer, queryAt, this.stride)
    // Narrower for very long vectors, so that no sum of dims × 127 × range leaves an i32.
    const range = Math.min(QUERY_RANGE, Math.floor(0x7fffffff / (127 * this.stride)))
    const scale = range / largest(query, 0, this.dims)
    for (let i = 0; i < this.dims; i++) q[i] = Math.round(query[i]! * scale)
    // Row padding may hold an earlier query's scratch; a zero query padding keeps it out of every sum.
    q.fill(0, this.dims)
    new Int32Array(buffer, listAt, count).set(candidates)
    this.simd.dots(0, queryAt, listAt, count, blocks, outAt)
    const dots = new Int32Array(buffer, outAt, count)
    const scores = new Float64Array(count)
    for (let j = 0; j < count; j++) scores[j] = dots[j]! * this.unscale[candidates[j]!]!
    const cut = kthSmallest(Float64Array.from(scores), count - keep)
    let ties = keep
    for (let j = 0; j < count; j++) if (scores[j]! > cut) ties--
    const out = new Int32Array(keep)
    for (let j = 0, o = 0; j < count && o < keep; j++) {
      const s = scores[j]!
      if (s > cut || (s === cut && ties-- > 0)) out[o++] = candidates[j]!
    }
    return out
  }
}

/** The largest |component| of `v[off, off + dims)`, or 1 for a zero vector (it quantises to zeros either way). */
function largest(v: Float32Array, off: number, dims: number): number {
  let max = 0
  for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(v[off + i]!))
  return max > 0 ? max : 1
}

/** The value that would sit at index `k` if `a` were sorted ascending (Hoare's selection; reorders `a`). */
function kthSmallest(a: Float64Array, k: number): number {
  let lo = 0
  let hi = a.length - 1
  while (lo < hi) {
    const pivot = a[(lo + hi) >>> 1]!
    let i = lo
    let j = hi
    while (i <= j) {
      while (a[i]! < pivot) i++
      while (a[j]! > pivot) j--
      if (i <= j) {
        const t = a[i]!
        a[i++] = a[j]!
        a[j--] = t
      }
    }
    if (k <= j) hi = j
    else if (k >= i) lo = i
    else return a[k]!
  }
  return a[k]!
}
