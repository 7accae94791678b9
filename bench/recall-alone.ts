/**
 * `node bench/recall-alone.ts --store FILE --blocks N [--queries Q] [--turns T] [--kinds k1,k2] [--baseline LIB]`
 *
 * Steps 3 and 4 of `bench:perf` without its raw FTS5 floor, on a store file that already holds
 * `bench:perf`'s corpus of N blocks (a `--cache` build, or a copy of one): recall + gate per query
 * kind, then the plugin's pre-step overhead in a real agent loop (`--turns 0` skips it). The floor
 * is what makes a million-note run take an hour on a loaded machine; this measures our side in
 * minutes, with the same queries, turns and quantiles. Prints one JSON object (CPU and wall p50 /
 * p99 / p99.9 ms per kind, the pre-step's, peak RSS). Opening the file upgrades its schema.
 *
 * `--baseline LIB` (another checkout's `lib/` folder, e.g. main's) also runs that code's recall +
 * gate on its own connection to the same file, alternating with ours query by query (each side
 * goes first on every other query), and reports its quantiles beside ours as `baseline` with
 * the per-kind ratio `cpu_p99_vs_baseline`: an A/B in one process, so a burst of load hits both.
 */
import { statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { kindsFlag, wholeFlag } from './args.ts'
import { SCALE_QUERY_KINDS, corpus } from './corpus.ts'
import { measurePreStep } from './prestep.ts'
import { cpuMs, nowMs, round, tail } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: '' },
    blocks: { type: 'string', default: '' },
    seed: { type: 'string', default: '20261130' },
    queries: { type: 'string', default: '1000' },
    turns: { type: 'string', default: '400' },
    kinds: { type: 'string', default: SCALE_QUERY_KINDS.join(',') },
    baseline: { type: 'string', default: '' },
  },
})
if (args.store === '') throw new Error('--store FILE is required (a store holding bench:perf\'s corpus)')
const N = wholeFlag('blocks', args.blocks)
const QUERIES = wholeFlag('queries', args.queries)
const TURNS = wholeFlag('turns', args.turns, 0)
const KINDS = kindsFlag(args.kinds)
const WARMUP = 20

/** One side of the A/B: a store connection and the recall + gate of one `lib/`. */
interface Side { run: (query: string) => void, close: () => void, wall: number[], cpu: number[] }
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const ours = (() => {
  const store = new BlockStore(args.store)
  return { store, run: (query: string) => { gateHits(recallBlocks(store, query, { topK: 5 }), gate) }, close: () => store.close(), wall: [], cpu: [] }
})() satisfies Side & { store: BlockStore }
async function baselineSide(lib: string): Promise<Side> {
  const at = (module: string) => pathToFileURL(resolve(lib, module)).href
  const { BlockStore: Store } = await import(at('store/store.ts')) as typeof import('../lib/store/store.ts')
  const { recallBlocks: recall } = await import(at('recall/recall.ts')) as typeof import('../lib/recall/recall.ts')
  const { gateHits: gated } = await import(at('recall/gate.ts')) as typeof import('../lib/recall/gate.ts')
  const store = new Store(args.store)
  return { run: (query) => { gated(recall(store, query, { topK: 5 }), gate) }, close: () => store.close(), wall: [], cpu: [] }
}
const sides: Side[] = args.baseline === '' ? [ours] : [ours, await baselineSide(args.baseline)]

const gen = corpus(wholeFlag('seed', args.seed))
const out: Record<string, unknown> = { notes: ours.store.count(), file_mb: Math.round(statSync(args.store).size / 2 ** 20), queries: QUERIES, turns: TURNS }
if (sides.length > 1) out.baseline = { lib: resolve(args.baseline) }
for (const kind of KINDS) {
  for (const side of sides) { side.wall.length = 0; side.cpu.length = 0 }
  for (let q = 0; q < WARMUP + QUERIES; q++) {
    const query = gen.query(kind, Math.floor((q * 7_654_321) % N)) // bench:perf's queries
    for (const side of q % 2 === 0 ? sides : [...sides].reverse()) {
      const start = nowMs()
      const cpu0 = process.cpuUsage()
      side.run(query)
      if (q >= WARMUP) { side.wall.push(nowMs() - start); side.cpu.push(cpuMs(cpu0)) }
    }
  }
  out[kind] = { wall: tail(ours.wall), cpu: tail(ours.cpu) }
  if (sides.length > 1) {
    const base = sides[1]!
    const baseline = out.baseline as Record<string, unknown>
    baseline[kind] = { wall: tail(base.wall), cpu: tail(base.cpu) }
    baseline[`${kind}_cpu_p99_vs_baseline`] = round(tail(ours.cpu).p99_ms / tail(base.cpu).p99_ms)
    baseline[`${kind}_cpu_p50_vs_baseline`] = round(tail(ours.cpu).p50_ms / tail(base.cpu).p50_ms)
  }
  console.error(`${kind}: ${JSON.stringify(out[kind])}${sides.length > 1 ? ` baseline ${JSON.stringify((out.baseline as Record<string, unknown>)[kind])}` : ''}`)
}
for (const side of sides) side.close()
if (TURNS > 0) {
  const turns: string[] = []
  for (let i = 0; i < WARMUP + TURNS; i++) turns.push(gen.query(KINDS[i % KINDS.length]!, Math.floor((i * 1_234_567) % N))) // bench:perf's turns
  const pre = await measurePreStep(args.store, turns.slice(WARMUP), WARMUP)
  out.prestep = { wall: tail(pre.overheadMs), cpu: tail(pre.overheadCpuMs), injected: pre.injected }
}
out.load_avg = loadavg().map((l) => round(l, 2))
out.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024)
console.log(JSON.stringify(out))
