/**
 * `npm run bench:needle [-- --json] [--windows 3000,8000,32000] [--overshoots 1,3,10] [--captureRuns 30]`
 * (`--windows=` alone measures only the capture cost)
 *
 * Needles past the window: in the real agent loop with dsh's token meter and basic compaction
 * (threshold .5, a scripted model that writes a short summary), twelve facts of every kind
 * (ports, IPs, paths, versions, names, dates; Chinese and English) are said once each, spread
 * over the conversation, then filler follows until k × the window has passed after the last one,
 * then each is asked for. A needle counts as reached when its value is in the model's request for
 * its question: in the question's own recall message or anywhere in the rest of the request
 * (recall messages of earlier questions do not count). The same conversation runs with the
 * plugin and without it in the same process, for windows 3k/8k/32k and k = 1/3/10.
 *
 * Also measures the capture cost: one compacted region of 200 messages extracted and stored as
 * cold blocks, against committing the same texts as notes (the normal commit path) in the same run.
 *
 * With `--json` the last line is one JSON object: `with_plugin`, `without_plugin` (shares 0–1),
 * `by_window`, `by_overshoot`, `by_kind`, `compacted` (share of needles gone from the request
 * before the questions), `recall_tokens` and `capture`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import type {} from '@deepseek-ai/dsh-token-meter'
import { extractPieces, type EventLike } from '../lib/kernel/layers/extract.ts'
import { BlockStore } from '../lib/store/store.ts'
import { injected, requestTexts, userMessage } from '../test/helpers/harness.ts'
import { bootWindowed, filler, requestHas } from '../test/helpers/windowed.ts'
import { exitOnHelp, jsonWanted, wholeFlag } from './args.ts'
import { nowMs, percentile, round } from './stats.ts'

const USAGE = 'npm run bench:needle [-- --json] [--windows 3000,8000,32000] [--overshoots 1,3,10] [--captureRuns 30]\n\nNeedles said once and buried past the context window, recalled with and without the plugin; --windows= alone measures only the capture cost (docs/layers.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    windows: { type: 'string', default: '3000,8000,32000' },
    overshoots: { type: 'string', default: '1,3,10' },
    captureRuns: { type: 'string', default: '30' },
  },
})
const asJson = jsonWanted(args.json)
const CAPTURE_RUNS = wholeFlag('captureRuns', args.captureRuns)

/** One fact said once, and the question that asks for it later. */
interface Needle {
  kind: 'port' | 'ip' | 'path' | 'version' | 'name' | 'date'
  lang: 'zh' | 'en'
  say: string
  ask: string
  value: string
}

const NEEDLES: Needle[] = [
  { kind: 'port', lang: 'zh', say: '记一下：billing 服务端口 13010。', ask: 'billing 服务的端口是多少？', value: '13010' },
  { kind: 'ip', lang: 'zh', say: '测试环境的 redis 部署在 10.42.7.19 上。', ask: '测试环境 redis 的 IP 是什么？', value: '10.42.7.19' },
  { kind: 'path', lang: 'zh', say: '订单服务的日志写到 /var/log/orders/app.log。', ask: '订单服务的日志在哪个路径？', value: '/var/log/orders/app.log' },
  { kind: 'version', lang: 'zh', say: '前端现在用的 React 版本是 18.3.1。', ask: '前端的 React 是哪个版本？', value: '18.3.1' },
  { kind: 'name', lang: 'zh', say: '这个项目的负责人是王海涛。', ask: '这个项目的负责人是谁？', value: '王海涛' },
  { kind: 'date', lang: 'zh', say: '正式上线日期定在 2027-03-15。', ask: '正式上线日期是哪天？', value: '2027-03-15' },
  { kind: 'port', lang: 'en', say: 'Note: the metrics exporter listens on port 9464.', ask: 'Which port does the metrics exporter listen on?', value: '9464' },
  { kind: 'ip', lang: 'en', say: 'The staging database host is 172.16.40.8.', ask: 'What is the staging database host?', value: '172.16.40.8' },
  { kind: 'path', lang: 'en', say: 'The release script lives at /opt/release/bin/cut-release.sh.', ask: 'Where does the release script live?', value: '/opt/release/bin/cut-release.sh' },
  { kind: 'version', lang: 'en', say: 'We pinned postgres to version 15.6 for the migration.', ask: 'Which postgres version did we pin for the migration?', value: '15.6' },
  { kind: 'name', lang: 'en', say: 'The on-call engineer this week is Priya Raman.', ask: 'Who is the on-call engineer this week?', value: 'Priya Raman' },
  { kind: 'date', lang: 'en', say: 'The contract renewal is due on 2027-01-31.', ask: 'When is the contract renewal due?', value: '2027-01-31' },
]

