import t from 'tap'
import { Int8Rows } from '../../lib/embed/int8-rows.ts'
import { SignCodes } from '../../lib/embed/sign-codes.ts'
import { SimdMemory, WEIGHT_PLANES } from '../../lib/embed/simd-kernels.ts'
import { mutant } from '../helpers/mutant.ts'

/**
 * The WebAssembly SIMD kernels and the two stages built on them, held to plain-JS references of the
 * same arithmetic: weighted bit distances, the sign-code shortlist's cut, and the int8 ranking. Dimensions
 * that are not a whole number of SIMD lanes, and memory that grows between queries (so rows land on
 * an earlier query's scratch), are the cases a padding or layout slip would show in.
 */

function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => ((s = Math.imul(s ^ (s >>> 15), 2246822507) + 0x9e3779b9 >>> 0) / 2 ** 32)
}

function rows(n: number, dims: number, seed: number): Float32Array {
  const next = rng(seed)
  return new Float32Array(n * dims).map(() => next() - 0.45)
}

const popcount = (x: number) => {
  let c = 0
  for (let v = x; v !== 0; v &= v - 1) c++
  return c
}

t.test('weighted and dots match their plain-JS definitions', async (t) => {
  const m = new SimdMemory()
  m.reserve(1 << 16)
  const next = rng(1)
  const u8 = new Uint8Array(m.buffer)
  const blocks = 3
  const stride = (WEIGHT_PLANES + 1) * 16
  for (let i = 0; i < 5 * blocks * 16; i++) u8[i] = Math.floor(next() * 256)
  for (let i = 0; i < blocks * stride; i++) u8[4096 + i] = Math.floor(next() * 256)
  m.weighted(0, 4096, 5, blocks, 8192)
  const want = Array.from({ length: 5 }, (_, r) => {
    let d = 0
    for (let blk = 0; blk < blocks; blk++) {
      for (let i = 0; i < 16; i++) {
        const diff = u8[r * blocks * 16 + blk * 16 + i]! ^ u8[4096 + blk * stride + i]!
        for (let p = 0; p < WEIGHT_PLANES; p++) d += 2 ** p * popcount(diff & u8[4096 + blk * stride + (p + 1) * 16 + i]!)
      }
    }
    return d
  })
  t.same([...new Int32Array(m.buffer, 8192, 5)], want, 'weighted bit distances')

  const i8 = new Int8Array(m.buffer)
  const q = new Int16Array(m.buffer, 12288, blocks * 16)
  for (let i = 0; i < 5 * blocks * 16; i++) i8[16384 + i] = Math.floor(next() * 255) - 127
  for (let i = 0; i < blocks * 16; i++) q[i] = Math.floor(next() * 4095) - 2047
  new Int32Array(m.buffer, 20480, 3).set([4, 0, 4])
  m.dots(16384, 12288, 20480, 3, blocks, 24576)
  const dot = (r: number) => {
    let s = 0
    for (let i = 0; i < blocks * 16; i++) s += i8[16384 + r * blocks * 16 + i]! * q[i]!
    return s
  }
  t.same([...new Int32Array(m.buffer, 24576, 3)], [dot(4), dot(0), dot(4)], 'dot products of the listed rows, in list order')
})

