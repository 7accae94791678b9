/**
 * `node bench/scoped-alone.ts --spread FILE --single FILE --workspaces W --blocks N [--queries Q] [--turns T] [--kinds k1,k2]`
 *
 * Recall and the pre-step of one workspace's agent on a store whose notes sit in W workspaces,
 * against the unscoped recall of the same corpus in one scope, in the same run
 * (docs/benchmarks.md, "Scale: three million notes"). `--spread` holds bench:perf's corpus of N
 * blocks with block i in workspace i mod W (`bench:grow --spread W`, or bench:perf's scoped file);
 * `--single` holds the same blocks in one scope (a `bench:perf --cache` build).
 *
 * 1. Per query kind, bench:perf's queries: recall + gate within the union a session in the
 *    workspace of the query's source block searches (that workspace plus global), alternating
 *    query by query with the unscoped recall + gate on `--single` (order alternating too), so
 *    load bursts hit both sides.
 * 2. The pre-step in a real agent loop (bench/prestep.ts), bench:perf's turns: on `--spread` with
 *    each turn's session in its source block's workspace directory, then on `--single` with no
 *    workspace (`--turns 0` skips).
 * Prints one JSON object: CPU and wall p50 / p99 / p99.9 ms per side and kind, the p99 ratios, the
 * mean hits, the pre-step's, peak RSS.
 */
import { parseArgs } from 'node:util'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { GLOBAL_SCOPE } from '../lib/store/scope-key.ts'
import { BlockStore } from '../lib/store/store.ts'
import { kindsFlag, wholeFlag } from './args.ts'
import { SCALE_QUERY_KINDS, corpus } from './corpus.ts'
import { measurePreStep } from './prestep.ts'
import { cpuMs, nowMs, percentile, round, tail } from './stats.ts'
import { benchWorkspace, benchWorkspaceDir } from './workspaces.ts'

const { values: args } = parseArgs({
  options: {
    spread: { type: 'string', default: '' },
    single: { type: 'string', default: '' },
    workspaces: { type: 'string', default: '' },
    blocks: { type: 'string', default: '' },
    seed: { type: 'string', default: '20261130' },
    queries: { type: 'string', default: '300' },
    turns: { type: 'string', default: '300' },
    kinds: { type: 'string', default: SCALE_QUERY_KINDS.join(',') },
  },
})
if (args.spread === '' || args.single === '') throw new Error('--spread FILE and --single FILE are required')
const N = wholeFlag('blocks', args.blocks)
const W = wholeFlag('workspaces', args.workspaces)
const QUERIES = wholeFlag('queries', args.queries)
const TURNS = wholeFlag('turns', args.turns, 0)
const KINDS = kindsFlag(args.kinds)
const WARMUP = 20

const gen = corpus(wholeFlag('seed', args.seed))
const spread = new BlockStore(args.spread)
const single = new BlockStore(args.single)
const out: Record<string, unknown> = { notes: spread.count(), workspaces: W, queries: QUERIES, turns: TURNS }
if (single.count() !== out.notes) throw new Error(`--spread holds ${String(out.notes)} notes, --single ${single.count()}: not the same corpus`)
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const ratios: Record<string, number> = {}
for (const kind of KINDS) {
  const side = () => ({ wall: [] as number[], cpu: [] as number[], hits: 0 })
  const scoped = side()
  const whole = side()
  for (let q = 0; q < WARMUP + QUERIES; q++) {
    const target = Math.floor((q * 7_654_321) % N) // bench:perf's queries
    const query = gen.query(kind, target)
    const scopes = [GLOBAL_SCOPE, benchWorkspace(gen.source(kind, target), W)]
    const run = (store: BlockStore, into: ReturnType<typeof side>, union?: string[]) => {
      const start = nowMs()
      const cpu0 = process.cpuUsage()
      const hits = recallBlocks(store, query, { topK: 5, ...(union === undefined ? {} : { scopes: union }) })
      gateHits(hits, gate)
      if (q >= WARMUP) { into.wall.push(nowMs() - start); into.cpu.push(cpuMs(cpu0)); into.hits += hits.length }
    }
    if (q % 2 === 0) { run(spread, scoped, scopes); run(single, whole) } else { run(single, whole); run(spread, scoped, scopes) }
  }
  ratios[kind] = round(percentile(scoped.cpu, 99) / percentile(whole.cpu, 99), 2)
  out[kind] = {
    scoped: { wall: tail(scoped.wall), cpu: tail(scoped.cpu), mean_hits: round(scoped.hits / QUERIES, 2) },
    unscoped: { wall: tail(whole.wall), cpu: tail(whole.cpu), mean_hits: round(whole.hits / QUERIES, 2) },
    cpu_p99_ratio: ratios[kind],
  }
  console.error(`${kind}: ${JSON.stringify(out[kind])}`)
}
spread.close()
single.close()
out.cpu_p99_ratio_max = Math.max(...Object.values(ratios))
if (TURNS > 0) {
  const turns: string[] = []
  const cwds: string[] = []
  for (let i = 0; i < WARMUP + TURNS; i++) {
    const kind = KINDS[i % KINDS.length]!
    const target = Math.floor((i * 1_234_567) % N) // bench:perf's turns
    turns.push(gen.query(kind, target))
    cwds.push(benchWorkspaceDir(gen.source(kind, target), W))
  }
  const inWorkspace = await measurePreStep(args.spread, turns.slice(WARMUP), WARMUP, cwds.slice(WARMUP))
  out.prestep_scoped = { wall: tail(inWorkspace.overheadMs), cpu: tail(inWorkspace.overheadCpuMs), injected: inWorkspace.injected }
  console.error(`pre-step in a workspace: ${JSON.stringify(out.prestep_scoped)}`)
  const noWorkspace = await measurePreStep(args.single, turns.slice(WARMUP), WARMUP)
  out.prestep_unscoped = { wall: tail(noWorkspace.overheadMs), cpu: tail(noWorkspace.overheadCpuMs), injected: noWorkspace.injected }
  console.error(`pre-step, one scope: ${JSON.stringify(out.prestep_unscoped)}`)
}
out.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024)
console.log(JSON.stringify(out))
