/**
 * The precision half of recall quality: what the injection puts in front of the model when the
 * store holds nothing relevant. Each query runs through the service's recall
 * (`recallBlocksHybrid(store, null, …)`, top `topK`) and through the injection gate (`gateHits`)
 * in the same run; what would be injected is rendered with the plugin's own `renderRecall`
 * (or, for an abstaining question, `renderAbstention`), so the character counts are the
 * message the model would get.
 *
 * - positives: each query against its own store (as `bench:recall` ranks it): R@5 of the top 5
 *   and of the gated list (a gold note gated out counts as missed), characters injected;
 * - negatives: `cross-scope` (each query of scope A against the store of the next scope, in
 *   corpus order) or `cross-set` (each query against the store of another set, all its blocks in
 *   one store): the false-injection rate (share of turns with at least one note injected) and
 *   the characters injected;
 * - leave-gold-out (diagnostic): each query against its own store with its gold notes left out of
 *   the hits (recall for topK + |gold| hits, gold removed, the first topK kept; relevance is
 *   absolute, so the other hits' values do not depend on the gold notes being there).
 */
import { abstentionOf, isAbstention } from '../../lib/recall/abstain.ts'
import { gateHits, type GateOptions } from '../../lib/recall/gate.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import type { Hit } from '../../lib/recall/types.ts'
import { renderAbstention, renderRecall } from '../../lib/plugin/render.ts'
import type { RecallFn } from './recall-fn.ts'
import { isQuestion } from '../../lib/text/question.ts'
import { buildStore, partition } from './build-store.ts'
import { EvalSetError, type EvalBlock, type EvalQuery, type EvalSet } from './eval-set.ts'
import { round } from './metrics.ts'

/** Where the negative queries are asked. */
export type Negatives = { kind: 'cross-scope' } | { kind: 'cross-set', against: EvalSet }

/** What one precision run measures. */
export interface PrecisionOptions {
  mode: 'scoped' | 'global'
  negatives: Negatives
  /** The gate under test (minScore and topK as the injection uses them). */
  gate: GateOptions
  /** The injection's character budget (config `injectBudgetChars`, default 2 000). */
  budgetChars?: number
  /** Only the queries of one half (by position: `a` even, `b` odd), for choosing on one half and checking on the other. */
  half?: 'a' | 'b'
  /**
   * The recall under test; default: the service's lexical path, `recallBlocksHybrid(store, null, …)`.
   * With an embedder (`hybridRecallFn`) a hit's relevance is the larger of its lexical relevance
   * and its cosine, which is what the gate then reads.
   */
  recall?: RecallFn
  /** Name of the recall under test in the result. */
  label?: string
}

/** One turn: what the gate-less and the gated injection would show. */
interface Turn {
  ungated: Hit[]
  gated: Hit[]
  /** Characters of the abstention notice, when recall abstained on a question (0 otherwise). */
  notice: number
}

/** Counts for one kind of turn, with and without the gate. */
interface Side {
  turns: number
  injected: number
  chars: number
}

/** Counts for the positive turns: found gold (R@5 with topK 5, R@10 with topK 10), characters, leave-gold-out. */
interface Positives {
  ungated: Side
  gated: Side
  found: { ungated5: number, gated5: number, ungated10: number, gated10: number }
  leaveOut: { ungated: Side, gated: Side }
}

/** The queries of `set` this run asks (`half`: `a` even positions, `b` odd). */
function queriesOf(set: EvalSet, half: 'a' | 'b' | undefined): EvalQuery[] {
  return set.queries.filter((_, i) => half === undefined || i % 2 === (half === 'a' ? 0 : 1))
}