t.test('sign codes: the SIMD shortlist is the plain-JS weighted cut, through growth and padding', async (t) => {
  const dims = 100
  const data = rows(3000, dims, 2)
  /**
   * The shortlist by definition: rows split at the mean of the first `splitRows` rows, `n` rows
   * coded, a row's distance the sum of the query's 4-bit weights where the row's bit and the
   * query's sign disagree, the cut admitting `pool`.
   */
  const reference = (splitRows: number, n: number, query: Float32Array, pool: number) => {
    const sum = new Float64Array(dims)
    for (let r = 0; r < splitRows; r++) for (let i = 0; i < dims; i++) sum[i]! += data[r * dims + i]!
    const mean = Float32Array.from(sum, (x) => x / splitRows)
    const max = Math.max(...query.map(Math.abs))
    const d = Array.from({ length: n }, (_, r) => {
      let x = 0
      for (let i = 0; i < dims; i++) if ((data[r * dims + i]! > mean[i]!) !== (query[i]! > 0)) x += Math.round(Math.abs(query[i]!) * 15 / max)
      return x
    })
    const cut = [...d].sort((a, b) => a - b)[pool - 1]!
    return d.flatMap((x, r) => (x <= cut ? [r] : []))
  }
  const check = async (Codes: typeof SignCodes) => {
    const codes = new Codes(dims)
    codes.sync(data, 40)
    const early = codes.nearest(data.subarray(0, dims), 10)
    // 40 → 45 rows keeps the split (drift 0.25): rows 40–44 are coded over the first query's scratch.
    codes.sync(data, 45)
    const late = codes.nearest(data.subarray(dims, 2 * dims), 10)
    return { early: [...early], late: [...late] }
  }
  const got = await check(SignCodes)
  t.same(got.early, reference(40, 40, data.subarray(0, dims), 10))
  t.same(got.late, reference(40, 45, data.subarray(dims, 2 * dims), 10), 'rows coded over an earlier query\'s scratch')

  const m = mutant({ file: 'embed/sign-codes.ts', from: '    out.fill(0, at, at + this.bytes)\n', to: '' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<typeof import('../../lib/embed/sign-codes.ts')>('embed/sign-codes.ts')).SignCodes
  t.notSame((await check(Mutated)).late, got.late, 'mutation: codes OR-ed into stale scratch give another shortlist')
})

t.test('int8 rows: the SIMD ranking is the plain-JS int8 ranking, through growth and padding', async (t) => {
  const dims = 100
  const data = rows(250, dims, 3)
  const queries = rows(3, dims, 4)
  const reference = (n: number, query: Float32Array, keep: number) => {
    const quant = (v: Float32Array, off: number, range: number) => {
      let max = 0
      for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(v[off + i]!))
      return Array.from({ length: dims }, (_, i) => Math.round(v[off + i]! * range / max) * max / range)
    }
    const q = quant(query, 0, 2047)
    const scored = Array.from({ length: n }, (_, r) => {
      const x = quant(data, r * dims, 127)
      return { r, s: x.reduce((s, v, i) => s + v * q[i]!, 0) }
    })
    return scored.sort((a, b) => b.s - a.s).slice(0, keep).map((h) => h.r).sort((a, b) => a - b)
  }
  const check = async (Rows: typeof Int8Rows) => {
    const int8 = new Rows(dims)
    int8.sync(data, 40)
    // A long candidate list (rows repeated) fills the scratch above the rows with non-zero values.
    const first = int8.best(queries.subarray(0, dims), Int32Array.from({ length: 4000 }, (_, j) => j % 40), 5)
    // Rows 40–249 land on that scratch (its int32 dot products, the largest values), and so does the next query.
    int8.sync(data, 250)
    const all = Int32Array.from({ length: 250 }, (_, r) => r)
    return { first: first.length, late: [...int8.best(queries.subarray(dims, 2 * dims), all, 20)], small: int8.best(queries, all.subarray(0, 7), 20).length }
  }
  const got = await check(Int8Rows)
  t.equal(got.first, 5)
  t.same(got.late, reference(250, queries.subarray(dims, 2 * dims), 20), 'the best 20 by int8 dot product, ascending')
  t.equal(got.small, 7, 'no more candidates than kept: all of them')

  const m = mutant({ file: 'embed/int8-rows.ts', from: '    q.fill(0, this.dims)\n', to: '' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<typeof import('../../lib/embed/int8-rows.ts')>('embed/int8-rows.ts')).Int8Rows
  t.notSame((await check(Mutated)).late, got.late, 'mutation: a query padding left dirty adds stale scratch to the sums')
})

t.test('int8 rows: a very long vector cannot overflow the i32 sums', async (t) => {
  // 16,384 dims of equal magnitude: at the full 12-bit query range the sum would be ≈ 4.3e9.
  const dims = 16384
  const data = new Float32Array(3 * dims).map((_, j) => {
    const r = Math.floor(j / dims)
    return r === 0 ? 1 : r === 1 ? -1 : (j % 2 === 0 ? 1 : -1)
  })
  const query = new Float32Array(dims).fill(1)
  const best = async (Rows: typeof Int8Rows) => {
    const int8 = new Rows(dims)
    int8.sync(data, 3)
    return [...int8.best(query, Int32Array.from([0, 1, 2]), 1)]
  }
  t.same(await best(Int8Rows), [0], 'the row equal to the query ranks first')

  const m = mutant({ file: 'embed/int8-rows.ts', from: 'Math.min(QUERY_RANGE, Math.floor(0x7fffffff / (127 * this.stride)))', to: 'QUERY_RANGE' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<typeof import('../../lib/embed/int8-rows.ts')>('embed/int8-rows.ts')).Int8Rows
  t.notSame(await best(Mutated), [0], 'mutation: at the full range the sum wraps and another row wins')
})
