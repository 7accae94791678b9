/**
 * `bench:recall`'s all-sets mode: every eval set found under one folder, each in every mode it
 * has (scoped; global too when it has several scopes; `live`, its queries as the last message of a
 * live conversation, `live.ts`), ranked and gated R@5 and R@10, false
 * injections against every other set (cross-set) and against the next scope's store
 * (cross-scope, where there are scopes), and the characters a noise turn gets; the live row of a
 * set of pasted chats also replays each chat turn by turn (`replay.ts`). One set of gate
 * settings for all sets, as the plugin has.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { GateOptions } from '../../lib/recall/gate.ts'
import type { RecallFn } from './recall-fn.ts'
import { readEvalSet, type EvalSet } from './eval-set.ts'
import { asLive } from './live.ts'
import { runPrecisionSuite, type Negatives, type PrecisionSuite } from './precision.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import { replayChats, replayTable, type ReplayResult } from './replay.ts'

/** One set in one mode: the figures the table shows, and the suite they come from. */
export interface AllSetsRow {
  dataset: string
  /** `live`: scoped, each query as the last message of a live conversation (`live.ts`). */
  mode: 'scoped' | 'global' | 'live'
  queries: number
  ranked: { 'recall@5': number, 'recall@10': number }
  gated: { 'recall@5': number, 'recall@10': number }
  /** The highest false-injection rate (gated) over the other sets' stores; null with no other set. */
  cross_set_false_injections: number | null
  /** The false-injection rate (gated) against the next scope's store; null for a set of one scope. */
  cross_scope_false_injections: number | null
  /** The most characters a noise turn gets on average (gated), over every kind of negatives. */
  chars_per_noise_turn: number
  suite: PrecisionSuite
  /** `live` rows of a set of pasted chats: each chat replayed turn by turn with the repeat memory (`replay.ts`). */
  replay?: ReplayResult
}

/** The eval sets under `root`: every folder holding a `corpus.jsonl` and a `queries.jsonl`, by name. */
export function evalSetsIn(root: string): EvalSet[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(root, e.name, 'corpus.jsonl')) && existsSync(join(root, e.name, 'queries.jsonl')))
    .map((e) => e.name).sort().map((name) => readEvalSet(join(root, name)))
}

/** Runs every set in every mode it has against every kind of negatives; one row a set and mode. */
export async function runAllSets(sets: readonly EvalSet[], options: { gate: GateOptions, half?: 'a' | 'b', recall?: RecallFn, progress?: (line: string) => void }): Promise<AllSetsRow[]> {
  const rows: AllSetsRow[] = []
  const recall: RecallFn = options.recall ?? ((store, query, { topK, earlier }) => recallBlocksHybrid(store, null, query, { topK, earlier }))
  for (const set of sets) {
    const negatives: Negatives[] = sets.filter((other) => other !== set).map((against) => ({ kind: 'cross-set', against }))
    if (set.scopes.length > 1) negatives.push({ kind: 'cross-scope' })
    for (const mode of set.scopes.length > 1 ? ['scoped', 'global', 'live'] as const : ['scoped', 'live'] as const) {
      options.progress?.(`${set.name} · ${mode}`)
      const asked = mode === 'live' ? asLive(set) : set
      const suite = await runPrecisionSuite(asked, { mode: mode === 'live' ? 'scoped' : mode, gate: options.gate, half: options.half, recall: options.recall }, negatives)
      const crossSet = suite.negatives.filter((n) => n.against !== 'cross-scope').map((n) => n.gated.rate)
      const crossScope = suite.negatives.find((n) => n.against === 'cross-scope')
      rows.push({
        dataset: set.name,
        mode,
        queries: suite.positives.n,
        ranked: { 'recall@5': suite.positives.ungated['recall@5'], 'recall@10': suite.positives.ungated['recall@10'] },
        gated: { 'recall@5': suite.positives.gated['recall@5'], 'recall@10': suite.positives.gated['recall@10'] },
        cross_set_false_injections: crossSet.length === 0 ? null : Math.max(...crossSet),
        cross_scope_false_injections: crossScope?.gated.rate ?? null,
        chars_per_noise_turn: Math.max(0, ...suite.negatives.map((n) => n.gated.mean_chars)),
        suite,
        replay: mode === 'live' ? await replayChats(set, sets.filter((other) => other !== set), { gate: options.gate, half: options.half, recall }) : undefined,
      })
    }
  }
  return rows
}

/** The all-sets table: one line a set and mode. */
export function allSetsTable(rows: readonly AllSetsRow[], title: string): string {
  const f = (v: number | null) => (v === null ? '—' : v.toFixed(3))
  const lines = [['set', 'mode', 'n', 'R@5', 'gated R@5', 'R@10', 'gated R@10', 'false inj. cross-set', 'cross-scope', 'chars/noise turn']]
  for (const r of rows) {
    lines.push([r.dataset, r.mode, String(r.queries), f(r.ranked['recall@5']), f(r.gated['recall@5']), f(r.ranked['recall@10']), f(r.gated['recall@10']),
      f(r.cross_set_false_injections), f(r.cross_scope_false_injections), r.chars_per_noise_turn.toFixed(0)])
  }
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)))
  const replays = rows.flatMap((r) => (r.replay === undefined ? [] : [replayTable(r.dataset, r.replay)]))
  return [title, ...lines.map((l) => l.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')), ...replays].join('\n')
}