/** Each query against its own store: R@5 and R@10 ranked and gated, characters, leave-gold-out. */
async function measurePositives(set: EvalSet, options: PrecisionOptions, recall: RecallFn, render: (hits: readonly Hit[]) => number): Promise<Positives> {
  const topK = options.gate.topK
  const wide = { ...options.gate, topK: Math.max(10, topK) }
  const positive: Positives = { ungated: side(), gated: side(), found: { ungated5: 0, gated5: 0, ungated10: 0, gated10: 0 }, leaveOut: { ungated: side(), gated: side() } }
  const queries = queriesOf(set, options.half)
  for (const [scope, blocks] of partition(set, options.mode)) {
    const { store, evalIds } = buildStore(blocks)
    try {
      for (const q of queries.filter((q) => options.mode === 'global' || q.scope === scope)) {
        const gold = new Set(q.gold)
        const isGold = (h: Hit) => (evalIds.get(h.id) ?? []).some((id) => gold.has(id))
        const hits = await recall(store, q.query, { topK: Math.max(10, topK) + q.gold.length, earlier: q.earlier })
        const abstained = isAbstention(hits)
        const turn = gate(q, abstained ? hits : hits.slice(0, topK), options.gate, store.count())
        count(positive.ungated, turn.ungated, turn.notice, render)
        count(positive.gated, turn.gated, turn.notice, render)
        positive.found.ungated5 += recallOf(turn.ungated, q, evalIds, 5)
        positive.found.gated5 += recallOf(turn.gated, q, evalIds, 5)
        // R@10 as the injection would show it with topK 10: the gate reads the top 10.
        const ten = gate(q, abstained ? hits : hits.slice(0, 10), wide, store.count())
        positive.found.ungated10 += recallOf(ten.ungated, q, evalIds, 10)
        positive.found.gated10 += recallOf(ten.gated, q, evalIds, 10)
        const without = hits.filter((h) => !isGold(h)).slice(0, topK)
        const rest = gate(q, abstained ? hits : without, options.gate, store.count())
        count(positive.leaveOut.ungated, rest.ungated, rest.notice, render)
        count(positive.leaveOut.gated, rest.gated, rest.notice, render)
      }
    } finally {
      store.close()
    }
  }
  return positive
}

/** Each query against stores that hold nothing meant for it. */
async function measureNegatives(set: EvalSet, negatives: Negatives, options: PrecisionOptions, recall: RecallFn, render: (hits: readonly Hit[]) => number): Promise<{ ungated: Side, gated: Side }> {
  const negative = { ungated: side(), gated: side() }
  for (const [asked, blocks] of negativeStores(set, negatives, queriesOf(set, options.half))) {
    const { store } = buildStore(blocks)
    try {
      for (const q of asked) {
        const hits = await recall(store, q.query, { topK: options.gate.topK, earlier: q.earlier })
        const turn = gate(q, hits, options.gate, store.count())
        count(negative.ungated, turn.ungated, turn.notice, render)
        count(negative.gated, turn.gated, turn.notice, render)
      }
    } finally {
      store.close()
    }
  }
  return negative
}

/** One kind of turns' figures: turns, turns injected, their rate, mean characters a turn. */
function report(s: Side): { turns: number, injected: number, rate: number, mean_chars: number } {
  return { turns: s.turns, injected: s.injected, rate: round(s.turns === 0 ? 0 : s.injected / s.turns), mean_chars: round(s.turns === 0 ? 0 : s.chars / s.turns) }
}

/** What `runPrecisionSuite` measures: the positives once, and each kind of negatives. */
export interface PrecisionSuite {
  positives: {
    n: number
    ungated: { 'recall@5': number, 'recall@10': number, positive: ReturnType<typeof report>, leave_gold_out: ReturnType<typeof report> }
    gated: { 'recall@5': number, 'recall@10': number, positive: ReturnType<typeof report>, leave_gold_out: ReturnType<typeof report> }
  }
  /** One entry a kind of negatives, in the order given. */
  negatives: Array<{ against: string, ungated: ReturnType<typeof report>, gated: ReturnType<typeof report> }>
}

/** The positives of `set` once and its queries against each kind of negatives (`bench:recall`'s all-sets mode). */
export async function runPrecisionSuite(set: EvalSet, options: Omit<PrecisionOptions, 'negatives'>, negatives: readonly Negatives[]): Promise<PrecisionSuite> {
  const render = (hits: readonly Hit[]) => renderRecall(hits, options.budgetChars ?? 2_000).text.length
  const recall = options.recall ?? ((store, query, { topK, earlier }) => recallBlocksHybrid(store, null, query, { topK, earlier }))
  const full = { ...options, negatives: negatives[0] ?? { kind: 'cross-scope' as const } }
  const p = await measurePositives(set, full, recall, render)
  const n = p.gated.turns
  const share = (found: number) => round(n === 0 ? 0 : found / n)
  const out: PrecisionSuite = {
    positives: {
      n,
      ungated: { 'recall@5': share(p.found.ungated5), 'recall@10': share(p.found.ungated10), positive: report(p.ungated), leave_gold_out: report(p.leaveOut.ungated) },
      gated: { 'recall@5': share(p.found.gated5), 'recall@10': share(p.found.gated10), positive: report(p.gated), leave_gold_out: report(p.leaveOut.gated) },
    },
    negatives: [],
  }
  for (const kind of negatives) {
    const neg = await measureNegatives(set, kind, full, recall, render)
    out.negatives.push({ against: negativesName(kind), ungated: report(neg.ungated), gated: report(neg.gated) })
  }
  return out
}

