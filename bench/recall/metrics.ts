/**
 * The retrieval metrics of `../shared/eval/README.md`, one definition for our recall and every floor:
 * recall@k = |gold ∩ top-k| / |gold|; hit@k = any gold in top-k; MRR@10 = 1 / rank of the first
 * gold within the top 10, else 0. All are means over queries.
 */

/** One query's outcome: its category and the ranked ids the system returned. */
export interface Outcome {
  category: string
  gold: readonly string[]
  ranked: readonly string[]
}

/** Aggregated metrics for a group of queries; keys are the JSON keys the bench prints. */
export type Metrics = Record<string, number>

/** recall@k, hit@k for every k, plus mrr@10 and n. */
export function metrics(outcomes: readonly Outcome[], ks: readonly number[]): Metrics {
  const n = outcomes.length
  const out: Metrics = { n }
  for (const k of ks) {
    let recall = 0
    let hit = 0
    for (const o of outcomes) {
      const top = new Set(o.ranked.slice(0, k))
      const found = o.gold.filter((g) => top.has(g)).length
      recall += found / o.gold.length
      if (found > 0) hit++
    }
    out[`recall@${k}`] = round(n === 0 ? 0 : recall / n)
    out[`hit@${k}`] = round(n === 0 ? 0 : hit / n)
  }
  let mrr = 0
  for (const o of outcomes) {
    const gold = new Set(o.gold)
    const rank = o.ranked.slice(0, 10).findIndex((id) => gold.has(id))
    if (rank >= 0) mrr += 1 / (rank + 1)
  }
  out['mrr@10'] = round(n === 0 ? 0 : mrr / n)
  return out
}

/** Metrics per category, categories in sorted order. */
export function byCategory(outcomes: readonly Outcome[], ks: readonly number[]): Record<string, Metrics> {
  const groups = new Map<string, Outcome[]>()
  for (const o of outcomes) {
    const list = groups.get(o.category) ?? []
    list.push(o)
    groups.set(o.category, list)
  }
  const out: Record<string, Metrics> = {}
  for (const category of [...groups.keys()].sort()) out[category] = metrics(groups.get(category)!, ks)
  return out
}

/** The q-quantile (0…1) of a sample, nearest-rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** Four decimals: enough to compare runs, short enough to read. */
export function round(value: number): number {
  return Math.round(value * 10_000) / 10_000
}
