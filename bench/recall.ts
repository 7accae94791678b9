/**
 * `npm run bench:recall -- --data <dir> [--mode scoped|global] [--k 5,10] [--repeat N] [--json] [--markdown]`
 * `npm run bench:recall [-- --all] [--eval <dir>] [--half a|b] [--min-relevance x] [--falloff x] [--json]`
 *
 * With no `--data` (or with `--all`), every eval set found (`evalRoot`, or `--eval <dir>`) runs in
 * every mode it has, ranked and gated, against every kind of negatives (`recall/all-sets.ts`).
 *
 * Builds fresh stores from a retrieval set through the package's own commit path
 * (`BlockStore.commitMany`; one store per scope in scoped mode), runs every query through the
 * recall the injection uses (`recallBlocksHybrid(store, null, …)`, as the service calls it), and
 * prints per-category tables beside same-run FTS5 BM25 floors (see `recall/floors.ts`), as
 * Markdown tables with `--markdown`. With `--json` stdout is one line, the
 * JSON object, and the tables go to stderr. A hybrid recall can be plugged in through
 * `runRecallBench(…, { recall })` without touching the measuring code. `--embed-url <url>`
 * measures the hybrid recall with that embedder; one that cannot embed the corpus (down, not a
 * URL) ends the run before it measures anything, with one line naming it and exit code 1.
 */
import { performance } from 'node:perf_hooks'
import { isAbstention } from '../lib/recall/abstain.ts'
import { recallBlocksHybrid } from '../lib/recall/hybrid.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import type { Hit } from '../lib/recall/types.ts'
import { jsonWanted } from './args.ts'
import { buildStore, partition } from './recall/build-store.ts'
import { allSetsTable, evalSetsIn, runAllSets } from './recall/all-sets.ts'
import { EvalSetError, evalRoot, readEvalSet, type EvalSet } from './recall/eval-set.ts'
import { FLOORS, FloorIndex, type FloorName } from './recall/floors.ts'
import { byCategory, metrics, quantile, round, type Metrics, type Outcome } from './recall/metrics.ts'
import { BenchEmbedderError, benchEmbedder, hybridRecallFn } from './recall/hybrid.ts'
import { precisionTable, runPrecisionBench } from './recall/precision.ts'
import type { RecallFn } from './recall/recall-fn.ts'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE } from '../lib/recall/gate.ts'
import type { FusionMethod } from '../lib/recall/hybrid.ts'

/** What one bench run measures. */
export interface BenchOptions {
  mode: 'scoped' | 'global'
  ks: number[]
  /** The recall under test; default: the service's `recallBlocksHybrid(store, null, …)` with access recording. */
  recall?: RecallFn
  /** Name of the recall under test in the tables. */
  label?: string
  /**
   * Passes over the queries; a query's latency is the median of its runs (ranking does not depend
   * on access counts, so the metrics are the same every pass). On a shared, loaded machine a
   * single run's p99 measures the neighbours, not the recall.
   */
  repeat?: number
}

/** The result object; its JSON form is the bench's last line. */
export type BenchResult = Record<string, unknown>

/** Metrics of one system, overall and per category. */
interface Scored {
  overall: Metrics
  byCategory: Record<string, Metrics>
}

/** The recall the plugin injects with: the service path, which records accesses. */
export const serviceRecall: RecallFn = (store, query, options) => recallBlocksHybrid(store, null, query, { topK: options.topK, recordAccess: true })