interface NeedleResult {
  needle: Needle
  window: number
  overshoot: number
  withPlugin: boolean
  reached: boolean
  compacted: boolean
  recallTokens: number
}

/** Whether the value reached the question's request: its own recall message, or any message that is not one of our recall messages. */
function reached(request: GenerateOptions, value: string): boolean {
  const ours = injected(request)
  const own = ours.at(-1)
  const rest = { ...request, messages: request.messages.filter((m) => !ours.includes(m)) }
  return (own !== undefined && requestTexts({ ...request, messages: [own] }).some((x) => x.includes(value))) || requestHas(rest, value)
}

async function conversation(window: number, overshoot: number, withPlugin: boolean, dir: string): Promise<NeedleResult[]> {
  const w = await bootWindowed({ contextWindow: window, plugin: withPlugin ? { path: join(dir, `w${window}-k${overshoot}.db`) } : false })
  try {
    const tokensOf = (text: string) => w.ctx.tokenMeter.estimateMessage(userMessage(text))
    const turnChars = Math.max(400, Math.round(window * 0.25))
    let turn = 0
    const spacer = async (tokens: number) => {
      let said = 0
      while (said < tokens) {
        const text = filler(turn++, turnChars)
        said += tokensOf(text)
        await w.say(text)
      }
    }
    for (const needle of NEEDLES) {
      await w.say(needle.say)
      await spacer(window * 0.3)
    }
    await spacer(window * overshoot)
    const before = w.adapter.conversation().at(-1)!
    const out: NeedleResult[] = []
    for (const needle of NEEDLES) {
      await w.say(needle.ask)
      const request = w.adapter.conversation().at(-1)!
      const own = withPlugin ? injected(request).at(-1) : undefined
      out.push({
        needle, window, overshoot, withPlugin,
        reached: reached(request, needle.value),
        compacted: !requestHas(before, needle.value),
        recallTokens: own === undefined ? 0 : w.ctx.tokenMeter.estimateMessage(own),
      })
    }
    if (w.errors.length > 0) throw new Error(`agent errors: ${String(w.errors[0])}`)
    return out
  } finally {
    await w.dispose()
  }
}

/** A compacted region of `n` messages shaped like dsh's events: person, assistant, tool results in turn. */
function region(n: number, salt: number): EventLike[] {
  const events: EventLike[] = []
  for (let i = 0; i < n; i++) {
    const text = `${filler(i + salt, 480)} #${salt}-${i}`
    if (i % 3 === 0) events.push({ type: 'user/message', seq: i, time: i, data: { id: `u${i}`, role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] } })
    else if (i % 3 === 1) events.push({ type: 'assistant/message', seq: i, time: i, data: { message: { content: [{ type: 'reasoning', text: 'hmm' }, { type: 'text', text }] } } })
    else events.push({ type: 'tool/result', seq: i, time: i, data: { message: { content: [{ type: 'tool-result', toolCallId: `c${i}`, content: [{ type: 'text', text }] }] } } })
  }
  return events
}

/** Wall and CPU time (`process.cpuUsage`, µs resolution) of `fn`, in ms. */
function timed(fn: () => void): { wall: number, cpu: number } {
  const cpu0 = process.cpuUsage()
  const t0 = nowMs()
  fn()
  const wall = nowMs() - t0
  const cpu = process.cpuUsage(cpu0)
  return { wall, cpu: (cpu.user + cpu.system) / 1000 }
}

