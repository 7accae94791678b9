/**
 * One-bit sign codes of a vector space: bit i of a row is set when its component i lies above the
 * space's mean in that dimension. The Hamming distance between two codes estimates the angle between
 * the vectors around that mean, which ranks neighbours nearly as cosine does (the mean's share of a
 * dot product is the same for every row). A scan of codes reads 64 bytes per 512-dim row instead of
 * 2,048 and costs a few integer operations per 32 dimensions, so it shortlists candidates for an
 * exact re-rank (`lib/embed/vector-index.ts`). Codes live in memory only and are rebuilt from the
 * float rows, so they hold nothing the vectors table does not.
 */
export class SignCodes {
  readonly dims: number
  /** 32-bit words per row. */
  readonly words: number
  private codes = new Int32Array(0)
  private rows = 0
  private split: Float32Array
  private splitRows = 0
  private distances = new Uint32Array(0)

  constructor(dims: number) {
    this.dims = dims
    this.words = Math.ceil(dims / 32)
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
    if (this.codes.length < n * this.words) {
      const grown = new Int32Array(Math.max(n, this.codes.length / this.words * 2) * this.words)
      grown.set(this.codes.subarray(0, this.rows * this.words))
      this.codes = grown
    }
    const dims = this.dims
    for (let r = this.rows; r < n; r++) this.encode(data, r * dims, this.codes, r * this.words)
    this.rows = n
  }

  /**
   * The rows whose codes lie nearest the query's: every row at a Hamming distance below the cut, and
   * those at the cut, where the cut is the smallest distance that admits at least `pool` rows. Rows
   * come back in ascending order.
   */
  nearest(query: Float32Array, pool: number): Int32Array {
    const words = this.words
    const n = this.rows
    if (pool >= n) return Int32Array.from({ length: n }, (_, r) => r)
    const q = new Int32Array(words)
    this.encode(query, 0, q, 0)
    if (this.distances.length < n) this.distances = new Uint32Array(this.codes.length / words)
    const distances = this.distances
    const codes = this.codes
    const histogram = new Int32Array(this.dims + 1)
    for (let r = 0, o = 0; r < n; r++, o += words) {
      let d = 0
      // Per-byte bit counts summed over at most 31 words stay below 256; then two folds add the bytes.
      for (let w0 = 0; w0 < words; w0 += 31) {
        let bytes = 0
        const end = Math.min(words, w0 + 31)
        for (let w = w0; w < end; w++) {
          let x = codes[o + w]! ^ q[w]!
          x -= (x >>> 1) & 0x55555555
          x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
          bytes += (x + (x >>> 4)) & 0x0f0f0f0f
        }
        const halves = (bytes & 0x00ff00ff) + ((bytes >>> 8) & 0x00ff00ff)
        d += (halves & 0xffff) + (halves >>> 16)
      }
      distances[r] = d
      histogram[d]!++
    }
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

  private encode(v: Float32Array, off: number, out: Int32Array, at: number): void {
    const split = this.split
    for (let w = 0; w < this.words; w++) {
      let bits = 0
      const end = Math.min(this.dims, (w + 1) * 32)
      for (let i = w * 32; i < end; i++) if (v[off + i]! > split[i]!) bits |= 1 << (i - w * 32)
      out[at + w] = bits
    }
  }
}