/** Runs one set in one mode; returns the JSON object and the human-readable tables. */
export async function runRecallBench(set: EvalSet, options: BenchOptions): Promise<{ result: BenchResult, tables: string, markdown: string }> {
  const recall = options.recall ?? serviceRecall
  const repeat = Math.max(1, options.repeat ?? 1)
  const ks = [...new Set([...options.ks, 5, 10])].sort((a, b) => a - b)
  const depth = Math.max(...ks, 10)
  const groups = partition(set, options.mode)
  const ours: Outcome[] = []
  const floors = new Map<FloorName, Outcome[]>(FLOORS.map((f) => [f, []]))
  const latencies: number[] = []
  const floorLatencies = new Map<FloorName, number[]>(FLOORS.map((f) => [f, []]))
  let abstained = 0
  for (const [scope, blocks] of groups) {
    const queries = set.queries.filter((q) => options.mode === 'global' || q.scope === scope)
    const { store, evalIds } = buildStore(blocks)
    try {
      // Repeats run as whole passes over the queries, so one burst of machine load hits one run
      // of a query, not all of them; a query's latency is the median of its runs.
      const times = queries.map((): number[] => [])
      const results: Hit[][] = []
      for (let pass = 0; pass < repeat; pass++) {
        for (let i = 0; i < queries.length; i++) {
          const started = performance.now()
          results[i] = await recall(store, queries[i]!.query, { topK: depth })
          times[i]!.push(performance.now() - started)
        }
      }
      for (let i = 0; i < queries.length; i++) {
        const q = queries[i]!
        const hits = results[i]!
        latencies.push(quantile(times[i]!, 0.5))
        if (isAbstention(hits)) abstained++
        ours.push({ category: q.category, gold: q.gold, ranked: hits.flatMap((h) => evalIds.get(h.id) ?? [h.id]) })
      }
    } finally {
      store.close()
    }
    for (const floor of FLOORS) {
      const index = new FloorIndex(floor, blocks)
      const times = queries.map((): number[] => [])
      const ranked: string[][] = []
      for (let pass = 0; pass < repeat; pass++) {
        for (let i = 0; i < queries.length; i++) {
          const started = performance.now()
          ranked[i] = index.search(queries[i]!.query, depth)
          times[i]!.push(performance.now() - started)
        }
      }
      queries.forEach((q, i) => {
        floorLatencies.get(floor)!.push(quantile(times[i]!, 0.5))
        floors.get(floor)!.push({ category: q.category, gold: q.gold, ranked: ranked[i]! })
      })
      index.close()
    }
  }
  const score = (outcomes: Outcome[]): Scored => ({ overall: metrics(outcomes, ks), byCategory: byCategory(outcomes, ks) })
  const oursScored = score(ours)
  const floorScored = new Map(FLOORS.map((f) => [f, score(floors.get(f)!)]))
  const result: BenchResult = {
    dataset: set.name,
    mode: options.mode,
    ...oursScored.overall,
    p50_ms: round(quantile(latencies, 0.5)),
    p99_ms: round(quantile(latencies, 0.99)),
    by_category: oursScored.byCategory,
    latency_runs_per_query: repeat,
    recall: options.label ?? 'recallBlocksHybrid(store, null) = recallBlocks',
    blocks: set.blocks.length,
    stores: groups.size,
    abstained,
    wrongful_abstention_rate: round(abstained / ours.length),
    floors: Object.fromEntries(FLOORS.map((f) => [f, {
      ...floorScored.get(f)!.overall,
      p50_ms: round(quantile(floorLatencies.get(f)!, 0.5)),
      p99_ms: round(quantile(floorLatencies.get(f)!, 0.99)),
      by_category: floorScored.get(f)!.byCategory,
    }])),
  }
  const title = `${set.name} · ${options.mode} · ${ours.length} queries · ${set.blocks.length} blocks in ${groups.size} store(s) · ` +
    `p50 ${result.p50_ms} ms · p99 ${result.p99_ms} ms (cjk_bigram floor p99 ${round(quantile(floorLatencies.get('cjk_bigram')!, 0.99))} ms) · ` +
    `abstained ${abstained}`
  return { result, tables: renderTables(title, oursScored, floorScored, ks), markdown: renderMarkdown(oursScored, floorScored) }
}

/** One table per category (overall first): our row, then each floor's. */
function renderTables(title: string, ours: Scored, floors: Map<FloorName, Scored>, ks: number[]): string {
  const row = (label: string, m: Metrics) =>
    `${label.padEnd(12)} ${ks.map((k) => fmt(m[`recall@${k}`])).join(' ')} ${fmt(m['hit@5'])} ${fmt(m['mrr@10'])}`
  const head = `${'system'.padEnd(12)} ${ks.map((k) => `R@${k}`.padStart(5)).join(' ')}  hit@5 MRR@10`
  const lines = [title]
  for (const category of ['(all)', ...Object.keys(ours.byCategory)]) {
    const pick = (s: Scored) => category === '(all)' ? s.overall : s.byCategory[category]!
    lines.push('', `${category} (n=${pick(ours).n})`, head, row('ours', pick(ours)))
    for (const [floor, scored] of floors) lines.push(row(floor, pick(scored)))
  }
  return lines.join('\n')
}

