/** Small timing helpers shared by the benchmarks. */

/** Milliseconds since an arbitrary origin, with sub-microsecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/** The p-th percentile (0–100) of the samples, nearest-rank; NaN for none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

/** p50 and p99 in ms, rounded to three decimals, as the JSON line reports them. */
export function summary(samples: readonly number[]): { p50_ms: number, p99_ms: number } {
  return { p50_ms: round(percentile(samples, 50)), p99_ms: round(percentile(samples, 99)) }
}

/** Rounds to three decimals (enough for milliseconds, readable in JSON). */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/** p50, p99 and p99.9 in ms (three decimals): the tail a million-note store is judged by. */
export function tail(samples: readonly number[]): { p50_ms: number, p99_ms: number, p999_ms: number } {
  return { ...summary(samples), p999_ms: round(percentile(samples, 99.9)) }
}

/**
 * CPU time this process has used (user + system, all threads) since `since`, or in all when
 * omitted, in ms with µs resolution. Under load, wall time includes waiting for a core; CPU time
 * stays close to what a quiet machine shows.
 */
export function cpuMs(since?: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(since)
  return (user + system) / 1000
}

/** A wall and CPU clock started now: ms of each since. */
export function stopwatch(): { wall: () => number, cpu: () => number } {
  const wall = nowMs()
  const cpu = process.cpuUsage()
  return { wall: () => nowMs() - wall, cpu: () => cpuMs(cpu) }
}
