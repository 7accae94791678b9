/**
 * `node bench/recall-alone.ts --store FILE --blocks N [--queries Q] [--turns T] [--kinds k1,k2]`
 *
 * Steps 3 and 4 of `bench:perf` without its raw FTS5 floor, on a store file that already holds
 * `bench:perf`'s corpus of N blocks (a `--cache` build, or a copy of one): recall + gate per query
 * kind, then the plugin's pre-step overhead in a real agent loop (`--turns 0` skips it). The floor
 * is what makes a million-note run take an hour on a loaded machine; this measures our side in
 * minutes, with the same queries, turns and quantiles. Prints one JSON object (CPU and wall p50 /
 * p99 / p99.9 ms per kind, the pre-step's, peak RSS). Opening the file upgrades its schema.
 */
import { statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { SCALE_QUERY_KINDS, corpus, type QueryKind } from './corpus.ts'
import { measurePreStep } from './prestep.ts'
import { cpuMs, nowMs, tail } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: '' },
    blocks: { type: 'string', default: '' },
    seed: { type: 'string', default: '20261130' },
    queries: { type: 'string', default: '1000' },
    turns: { type: 'string', default: '400' },
    kinds: { type: 'string', default: SCALE_QUERY_KINDS.join(',') },
  },
})
if (args.store === '') throw new Error('--store FILE is required (a store holding bench:perf\'s corpus)')
const N = whole('blocks', 1)
const QUERIES = whole('queries', 1)
const TURNS = whole('turns', 0)
const KINDS = args.kinds.split(',').map((k) => {
  if (!(SCALE_QUERY_KINDS as readonly string[]).includes(k)) throw new Error(`--kinds: unknown kind ${k} (known: ${SCALE_QUERY_KINDS.join(', ')})`)
  return k as QueryKind
})
const WARMUP = 20

function whole(name: 'blocks' | 'queries' | 'turns' | 'seed', least: number): number {
  const value = Number(args[name])
  if (args[name] === '' || !Number.isInteger(value) || value < least) throw new Error(`--${name} must be a whole number ≥ ${least}, got ${String(args[name])}`)
  return value
}

const gen = corpus(whole('seed', 1))
const store = new BlockStore(args.store)
const out: Record<string, unknown> = { notes: store.count(), file_mb: Math.round(statSync(args.store).size / 2 ** 20), queries: QUERIES, turns: TURNS }
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
for (const kind of KINDS) {
  const wall: number[] = []
  const cpu: number[] = []
  for (let q = 0; q < WARMUP + QUERIES; q++) {
    const query = gen.query(kind, Math.floor((q * 7_654_321) % N)) // bench:perf's queries
    const start = nowMs()
    const cpu0 = process.cpuUsage()
    gateHits(recallBlocks(store, query, { topK: 5 }), gate)
    if (q >= WARMUP) { wall.push(nowMs() - start); cpu.push(cpuMs(cpu0)) }
  }
  out[kind] = { wall: tail(wall), cpu: tail(cpu) }
  console.error(`${kind}: ${JSON.stringify(out[kind])}`)
}
store.close()
if (TURNS > 0) {
  const turns: string[] = []
  for (let i = 0; i < WARMUP + TURNS; i++) turns.push(gen.query(KINDS[i % KINDS.length]!, Math.floor((i * 1_234_567) % N))) // bench:perf's turns
  const pre = await measurePreStep(args.store, turns.slice(WARMUP), WARMUP)
  out.prestep = { wall: tail(pre.overheadMs), cpu: tail(pre.overheadCpuMs), injected: pre.injected }
}
out.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024)
console.log(JSON.stringify(out))