/** The per-category Markdown table (R@5, R@10, hit@5, MRR@10; ours in bold, then each floor). */
function renderMarkdown(ours: Scored, floors: Map<FloorName, Scored>): string {
  const cells = (m: Metrics, bold: boolean) => [m['recall@5'], m['recall@10'], m['hit@5'], m['mrr@10']]
    .map((v) => (bold ? `**${(v ?? 0).toFixed(3)}**` : (v ?? 0).toFixed(3))).join(' | ')
  const lines = ['| category | n | system | R@5 | R@10 | hit@5 | MRR@10 |', '|---|---|---|---|---|---|---|']
  for (const category of ['(all)', ...Object.keys(ours.byCategory)]) {
    const pick = (s: Scored) => category === '(all)' ? s.overall : s.byCategory[category]!
    lines.push(`| ${category} | ${pick(ours).n} | **ours** | ${cells(pick(ours), true)} |`)
    for (const [floor, scored] of floors) lines.push(`|  |  | ${floor} | ${cells(pick(scored), false)} |`)
  }
  return lines.join('\n')
}

function fmt(value: number | undefined): string {
  return (value ?? 0).toFixed(3).padStart(5)
}

interface CliArgs {
  data: string
  all: boolean
  eval: string | undefined
  help: boolean
  mode: 'scoped' | 'global' | undefined
  ks: number[]
  json: boolean
  markdown: boolean
  repeat: number
  embedUrl: string
  embedModel: string
  fusion: FusionMethod | undefined
  negatives: 'cross-scope' | 'cross-set' | undefined
  against: string
  minRelevance: number
  falloff: number
  half: 'a' | 'b' | undefined
  neighbours: boolean
}

const USAGE = `usage: bench:recall [--all] [--eval <dir>] [--half a|b] [--min-relevance x] [--falloff x] [--no-neighbours] [--json]
       bench:recall --data <dir> [--mode scoped|global] [--k 5,10] [--repeat N] [--json] [--markdown]
                    [--embed-url <url> [--embed-model <name>] [--fusion ha|weighted|rrf]]
                    [--negatives cross-scope|cross-set [--against <dir>] [--min-relevance x] [--falloff x] [--half a|b]]
With no --data (or --all): every eval set under --eval (default: the shared/eval found beside this
checkout or above it), each mode it has, ranked and gated R@5/R@10, false injections against every
other set (cross-set, the highest shown) and the next scope (cross-scope), characters a noise turn;
a set of pasted chats is also replayed turn by turn with the pre-step's repeat memory (recall/replay.ts).
--no-neighbours: the same run without the conversation neighbours (lib/recall/neighbours.ts), for a baseline.
The table goes to stderr with --json, the JSON line to stdout.`

function parseArgs(argv: readonly string[]): CliArgs {
  const args: CliArgs = { data: '', all: false, eval: undefined, help: false, mode: undefined, ks: [5, 10], json: false, markdown: false, repeat: 1, embedUrl: '', embedModel: 'default', fusion: undefined,
    negatives: undefined, against: '', minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, half: undefined, neighbours: true }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw new EvalSetError(`${flag} needs a value`)
      return v
    }
    if (flag === '--data') args.data = value()
    else if (flag === '--all') args.all = true
    else if (flag === '--eval') args.eval = value()
    else if (flag === '--help' || flag === '-h') args.help = true
    else if (flag === '--embed-url') args.embedUrl = value()
    else if (flag === '--embed-model') args.embedModel = value()
    else if (flag === '--fusion') args.fusion = value() as FusionMethod
    else if (flag === '--json') args.json = true
    else if (flag === '--negatives') {
      const kind = value()
      if (kind !== 'cross-scope' && kind !== 'cross-set') throw new EvalSetError(`--negatives must be cross-scope or cross-set, not ${JSON.stringify(kind)}`)
      args.negatives = kind
    } else if (flag === '--against') args.against = value()
    else if (flag === '--min-relevance' || flag === '--falloff') {
      const v = Number(value())
      if (!(v >= 0 && v <= 1)) throw new EvalSetError(`${flag} must be a number from 0 to 1`)
      if (flag === '--min-relevance') args.minRelevance = v
      else args.falloff = v
    } else if (flag === '--half') {
      const half = value()
      if (half !== 'a' && half !== 'b') throw new EvalSetError(`--half must be a or b, not ${JSON.stringify(half)}`)
      args.half = half
    }
    else if (flag === '--markdown') args.markdown = true
    else if (flag === '--no-neighbours') args.neighbours = false
    else if (flag === '--mode') {
      const mode = value()
      if (mode !== 'scoped' && mode !== 'global') throw new EvalSetError(`--mode must be scoped or global, not ${JSON.stringify(mode)}`)
      args.mode = mode
    } else if (flag === '--k') {
      args.ks = value().split(',').map((s) => Number(s.trim()))
      if (args.ks.some((k) => !Number.isInteger(k) || k < 1 || k > 100)) throw new EvalSetError('--k must be a comma list of integers 1…100, e.g. 5,10')
    } else if (flag === '--repeat') {
      args.repeat = Number(value())
      if (!Number.isInteger(args.repeat) || args.repeat < 1 || args.repeat > 50) throw new EvalSetError('--repeat must be an integer 1…50')
    } else throw new EvalSetError(`unknown option ${flag} (${USAGE.split('\n')[0]}; --help for all)`)
  }
  if (args.all && args.data !== '') throw new EvalSetError('--all runs every set: leave out --data (or --all)')
  if (args.data === '' && args.negatives !== undefined) throw new EvalSetError('--negatives needs --data <dir> (with no --data every set runs against every kind of negatives)')
  if ((args.negatives === 'cross-set') !== (args.against !== '')) throw new EvalSetError('--negatives cross-set and --against <dir> go together')
  return args
}

