/**
 * `npm run bench:cooling [-- --blocks 100000] [--json]`
 *
 * The cost of one cooling tick (L2 → L3) on a large store: N blocks, a tenth of them cold turns
 * captured at compaction and idle past the rule, the rest notes. One tick (`coolBatch` = 200
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
import { BlockStore } from '../lib/store/store.ts'
import { nowMs, percentile, round } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    ticks: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
  },
})

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1)
const RULE = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 200 }
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

async function ticks(path: string, count: number): Promise<number[]> {
  const store = new BlockStore(path)
  const out: number[] = []
  try {
    for (let i = 0; i < count; i++) {
      const t0 = nowMs()
      const report = await coolTick(store, T0 + 73 * HOUR, RULE, 'bench')
      out.push(nowMs() - t0)
      if (report.selected === 0) throw new Error('nothing left to cool: raise --blocks')
    }
  } finally {
    store.close()
  }
  return out
}

const dir = mkdtempSync(join(tmpdir(), 'stablemem-cooling-'))
try {
  const n = Number(args.blocks)
  const count = Number(args.ticks)
  const load = loadavg()[0]!
  const t0 = nowMs()
  build(join(dir, 'small.db'), 1_000 * Math.max(1, Math.ceil(count * 200 / 100)))
  build(join(dir, 'large.db'), n)
  const buildSeconds = (nowMs() - t0) / 1000
  const small = await ticks(join(dir, 'small.db'), count)
  const large = await ticks(join(dir, 'large.db'), count)
  const result = {
    bench: 'cooling',
    blocks: n,
    batch: RULE.batch,
    tick_p50_ms: round(percentile(large, 50)),
    tick_max_ms: round(Math.max(...large)),
    baseline_blocks: 1_000 * Math.max(1, Math.ceil(count * 200 / 100)),
    baseline_tick_p50_ms: round(percentile(small, 50)),
    ratio: round(percentile(large, 50) / percentile(small, 50)),
    build_seconds: round(buildSeconds, 1),
    load_1m: round(load, 2),
  }
  console.log(args.json ? JSON.stringify(result) : JSON.stringify(result, null, 2))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
