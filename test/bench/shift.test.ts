/**
 * The estimator bench:stages states its overhead by (bench/shift.ts): Harrell–Davis quantiles
 * agree with the known quantiles of a distribution, and the block-bootstrap interval of a shift
 * covers a shift that is there and 0 when there is none. Seeded data, so nothing is timed or random.
 */
import t from 'tap'
import { hdQuantile, quantileInterval, quantileShift } from '../../bench/shift.ts'

/** n draws of the exponential distribution (mean 1) from a seeded generator. */
function exponential(n: number, seed: number): number[] {
  let s = seed
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return (s + 0.5) / 4294967296
  }
  return Array.from({ length: n }, () => -Math.log(1 - next()))
}

t.test('Harrell–Davis quantiles of a known distribution', async (t) => {
  const xs = Float64Array.from(exponential(20_000, 1)).sort()
  for (const p of [0.5, 0.99, 0.999]) {
    const exact = -Math.log(1 - p)
    t.ok(Math.abs(hdQuantile(xs, p) - exact) < 0.1 * exact, `p${p * 100}: ${hdQuantile(xs, p).toFixed(3)} against ${exact.toFixed(3)}`)
  }
  t.equal(hdQuantile(Float64Array.from([3]), 0.99), 3)
  t.ok(Number.isNaN(hdQuantile(new Float64Array(0), 0.5)))
  const same = Float64Array.from({ length: 500 }, () => 7)
  t.ok(Math.abs(hdQuantile(same, 0.99) - 7) < 1e-9, 'the weights sum to 1')
})

t.test('the shift of a shifted copy is found, with an interval around it; none against a reordering of the same turns', async (t) => {
  const base = exponential(3000, 2)
  const moved = base.map((x) => x + 0.5) // every round moved by 0.5
  const [p50, p99] = quantileShift(moved, base, [0.5, 0.99], { resamples: 200 })
  t.ok(Math.abs(p50!.estimate - 0.5) < 1e-9 && Math.abs(p99!.estimate - 0.5) < 1e-9, 'the point estimates are the shift')
  t.ok(p50!.lo <= 0.5 + 1e-9 && 0.5 - 1e-9 <= p50!.hi && p99!.lo <= 0.5 + 1e-9 && 0.5 - 1e-9 <= p99!.hi, 'and so is every resample')
  const reordered = base.map((_, i) => base[(i * 7 + 3) % base.length]!) // the same turns, in other rounds
  const [a50, a99] = quantileShift(reordered, base, [0.5, 0.99], { resamples: 200 })
  t.ok(Math.abs(a99!.estimate) < 1e-9, 'an A/A comparison of the same turns: no shift')
  t.ok(a50!.lo < 0 && 0 < a50!.hi && a99!.lo < 0 && 0 < a99!.hi, `and an interval on both sides of 0 ([${a99!.lo.toFixed(3)}, ${a99!.hi.toFixed(3)}] at p99)`)
  const withGaps = moved.map((x, i) => (i % 10 === 0 ? Number.NaN : x))
  const [g50] = quantileShift(withGaps, base, [0.5], { resamples: 200 })
  t.ok(Math.abs(g50!.estimate - 0.5) < 0.05, 'turns left out (NaN) are skipped, not read as values')
  t.same(quantileShift(moved, base, [0.99], { resamples: 50, seed: 9 }), quantileShift(moved, base, [0.99], { resamples: 50, seed: 9 }), 'seeded: the same interval twice')
})

t.test('quantileInterval: one arm\'s quantile with an interval that holds it, and a point for constant samples', async (t) => {
  const samples = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000 / 100) // 0 … 9.99, shuffled
  const p99 = quantileInterval(samples, 0.99)
  t.ok(Math.abs(p99.estimate - 9.9) < 0.02, `estimate ${p99.estimate}`)
  t.ok(p99.lo <= p99.estimate && p99.estimate <= p99.hi, `[${p99.lo}, ${p99.hi}]`)
  t.ok(p99.hi - p99.lo < 0.5, 'a narrow interval for 1,000 evenly spread samples')
  const flat = quantileInterval(Array(50).fill(3), 0.99)
  t.ok([flat.estimate, flat.lo, flat.hi].every((x) => Math.abs(x - 3) < 1e-9), `${JSON.stringify(flat)}: 3 with no width`)
})