function negativesName(negatives: Negatives): string {
  return negatives.kind === 'cross-set' ? `cross-set against ${negatives.against.name}` : 'cross-scope'
}

/** Runs the queries of `set` as positives, as negatives and with gold left out; returns the JSON object. */
export async function runPrecisionBench(set: EvalSet, options: PrecisionOptions): Promise<Record<string, unknown>> {
  const suite = await runPrecisionSuite(set, options, [options.negatives])
  const neg = suite.negatives[0]!
  const { ungated, gated } = suite.positives
  return {
    dataset: set.name,
    mode: options.mode,
    negatives: neg.against,
    half: options.half ?? 'all',
    recall: options.label ?? 'recallBlocksHybrid(store, null) (lexical)',
    gate: { minRelevance: options.gate.minRelevance, falloff: options.gate.falloff, minScore: options.gate.minScore, topK: options.gate.topK },
    ungated: { 'recall@5': ungated['recall@5'], 'recall@10': ungated['recall@10'], false_injection_rate: neg.ungated.rate, negative: neg.ungated, positive: ungated.positive, leave_gold_out: ungated.leave_gold_out },
    gated: { 'recall@5': gated['recall@5'], 'recall@10': gated['recall@10'], false_injection_rate: neg.gated.rate, negative: neg.gated, positive: gated.positive, leave_gold_out: gated.leave_gold_out },
  }
}

function side(): Side {
  return { turns: 0, injected: 0, chars: 0 }
}

/** What the injection would show for these hits, without and with the gate. */
function gate(q: EvalQuery, hits: Hit[], options: GateOptions, stored: number): Turn {
  const abstention = abstentionOf(hits)
  if (abstention !== undefined) {
    // As the pre-step: the notice answers a question about a store that holds notes.
    const notice = isQuestion(q.query) && stored > 0 ? renderAbstention(abstention).length : 0
    return { ungated: [], gated: [], notice }
  }
  return { ungated: hits, gated: gateHits(hits, options), notice: 0 }
}

function count(s: Side, hits: readonly Hit[], notice: number, render: (hits: readonly Hit[]) => number): void {
  s.turns++
  const chars = hits.length > 0 ? render(hits) : notice
  if (hits.length > 0 && chars > 0) s.injected++
  s.chars += chars
}

/** |gold ∩ shown| / |gold| for one query (shown: at most `k` notes, mapped back to the set's ids). */
function recallOf(shown: readonly Hit[], q: EvalQuery, evalIds: ReadonlyMap<string, string[]>, k: number): number {
  const ids = new Set(shown.slice(0, k).flatMap((h) => evalIds.get(h.id) ?? []))
  return q.gold.filter((g) => ids.has(g)).length / q.gold.length
}

/** The negative stores and the queries asked of each. */
function negativeStores(set: EvalSet, negatives: Negatives, queries: readonly EvalQuery[]): Array<[EvalQuery[], EvalBlock[]]> {
  if (negatives.kind === 'cross-set') return [[[...queries], negatives.against.blocks]]
  const groups = partition(set, 'scoped')
  const scopes = [...groups.keys()]
  if (scopes.length < 2) throw new EvalSetError(`${set.name}: --negatives cross-scope needs at least two scopes (it has ${scopes.length})`)
  return scopes.map((scope, i) => [queries.filter((q) => q.scope === scope), groups.get(scopes[(i + 1) % scopes.length]!)!])
}

/** The human-readable table of one precision run: without and with the gate, side by side. */
export function precisionTable(result: Record<string, unknown>): string {
  type Report = { 'recall@5': number, negative: { rate: number, mean_chars: number }, positive: { mean_chars: number }, leave_gold_out: { rate: number, mean_chars: number } }
  const rows = [['', 'R@5', 'false inj.', 'chars neg', 'chars pos', 'leave-gold-out inj. / chars']]
  for (const key of ['ungated', 'gated'] as const) {
    const r = result[key] as Report
    rows.push([key, r['recall@5'].toFixed(3), r.negative.rate.toFixed(3), r.negative.mean_chars.toFixed(0), r.positive.mean_chars.toFixed(0),
      `${r.leave_gold_out.rate.toFixed(3)} / ${r.leave_gold_out.mean_chars.toFixed(0)}`])
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  const title = `${String(result.dataset)} · ${String(result.mode)} · negatives ${String(result.negatives)} · half ${String(result.half)} · gate ${JSON.stringify(result.gate)}`
  return [title, ...rows.map((r) => r.map((cell, c) => cell.padStart(widths[c]!)).join('  '))].join('\n')
}
