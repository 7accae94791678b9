/**
 * `npm run bench:neighbours -- [--blocks N] [--queries Q] [--conversation C] [--json]`
 *
 * What conversation neighbours (`lib/recall/neighbours.ts`) cost per recall. bench:perf's corpus
 * has no scenes, so the lift never runs there; this bench commits the same seeded corpus
 * (bench/corpus.ts) into a fresh file with every `C` consecutive notes one conversation (one scene,
 * saved together), then recalls each of bench:perf's query kinds with and without neighbours,
 * alternating which goes first query by query (so neither side gets the warmer cache), and reports
 * wall and this process's CPU time at p50 and p99 for both, and their difference. Ranking quality
 * is bench:recall's (`--no-neighbours` for the same run without).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { jsonWanted, progressLog } from './args.ts'
import { corpus, SCALE_QUERY_KINDS } from './corpus.ts'
import { cpuMs, nowMs, round, summary } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    conversation: { type: 'string', default: '20' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})
if (args.help) {
  process.stdout.write('usage: bench:neighbours [--blocks N] [--queries Q] [--conversation C] [--seed S] [--json]\n')
  process.exit(0)
}
const whole = (name: string, value: string) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(value)}`)
  return n
}
const N = whole('blocks', args.blocks)
const QUERIES = whole('queries', args.queries)
const CONVERSATION = whole('conversation', args.conversation)
const WARMUP = 20
const json = jsonWanted(args.json)
const log = progressLog(json)
const gen = corpus(whole('seed', args.seed))

const dir = mkdtempSync(join(tmpdir(), 'stablemem-neighbours-'))
let clock = 1_700_000_000_000
const store = new BlockStore(join(dir, 'memory.db'), { now: () => clock })
try {
  const started = nowMs()
  for (let from = 0; from < N; from += 1000) {
    const inputs = []
    for (let i = from; i < Math.min(N, from + 1000); i++) inputs.push({ text: gen.block(i).text, source: 'bench', scene: `conversation-${Math.floor(i / CONVERSATION)}` })
    clock += 60_000
    store.commitMany(inputs)
  }
  log(`built ${N} notes in ${Math.round((nowMs() - started) / 1000)} s, conversations of ${CONVERSATION}`)
  const kinds: Record<string, unknown> = {}
  for (const kind of SCALE_QUERY_KINDS) {
    const wall = { on: [] as number[], off: [] as number[] }
    const cpu = { on: [] as number[], off: [] as number[] }
    for (let q = 0; q < WARMUP + QUERIES; q++) {
      const query = gen.query(kind, Math.floor((q * 7_654_321) % N))
      for (const side of q % 2 === 0 ? ['on', 'off'] as const : ['off', 'on'] as const) {
        const t0 = nowMs()
        const c0 = process.cpuUsage()
        recallBlocks(store, query, { topK: 5, neighbours: side === 'on' })
        if (q < WARMUP) continue
        cpu[side].push(cpuMs(c0))
        wall[side].push(nowMs() - t0)
      }
    }
    const on = { wall: summary(wall.on), cpu: summary(cpu.on) }
    const off = { wall: summary(wall.off), cpu: summary(cpu.off) }
    kinds[kind] = { with: on, without: off, cpu_p50_added_ms: round(on.cpu.p50_ms - off.cpu.p50_ms), cpu_p99_added_ms: round(on.cpu.p99_ms - off.cpu.p99_ms) }
    log(`${kind.padEnd(20)} cpu p50 ${on.cpu.p50_ms} / ${off.cpu.p50_ms} ms, p99 ${on.cpu.p99_ms} / ${off.cpu.p99_ms} ms (with / without); wall p99 ${on.wall.p99_ms} / ${off.wall.p99_ms} ms`)
  }
  if (json) process.stdout.write(`${JSON.stringify({ blocks: N, queries: QUERIES, conversation: CONVERSATION, kinds })}\n`)
} finally {
  store.close()
  rmSync(dir, { recursive: true, force: true })
}
