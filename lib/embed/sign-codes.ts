import { LANE_BYTES, laneAligned, SimdMemory, WEIGHT_PLANES } from './simd-kernels.ts'

/** Largest 4-bit weight of a query dimension. */
const MAX_WEIGHT = 2 ** WEIGHT_PLANES - 1

/**
 * One-bit sign codes of a vector space: bit i of a row is set when its component i lies above the
 * space's mean in that dimension. A query is not reduced to bits: each dimension keeps its sign and
 * a 4-bit weight (|q_i| scaled to 0–15), and a row's distance is the sum of the weights where its bit
 * disagrees with the query's sign. That is the dot product q · sign(x − mean) up to a constant (the
 * mean's share of a dot product is the same for every row), which ranks neighbours far closer to
 * the cosine than the Hamming distance between two codes: on random directions at 100k the true
 * top 10 is within the best 2,048 rows .99 of the time against .92 (docs/benchmarks.md). A scan reads
 * 64 bytes per 512-dim row instead of 2,048, 16 bytes an instruction in the WebAssembly kernel
 * (`simd-kernels.ts`), so it shortlists candidates for the finer stages (`lib/embed/vector-index.ts`).
 * Codes live in memory only and are rebuilt from the float rows, so they hold nothing the vectors
 * table does not.
 */
export class SignCodes {
  readonly dims: number
  /** Bytes per row code (a whole number of SIMD lanes). */
  private readonly bytes: number
  private readonly simd = new SimdMemory()
  private rows = 0
  private split: Float32Array
  private splitRows = 0

  constructor(dims: number) {
    this.dims = dims
    this.bytes = laneAligned(Math.ceil(dims / 8))
    this.split = new Float32Array(dims)
  }

  /** Rows coded. */
  get size(): number {
    return this.rows
  }

  /**
   * Codes rows `[size, n)` of `data` (contiguous rows of `dims` floats). When the rows already coded
   * are fewer than `n / (1 + drift)` (or none), the split point is re-taken as the mean of all `n` rows
   * and every row is coded again, so a growing space keeps its codes centred.
   */
  sync(data: Float32Array, n: number, drift = 0.25): void {
    if (n < this.rows) throw new Error(`sign codes hold ${this.rows} rows, asked to sync to ${n}`)
    if (this.rows === 0 || n > this.splitRows * (1 + drift)) {
      this.takeSplit(data, n)
      this.rows = 0
    }
    this.simd.reserve(n * this.bytes)
    const codes = new Uint8Array(this.simd.buffer)
    const dims = this.dims
    for (let r = this.rows; r < n; r++) this.encode(data, r * dims, codes, r * this.bytes)
    this.rows = n
  }

  /**
   * The rows nearest the query by weighted distance: every row below the cut, and those at the cut,
   * where the cut is the smallest distance that admits at least `pool` rows. Rows come back in
   * ascending order.
   */
  nearest(query: Float32Array, pool: number): Int32Array {
    const n = this.rows
    if (pool >= n) return Int32Array.from({ length: n }, (_, r) => r)
    const blocks = this.bytes / LANE_BYTES
    const at = laneAligned(n * this.bytes)
    const outAt = at + blocks * (WEIGHT_PLANES + 1) * LANE_BYTES
    this.simd.reserve(outAt + 4 * n)
    const buffer = this.simd.buffer
    this.encodeQuery(query, new Uint8Array(buffer), at, blocks)
    this.simd.weighted(0, at, n, blocks, outAt)
    const distances = new Int32Array(buffer, outAt, n)
    const farthest = MAX_WEIGHT * this.dims
    const histogram = new Int32Array(farthest + 1)
    for (let r = 0; r < n; r++) histogram[distances[r]!]!++
    let cut = 0
    for (let taken = histogram[0]!; taken < pool && cut < farthest; taken += histogram[++cut]!);
    let count = 0
    for (let d = 0; d <= cut; d++) count += histogram[d]!
    const out = new Int32Array(count)
    for (let r = 0, j = 0; r < n; r++) if (distances[r]! <= cut) out[j++] = r
    return out
  }

  /** Writes the query's sign bits (set where q_i > 0) and weight planes, block by block, at `out[at…]`. */
  private encodeQuery(q: Float32Array, out: Uint8Array, at: number, blocks: number): void {
    const stride = (WEIGHT_PLANES + 1) * LANE_BYTES
    out.fill(0, at, at + blocks * stride)
    let max = 0
    for (let i = 0; i < this.dims; i++) max = Math.max(max, Math.abs(q[i]!))
    const scale = max > 0 ? MAX_WEIGHT / max : 0
    for (let i = 0; i < this.dims; i++) {
      const base = at + (i >> 7) * stride + ((i & 127) >> 3)
      const bit = 1 << (i & 7)
      if (q[i]! > 0) out[base]! |= bit
      const weight = Math.round(Math.abs(q[i]!) * scale)
      for (let p = 0; p < WEIGHT_PLANES; p++) if ((weight >> p) & 1) out[base + (p + 1) * LANE_BYTES]! |= bit
    }
  }

  private takeSplit(data: Float32Array, n: number): void {
    const dims = this.dims
    const sum = new Float64Array(dims)
    for (let r = 0, off = 0; r < n; r++, off += dims) for (let i = 0; i < dims; i++) sum[i]! += data[off + i]!
    for (let i = 0; i < dims; i++) this.split[i] = n > 0 ? sum[i]! / n : 0
    this.splitRows = n
  }

  /** Writes the code of `v[off, off + dims)` at `out[at, at + bytes)` (padding bits zero). */
  private encode(v: Float32Array, off: number, out: Uint8Array, at: number): void {
    const split = this.split
    const dims = this.dims
    out.fill(0, at, at + this.bytes)
    for (let i = 0; i < dims; i++) if (v[off + i]! > split[i]!) out[at + (i >> 3)]! |= 1 << (i & 7)
  }
}
