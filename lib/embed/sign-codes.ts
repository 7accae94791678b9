import { LANE_BYTES, laneAligned, SimdMemory } from './simd-kernels.ts'

/**
 * One-bit sign codes of a vector space: bit i of a row is set when its component i lies above the
 * space's mean in that dimension. The Hamming distance between two codes estimates the angle between
 * the vectors around that mean, which ranks neighbours nearly as cosine does (the mean's share of a
 * dot product is the same for every row). A scan of codes reads 64 bytes per 512-dim row instead of
 * 2,048, 16 bytes an instruction in the WebAssembly kernel (`simd-kernels.ts`), so it shortlists
 * candidates for the finer stages (`lib/embed/vector-index.ts`). Codes live in memory only and are
 * rebuilt from the float rows, so they hold nothing the vectors table does not.
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
   * The rows whose codes lie nearest the query's: every row at a Hamming distance below the cut, and
   * those at the cut, where the cut is the smallest distance that admits at least `pool` rows. Rows
   * come back in ascending order.
   */
  nearest(query: Float32Array, pool: number): Int32Array {
    const n = this.rows
    if (pool >= n) return Int32Array.from({ length: n }, (_, r) => r)
    const at = laneAligned(n * this.bytes)
    const outAt = at + this.bytes
    this.simd.reserve(outAt + 4 * n)
    const buffer = this.simd.buffer
    this.encode(query, 0, new Uint8Array(buffer), at)
    this.simd.hamming(0, at, n, this.bytes / LANE_BYTES, outAt)
    const distances = new Int32Array(buffer, outAt, n)
    const histogram = new Int32Array(this.dims + 1)
    for (let r = 0; r < n; r++) histogram[distances[r]!]!++
    let cut = 0
    for (let taken = histogram[0]!; taken < pool && cut < this.dims; taken += histogram[++cut]!);
    let count = 0
    for (let d = 0; d <= cut; d++) count += histogram[d]!
    const out = new Int32Array(count)
    for (let r = 0, j = 0; r < n; r++) if (distances[r]! <= cut) out[j++] = r
    return out
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