function captureCost(dir: string, runs: number): Record<string, number> {
  const store = new BlockStore(join(dir, 'capture.db'))
  const capture: Array<{ wall: number, cpu: number }> = []
  const commit: Array<{ wall: number, cpu: number }> = []
  const options = { sessionId: 'bench', humanKinds: new Set(['user']), ownTools: new Set<string>(), toolResultChars: 4_000, maxPieceChars: 32_768 }
  try {
    for (let r = 0; r < runs; r++) {
      const events = region(200, 2 * r)
      capture.push(timed(() => {
        const pieces = extractPieces(events, { ...options, compactionId: `c${r}` })
        store.layers.capture(pieces, (p) => `compaction:${p.origin.role}`)
      }))
      // Baseline: the same amount of text committed as notes through the normal commit path.
      const texts = extractPieces(region(200, 2 * r + 1), { ...options, compactionId: '' }).map((p) => p.text)
      commit.push(timed(() => { store.commitMany(texts.map((text) => ({ text }))) }))
    }
  } finally {
    store.close()
  }
  const p50 = (xs: Array<{ wall: number, cpu: number }>, key: 'wall' | 'cpu') => percentile(xs.map((x) => x[key]), 50)
  return {
    messages: 200,
    capture_p50_ms: round(p50(capture, 'wall')), capture_cpu_p50_ms: round(p50(capture, 'cpu')), capture_max_ms: round(Math.max(...capture.map((x) => x.wall))),
    commit_baseline_p50_ms: round(p50(commit, 'wall')), commit_baseline_cpu_p50_ms: round(p50(commit, 'cpu')),
    ratio: round(p50(capture, 'wall') / p50(commit, 'wall')), cpu_ratio: round(p50(capture, 'cpu') / p50(commit, 'cpu')),
  }
}

function share(results: readonly NeedleResult[], pick: (r: NeedleResult) => boolean): number {
  return results.length === 0 ? 0 : round(results.filter(pick).length / results.length)
}

async function main(): Promise<void> {
  const windows = args.windows.split(',').filter((x) => x !== '').map(Number)
  const overshoots = args.overshoots.split(',').filter((x) => x !== '').map(Number)
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-needle-'))
  const load = loadavg()[0]!
  const started = nowMs()
  const results: NeedleResult[] = []
  try {
    for (const window of windows) {
      for (const overshoot of overshoots) {
        for (const withPlugin of [true, false]) {
          const run = await conversation(window, overshoot, withPlugin, dir)
          results.push(...run)
          if (!asJson) console.log(`window ${window} ×${overshoot} ${withPlugin ? 'with   ' : 'without'}: ${run.filter((r) => r.reached).length}/${run.length} reached, ${run.filter((r) => r.compacted).length} compacted away`)
        }
      }
    }
    const capture = captureCost(dir, CAPTURE_RUNS)
    const withR = results.filter((r) => r.withPlugin)
    const withoutR = results.filter((r) => !r.withPlugin)
    const group = <K extends string | number>(key: (r: NeedleResult) => K) => {
      const out: Record<string, { with_plugin: number, without_plugin: number, compacted: number, needles: number }> = {}
      for (const k of [...new Set(results.map(key))]) {
        const w = withR.filter((r) => key(r) === k)
        const wo = withoutR.filter((r) => key(r) === k)
        out[String(k)] = { with_plugin: share(w, (r) => r.reached), without_plugin: share(wo, (r) => r.reached), compacted: share(w, (r) => r.compacted), needles: w.length }
      }
      return out
    }
    const tokens = withR.map((r) => r.recallTokens)
    const summary = {
      bench: 'needle',
      with_plugin: share(withR, (r) => r.reached),
      without_plugin: share(withoutR, (r) => r.reached),
      compacted: share(withR, (r) => r.compacted),
      needles: withR.length,
      by_window: group((r) => r.window),
      by_overshoot: group((r) => `${r.overshoot}x`),
      by_kind: group((r) => `${r.needle.kind}/${r.needle.lang}`),
      recall_tokens: { mean: round(tokens.reduce((a, b) => a + b, 0) / Math.max(1, tokens.length), 1), p50: percentile(tokens, 50), max: Math.max(0, ...tokens) },
      missed: withR.filter((r) => !r.reached).map((r) => `${r.window}/${r.overshoot}x/${r.needle.kind}/${r.needle.lang}`),
      capture,
      seconds: round((nowMs() - started) / 1000, 1),
      load_1m: round(load, 2),
    }
    if (asJson) console.log(JSON.stringify(summary))
    else console.log(JSON.stringify(summary, null, 2))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