async function main(): Promise<void> {
  try {
    const args = parseArgs(process.argv.slice(2))
    if (args.help) {
      process.stdout.write(`${USAGE}\n`)
      return
    }
    const json = jsonWanted(args.json)
    // The tables go to stderr when the JSON line is wanted, so stdout holds that line alone.
    const text = (table: string) => (json ? process.stderr : process.stdout).write(`${table}\n`)
    if (args.data === '') {
      const root = evalRoot(args.eval, '--eval')
      const gate = { minRelevance: args.minRelevance, falloff: args.falloff, minScore: 0, topK: 5 }
      const recall: RecallFn | undefined = args.neighbours ? undefined : (store, query, { topK, earlier }) => recallBlocks(store, query, { topK, earlier, neighbours: false })
      const rows = await runAllSets(evalSetsIn(root), { gate, half: args.half, recall, progress: (line) => process.stderr.write(`… ${line}\n`) })
      if (rows.length === 0) throw new EvalSetError(`${root}: no eval sets (folders with corpus.jsonl and queries.jsonl)`)
      text(allSetsTable(rows, `all sets in ${root} · half ${args.half ?? 'all'}${args.neighbours ? '' : ' · no neighbours'} · gate ${JSON.stringify(gate)}`))
      if (json) process.stdout.write(`${JSON.stringify({ eval: root, half: args.half ?? 'all', neighbours: args.neighbours, gate, rows })}\n`)
      return
    }
    const set = readEvalSet(args.data)
    const mode = args.mode ?? (set.scopes.length > 1 ? 'scoped' : 'global')
    const embed = args.embedUrl === '' ? undefined : { url: args.embedUrl, model: args.embedModel, languages: ['en'], fusion: args.fusion }
    const hybrid = embed ? hybridRecallFn(await benchEmbedder(set, embed), embed) : undefined
    const label = embed ? `recallBlocksHybrid(store, HttpEmbedder ${embed.url} ${embed.model} [en], fusion ${embed.fusion ?? 'default'})` : undefined
    if (args.negatives !== undefined) {
      const negatives = args.negatives === 'cross-set' ? { kind: 'cross-set' as const, against: readEvalSet(args.against) } : { kind: 'cross-scope' as const }
      const gate = { minRelevance: args.minRelevance, falloff: args.falloff, minScore: 0, topK: 5 }
      const result = await runPrecisionBench(set, { mode, negatives, gate, half: args.half, recall: hybrid?.recall, label })
      if (hybrid) result.degraded = hybrid.degraded
      text(precisionTable(result))
      if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
      return
    }
    const { result, tables, markdown } = await runRecallBench(set, { mode, ks: args.ks, repeat: args.repeat, recall: hybrid?.recall, label })
    if (hybrid) result.degraded = hybrid.degraded
    text(args.markdown ? markdown : tables)
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
  } catch (error) {
    if (!(error instanceof EvalSetError) && !(error instanceof BenchEmbedderError)) throw error
    process.stderr.write(`bench:recall: ${error.message}\n`)
    process.exitCode = 1
  }
}

if (import.meta.main) await main()
