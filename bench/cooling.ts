/**
 * `npm run bench:cooling [-- --blocks 100000] [--json]`
 *
 * The cost of one cooling tick (L2 → L3) on a large store: N blocks, a tenth of them cold turns
 * captured at compaction and idle past the rule, the rest notes. One tick (`coolBatch` = 100
 * blocks selected, distilled and written in one transaction) is timed on that store and, in the
 * same run, on a store of 1,000 blocks built the same way: the ratio shows whether the work per
 * tick depends on the store size (it should not: the selection reads a partial index of cold
 * blocks, and the batch bounds the rest). With `--json` the last line is one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { coolTick } from '../lib/kernel/layers/cooling.ts'
import { distillDeterministic, factText } from '../lib/kernel/layers/distill.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp, jsonWanted, wholeFlag } from './args.ts'
import { nowMs, percentile, round } from './stats.ts'

const USAGE = 'npm run bench:cooling [-- --blocks 100000] [--json]\n\nOne cooling tick (L2 -> L3) on a large store against a plain-commit floor and a small store (docs/layers.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    ticks: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1)
const RULE = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 100 }
const SUBJECTS = ['billing', 'orders', 'gateway', 'redis', 'kafka', '支付', '网关', '订单', '结算', 'search']

function build(path: string, n: number): void {
  const store = new BlockStore(path, { now: () => T0 })
  const cold = Math.floor(n / 10)
  for (let start = 0; start < n - cold; start += 1_000) {
    const end = Math.min(n - cold, start + 1_000)
    store.commitMany(Array.from({ length: end - start }, (_, k) => ({ text: `note ${start + k}: ${SUBJECTS[(start + k) % SUBJECTS.length]} 配置项 ${start + k} 已确认` })))
  }
  for (let start = 0; start < cold; start += 1_000) {
    const end = Math.min(cold, start + 1_000)
    store.layers.capture(Array.from({ length: end - start }, (_, k) => {
      const i = start + k
      const text = i % 3 === 0 ? `好的，第 ${i} 轮我们继续讨论` : `${SUBJECTS[i % SUBJECTS.length]}-${i} 服务端口 ${10_000 + i}，部署在 10.${i % 250}.${(i >> 8) % 250}.${i % 7}`
      return { text, origin: { sessionId: `s${i % 50}`, seq: i, eventType: 'user/message', role: 'user', eventTime: T0, compactionId: '' } }
    }), () => 'compaction:user')
  }
  store.close()
}

/** Per tick: the selection alone, the distillation alone, the whole tick, and the floor (the same rows written by plain commits). */
interface TickTimes {
  select: number[]
  distill: number[]
  tick: number[]
  /** CPU time of the tick (`process.cpuUsage`, user + system). */
  tickCpu: number[]
  floor: number[]
  floorCpu: number[]
}

/** CPU time since `start` (a `process.cpuUsage()` reading), in ms. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

async function ticks(path: string, count: number): Promise<TickTimes> {
  const store = new BlockStore(path)
  const out: TickTimes = { select: [], distill: [], tick: [], tickCpu: [], floor: [], floorCpu: [] }
  try {
    for (let i = 0; i < count; i++) {
      const now = T0 + 73 * HOUR
      let t0 = nowMs()
      const candidates = store.layers.coldCandidates(now, RULE.idleMs, RULE.maxAccess, RULE.batch)
      out.select.push(nowMs() - t0)
      t0 = nowMs()
      const facts = candidates.map((c) => distillDeterministic(c.text).map(factText))
      out.distill.push(nowMs() - t0)
      let cpu = process.cpuUsage()
      t0 = nowMs()
      const report = await coolTick(store, now, RULE, 'bench')
      out.tick.push(nowMs() - t0)
      out.tickCpu.push(cpuSince(cpu))
      if (report.selected === 0) throw new Error('nothing left to cool: raise --blocks')
      // The floor: as many new blocks and edges as the tick wrote, by plain commits and links in one transaction.
      const rows = facts.flat().map((text) => `floor ${i} ${text}`)
      cpu = process.cpuUsage()
      t0 = nowMs()
      store.transaction(() => {
        const results = store.commitMany(rows.map((text) => ({ text })))
        for (const [k, result] of results.entries()) store.link({ sourceKind: 'block', sourceId: result.id, targetKind: 'block', targetId: candidates[k % candidates.length]!.id, type: 'floor' })
      })
      out.floor.push(nowMs() - t0)
      out.floorCpu.push(cpuSince(cpu))
    }
  } finally {
    store.close()
  }
  return out
}

const dir = mkdtempSync(join(tmpdir(), 'stablemem-cooling-'))
try {
  const n = wholeFlag('blocks', args.blocks)
  const count = wholeFlag('ticks', args.ticks)
  const load = loadavg()[0]!
  const t0 = nowMs()
  const smallBlocks = 1_000 * Math.max(1, Math.ceil(count * 200 / 100))
  build(join(dir, 'small.db'), smallBlocks)
  build(join(dir, 'large.db'), n)
  const buildSeconds = (nowMs() - t0) / 1000
  const small = await ticks(join(dir, 'small.db'), count)
  const large = await ticks(join(dir, 'large.db'), count)
  const p50 = (xs: number[]) => round(percentile(xs, 50))
  const result = {
    bench: 'cooling',
    blocks: n,
    batch: RULE.batch,
    tick_p50_ms: p50(large.tick),
    tick_cpu_p50_ms: p50(large.tickCpu),
    tick_max_ms: round(Math.max(...large.tick)),
    select_p50_ms: p50(large.select),
    distill_p50_ms: p50(large.distill),
    write_floor_p50_ms: p50(large.floor),
    write_floor_cpu_p50_ms: p50(large.floorCpu),
    ratio_to_floor: round(percentile(large.tick, 50) / percentile(large.floor, 50)),
    cpu_ratio_to_floor: round(percentile(large.tickCpu, 50) / percentile(large.floorCpu, 50)),
    baseline_blocks: smallBlocks,
    baseline_tick_p50_ms: p50(small.tick),
    baseline_tick_cpu_p50_ms: p50(small.tickCpu),
    ratio_to_small_store: round(percentile(large.tick, 50) / percentile(small.tick, 50)),
    build_seconds: round(buildSeconds, 1),
    load_1m: round(load, 2),
  }
  console.log(asJson ? JSON.stringify(result) : JSON.stringify(result, null, 2))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
