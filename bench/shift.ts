/**
 * How far a quantile of one arm of an interleaved benchmark moves against another's, with an
 * interval: the estimator bench/stages.ts states its overhead by (docs/stages.md, "Cost", why this
 * one).
 *
 * - The quantile is Harrell–Davis's: a Beta-weighted mean of all order statistics around the
 *   rank, rather than one order statistic. At p99 of 3,000 turns the nearest rank is the 30th
 *   worst turn alone; HD averages the neighbouring ranks with weights that fall off over their
 *   own sampling spread, which lowers the variance of a tail quantile without choosing a width.
 * - The interval is a moving-block bootstrap over rounds: a round is one turn of every arm, run
 *   next to each other, so resampling whole rounds keeps each arm's turn beside the others' (the
 *   load they shared), and blocks of consecutive rounds keep the drift of the machine's load over
 *   minutes inside a resample instead of pretending the rounds are independent.
 */
import jStat from 'jstat'

const weights = new Map<string, { from: number, w: Float64Array }>()

/** Harrell–Davis weights of the order statistics for quantile p of n samples (cached; only the ranks that carry weight). */
function hdWeights(n: number, p: number): { from: number, w: Float64Array } {
  const key = `${n}:${p}`
  const cached = weights.get(key)
  if (cached !== undefined) return cached
  const a = p * (n + 1)
  const b = (1 - p) * (n + 1)
  const sd = Math.sqrt((p * (1 - p)) / (n + 2))
  const from = Math.max(0, Math.floor((p - 20 * sd) * n))
  const to = Math.min(n, Math.ceil((p + 20 * sd) * n))
  const w = new Float64Array(to - from)
  let prev = from === 0 ? 0 : jStat.ibeta(from / n, a, b)
  let sum = 0
  for (let i = from; i < to; i++) {
    const next = i + 1 === n ? 1 : jStat.ibeta((i + 1) / n, a, b)
    w[i - from] = Math.max(0, next - prev)
    sum += w[i - from]!
    prev = next
  }
  for (let i = 0; i < w.length; i++) w[i]! /= sum // the window holds all but ~1e-12 of the weight
  const out = { from, w }
  weights.set(key, out)
  return out
}

/** The Harrell–Davis estimate of quantile p (0–1) of sorted samples. */
export function hdQuantile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length
  if (n === 0) return Number.NaN
  if (n === 1) return sorted[0]!
  const { from, w } = hdWeights(n, p)
  let q = 0
  for (let i = 0; i < w.length; i++) q += w[i]! * sorted[from + i]!
  return q
}

/** A small seeded generator (mulberry32), so that a run's intervals can be reproduced from its samples. */
function random(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A quantile shift: the point estimate and its 95 % bootstrap interval, in the samples' unit. */
export interface Shift {
  estimate: number
  lo: number
  hi: number
}

const sorted = (xs: readonly number[]): Float64Array => Float64Array.from(xs.filter((x) => !Number.isNaN(x))).sort()

/**
 * `Q_p(arm) − Q_p(base)` for each p in `ps`. `arm[i]` and `base[i]` are round i (NaN: the turn is
 * left out, e.g. one with a GC pause); `resamples` moving-block bootstrap resamples of the rounds
 * give the 2.5th and 97.5th percentiles of the same difference.
 */
export function quantileShift(arm: readonly number[], base: readonly number[], ps: readonly number[], options: { resamples?: number, block?: number, seed?: number } = {}): Shift[] {
  const rounds = Math.min(arm.length, base.length)
  const block = Math.max(1, Math.min(rounds, options.block ?? 20))
  const resamples = options.resamples ?? 1000
  const next = random(options.seed ?? 12)
  const point = (a: Float64Array, b: Float64Array) => ps.map((p) => hdQuantile(a, p) - hdQuantile(b, p))
  const estimates = point(sorted(arm.slice(0, rounds)), sorted(base.slice(0, rounds)))
  const draws = ps.map(() => new Float64Array(resamples))
  const a: number[] = []
  const b: number[] = []
  for (let r = 0; r < resamples; r++) {
    a.length = 0
    b.length = 0
    while (a.length < rounds) {
      const start = Math.floor(next() * rounds)
      for (let k = 0; k < block && a.length < rounds; k++) { // circular blocks of consecutive rounds
        a.push(arm[(start + k) % rounds]!)
        b.push(base[(start + k) % rounds]!)
      }
    }
    const d = point(sorted(a), sorted(b))
    for (let j = 0; j < ps.length; j++) draws[j]![r] = d[j]!
  }
  return ps.map((_, j) => {
    const ds = draws[j]!.sort()
    return { estimate: estimates[j]!, lo: hdQuantile(ds, 0.025), hi: hdQuantile(ds, 0.975) }
  })
}

/**
 * Quantile p of one arm's samples (Harrell–Davis) with its 95 % moving-block bootstrap interval:
 * the shift against a base of zeros. A bound on a tail ("p99 ≤ 15 ms") is shown when the
 * interval's upper end is under it, rather than by one order statistic of one run.
 */
export function quantileInterval(samples: readonly number[], p: number, options: { resamples?: number, block?: number, seed?: number } = {}): Shift {
  return quantileShift(samples, samples.map(() => 0), [p], options)[0]!
}
