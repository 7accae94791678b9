/**
 * `npm run bench:stages -- [--turns T] [--compare <dir>/lib/index.ts] [--json]`
 * `node --cpu-prof bench/stages.ts --only <arm>` (one loop alone, for a CPU profile)
 *
 * What the stage API costs per turn: the same turn (two tool steps and a final answer, so every
 * stage fires: on_input, pre_action ×3, post_action on every chunk, before/after_toolcall ×2,
 * after_output) in four real agent loops in one process, one turn each in rotation (forward,
 * then backward):
 *
 * - `bare`: dsh alone, no plugin;
 * - `plugin`: dsh-stablemem mounted (its binding plus its own scene, recall and statistics handlers);
 * - `noops`: the same with seven no-op handlers on every stage, registered once at start-up;
 * - `control`: `plugin` again, so `control` against `plugin` shows how far the same estimate moves
 *   between two loops that differ in nothing (an A/A test).
 *
 * The stage overhead is `noops` against `plugin`: how far each quantile of the turn's CPU time
 * moves (p50, p99, p99.9), estimated by `quantileShift` (bench/shift.ts: Harrell–Davis
 * quantiles, a 95 % moving-block bootstrap interval over rounds). The stated CPU is the main
 * thread's (session 8: V8's helper threads' work widened the process's interval), GC-charged
 * (see `charged`): no collection runs inside a measured turn (a young-generation one runs before
 * each, a full one every 50 rounds: see `between`), and each turn is charged what it allocated at
 * the price per byte that calibration rounds after the measured ones, with V8 collecting where
 * it likes, show (see `gcRate`). `control` against `plugin`, by the same estimator, is how far
 * it moves between two loops that differ in nothing; a run whose control p99 interval does not
 * cover 0 or is wider than twice the bound resolves nothing (`bound: 'not resolved'`). The
 * process's GC-charged CPU (the stated measure until session 8), raw process CPU, the turns that
 * saw no GC pause, the main thread's uncharged CPU and wall time are reported beside it, each
 * with its control.
 * docs/stages.md, "Cost", says why this estimator and how to read it.
 * `--compare <dir>/lib/index.ts` adds two loops with another build of the plugin (e.g. an older
 * one: `git archive <rev> lib | tar -x -C .cache/rev`), `compare` and `compare_noops`, so the
 * stage overhead of both builds is measured in the same run.
 * `host_turn_*` times the stage host alone on the same handler calls (see `hostOnly`).
 * `--only <arm>` runs that loop alone (for `node --cpu-prof`). With `--json` the last line is one
 * JSON object.
 */
import { Context } from '@deepseek-ai/cordis'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { Agent } from '@deepseek-ai/dsh-agent'
import * as plugin from '../lib/index.ts'
import { STAGES } from '../lib/index.ts'
import { StageHost } from '../lib/kernel/stages/host.ts'
import { untraced } from '../lib/plugin/untraced.ts'
import { ScriptedAdapter, reply, toolCall, userMessage } from '../test/helpers/harness.ts'
import { PerformanceObserver } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { loadavg } from 'node:os'
import { exitOnHelp, jsonWanted, wholeFlag } from './args.ts'
import { quantileShift, type Shift } from './shift.ts'
import { cpuMs, percentile, round, summary } from './stats.ts'

const USAGE = 'npm run bench:stages -- [--turns T] [--compare <dir>/lib/index.ts] [--only <arm>] [--json]\n\nWhat the stage API adds to a turn: the quantile shift of CPU per turn with and without handlers, with an A/A control (docs/benchmarks.md, "Stage overhead").'
exitOnHelp(USAGE)
const { values: args } = parseArgs({ options: { turns: { type: 'string', default: '1000' }, json: { type: 'boolean', default: false }, compare: { type: 'string' }, only: { type: 'string' } } })
const asJson = jsonWanted(args.json)
const TURNS = wholeFlag('turns', args.turns)
const WARMUP = 50
const NOOPS_PER_STAGE = 7
/** Rounds after the measured ones, run without the collections between turns, to price collection per byte (see `gcRate`). */
const CALIBRATION = Math.max(200, Math.round(TURNS / 5))
/** A full collection outside the turns every this many rounds, so that V8's incremental marking never runs inside one. */
const FULL_GC_EVERY = 50

setFlagsFromString('--expose-gc')
/** V8's collector, called between turns (never inside one): see `between`. */
const collect = runInNewContext('gc') as (options: { type: 'minor' | 'major', execution: 'sync' }) => void
/** Whether the turns now running are measured ones, which get an emptied young generation before they start. */
let settle = true

/**
 * Before a measured turn: a young-generation collection, outside the timed window, so that no
 * scavenge falls inside any measured turn and every turn starts from the same empty nursery. A
 * scavenge lands on whichever turn fills the young generation (every 6–7 rounds, 5–27 ms
 * each), and the turns beside it run in a heap of other shape; that, not the handlers, set the
 * p99 of every arm. Collection is still paid, by allocation: see `charged`.
 */
function between(): number {
  if (!settle) return 0
  const start = cpuMs()
  collect({ type: 'minor', execution: 'sync' })
  return cpuMs() - start
}

/** One timed turn, in ms: CPU of the process (user + system, every thread) and wall; start and end on the `performance.now()` clock. */
interface Sample {
  cpu: number
  /** CPU of the main thread alone (`process.threadCpuUsage`): without V8's helper threads (concurrent marking, compilers). */
  thread: number
  wall: number
  start: number
  end: number
  /** How much the used heap grew: the bytes the turn allocated, when no collection ran inside it. */
  grown: number
  /** CPU of the young-generation collection just before the turn (what the previous turn of this process left alive), 0 when none ran. */
  swept: number
}

/** One agent loop, ready to run the benchmark turn. */
interface Loop {
  label: string
  /** Runs one turn. */
  run(): Promise<Sample>
  dispose(): Promise<void>
}

async function loop(label: string, withPlugin: boolean, module: typeof plugin = plugin): Promise<Loop & { ctx: Context }> {
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  const fiber = withPlugin ? await ctx.plugin(module, module.resolveConfig({ path: ':memory:' })) : undefined
  const adapter = new ScriptedAdapter([])
  ctx.llm.registerAdapter(['mock'], adapter)
  ctx.tools.register(defineTool({
    name: 'echo',
    description: 'Echo a word.',
    parameters: { word: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute(a) { return a.word },
  }))
  let turn = 0
  return {
    label,
    ctx,
    async run() {
      const script = (adapter as unknown as { script: unknown[] }).script
      script.push(toolCall('c1', 'echo', { word: 'a' }), toolCall('c2', 'echo', { word: 'b' }), reply('done'))
      const handle = await ctx.agents.create({ sessionId: SessionId(`${label}-${++turn}`), agentOptions: { provider: 'mock', model: 'mock-1' } })
      const agent = handle.agent
      const swept = between()
      const heap = getHeapStatistics().used_heap_size
      const start = performance.now()
      const thread = process.threadCpuUsage()
      const cpu = cpuMs()
      agent.followup(userMessage('run two steps'))
      await agent.whenIdle()
      if (withPlugin) await ctx.stablemem.stages?.idle()
      const used = cpuMs() - cpu
      const ownThread = process.threadCpuUsage(thread)
      const end = performance.now()
      const grown = getHeapStatistics().used_heap_size - heap
      adapter.requests.length = 0
      await handle.dispose() // so that no loop grows with the number of turns it ran
      return { cpu: used, thread: (ownThread.user + ownThread.system) / 1000, wall: end - start, start, end, grown, swept }
    },
    async dispose() {
      await fiber?.dispose()
      await ctx.fiber.dispose()
    },
  }
}

/** A loop with the no-op handlers, registered once, as a plugin registers its handlers at start-up. */
async function withNoops(label: string, module: typeof plugin = plugin): Promise<Loop & { ctx: Context }> {
  const l = await loop(label, true, module)
  for (const stage of STAGES) for (let i = 0; i < NOOPS_PER_STAGE; i++) l.ctx.stablemem.stages.on(stage, () => undefined)
  return l
}
const all: Array<Loop & { ctx: Context }> = [await loop('bare', false), await loop('plugin', true), await withNoops('noops'), await loop('control', true)]
if (args.compare !== undefined) {
  const other = await import(pathToFileURL(resolve(args.compare)).href) as typeof plugin
  all.push(await loop('compare', true, other), await withNoops('compare_noops', other))
}
// `--only <arm>` runs one arm alone, for `node --cpu-prof`.
const loops = args.only === undefined ? all : all.filter((l) => l.label === args.only)
if (loops.length === 0) throw new Error(`--only must be one of ${all.map((l) => l.label).join(', ')}`)
const loadStart = loadavg()
const gc = gcPauses()
const samples = new Map(loops.map((l) => [l.label, [] as Sample[]]))
const calibration = new Map(loops.map((l) => [l.label, [] as Sample[]]))
for (let i = 0; i < WARMUP + TURNS + CALIBRATION; i++) {
  settle = i < WARMUP + TURNS
  if (settle && i % FULL_GC_EVERY === 0) collect({ type: 'major', execution: 'sync' })
  // bare, plugin, noops, control and then reversed: noops always sits between the two loops
  // without handlers, so both see the same process state around it.
  for (const l of i % 2 === 0 ? loops : [...loops].reverse()) {
    const t = await l.run()
    if (i >= WARMUP + TURNS) calibration.get(l.label)!.push(t)
    else if (i >= WARMUP) samples.get(l.label)!.push(t)
  }
}
const pauses = await gc.stop()
const loadEnd = loadavg()
const calls = args.only === undefined ? serviceCalls(all[1]!.ctx) : undefined
for (const l of all) await l.dispose()
if (args.only !== undefined) {
  const s = summary(samples.get(args.only)!.map((t) => t.cpu))
  console.log(JSON.stringify({ turns: TURNS, only: args.only, cpu_p50_ms: s.p50_ms, cpu_p99_ms: s.p99_ms }))
  process.exit(0)
}

/**
 * The stage host alone, without dsh around it: the handler calls of one such turn (on_input once,
 * pre_action three times, post_action on nine chunks, before/after_toolcall twice, after_output
 * once) with the no-op handlers, CPU time per turn. Nothing else runs in between, so its p99 is
 * not drowned by the agent loop's own garbage collection.
 */
async function hostOnly(turns: number): Promise<number[]> {
  const host = new StageHost({ warn: () => {} })
  for (const stage of STAGES) for (let i = 0; i < NOOPS_PER_STAGE; i++) host.add(stage, () => undefined)
  const agent = { id: 'bench', session: { header: {} } } as unknown as Agent
  const signal = new AbortController().signal
  const base = { agent, turn: 1, step: 1, signal }
  const call = { ...base, callId: 'c' as never, name: 'echo', arguments: {} }
  const chunk = { type: 'finish', reason: { kind: 'stop' } } as const
  const next = () => 'next' as const
  const samples: number[] = []
  for (let i = 0; i < WARMUP + turns; i++) {
    const start = cpuMs()
    await host.run('on_input', agent, () => ({ ...base, messages: [] }), next)
    for (let step = 0; step < 3; step++) await host.run('pre_action', agent, () => ({ ...base, messages: [] }), next)
    for (let c = 0; c < 9; c++) for (const entry of host.applicable('post_action', agent)) host.invoke(entry, { ...base, chunk })
    for (let tool = 0; tool < 2; tool++) {
      await host.run('before_toolcall', agent, () => call, next)
      await host.run('after_toolcall', agent, () => ({ ...call, isError: false, content: [] }), next)
    }
    await host.run('after_output', agent, () => ({ agent, turn: 1, reason: { kind: 'completed' }, text: '' }), next)
    if (i >= WARMUP) samples.push(cpuMs() - start)
  }
  return samples
}
const host = summary(await hostOnly(TURNS * 10))

/**
 * What one call of a service method costs the plugin's code, in µs of CPU (20,000 calls of
 * `unavailableReason()`, a field read): resolving `ctx.stablemem` and calling through it, calling
 * a kept reference to the traced service, and calling the object itself (`untraced`, as the
 * plugin's per-turn paths do: lib/plugin/untraced.ts).
 */
function serviceCalls(ctx: Context): { via_ctx_us: number, traced_us: number, untraced_us: number } {
  const n = 20_000
  const time = (fn: () => unknown): number => {
    const start = cpuMs()
    for (let i = 0; i < n; i++) fn()
    return round((cpuMs() - start) * 1000 / n)
  }
  const traced = ctx.stablemem
  const raw = untraced(traced)
  time(() => raw.unavailableReason()) // warm-up
  return { via_ctx_us: time(() => ctx.stablemem.unavailableReason()), traced_us: time(() => traced.unavailableReason()), untraced_us: time(() => raw.unavailableReason()) }
}

/** Main-thread GC pauses seen by `perf_hooks` while the turns ran ([start, end] on the `performance.now()` clock). */
function gcPauses(): { stop(): Promise<Array<[number, number]>> } {
  const seen: Array<[number, number]> = []
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) seen.push([e.startTime, e.startTime + e.duration])
  })
  observer.observe({ entryTypes: ['gc'] })
  return {
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 50)) // entries are delivered asynchronously
      observer.disconnect()
      return seen.sort((a, b) => a[0] - b[0])
    },
  }
}

/** The part of each GC pause that falls inside [start, end], summed, in ms. */
function gcIn(start: number, end: number): number {
  let lo = 0
  let hi = pauses.length
  while (lo < hi) { // the first pause that ends after `start`
    const mid = (lo + hi) >> 1
    if (pauses[mid]![1] <= start) lo = mid + 1
    else hi = mid
  }
  let sum = 0
  for (let i = lo; i < pauses.length && pauses[i]![0] < end; i++) sum += Math.min(end, pauses[i]![1]) - Math.max(start, pauses[i]![0])
  return sum
}

/**
 * The CPU of each turn that saw no main-thread GC pause, plus what collection costs per byte
 * times the bytes the turn allocated. A collection lands on whichever turn fills the heap, so a
 * handful of pauses of 2–50 ms decide the raw p99 of either arm however little the handlers
 * allocate; here those turns leave the percentile, and their cost comes back spread by
 * allocation, so a handler that allocates still pays its share. V8's concurrent marking and
 * sweeping on other threads stay in the turn they fell in. A turn with a pause is NaN: left out,
 * while every other turn keeps its round (its place beside the other arms' turns of that round).
 */
function charged(xs: readonly Sample[], rate: number, clock: 'cpu' | 'thread' = 'cpu'): number[] {
  return xs.map((t) => (gcIn(t.start, t.end) === 0 ? t[clock] + Math.max(0, t.grown) * rate : Number.NaN))
}

/** The median heap growth of the turns that saw no pause (a turn with one has no usable growth). */
function typicalGrowth(xs: readonly Sample[]): number {
  const clean = xs.filter((t) => gcIn(t.start, t.end) === 0).map((t) => Math.max(0, t.grown))
  return clean.length > 0 ? percentile(clean, 50) : 0
}

/**
 * What collection costs per allocated byte, in CPU ms, over arms that share one heap: the CPU the
 * turns with a pause used beyond their arm's median turn without one, over the bytes all turns
 * allocated. CPU rather than the pauses' own durations, which are wall time and, on a busy
 * machine, include waiting for a core.
 */
function gcRate(arms: ReadonlyArray<readonly Sample[]>): number {
  let cost = 0
  let bytes = 0
  for (const xs of arms) {
    const clean = xs.filter((t) => gcIn(t.start, t.end) === 0)
    const median = clean.length > 0 ? percentile(clean.map((t) => t.cpu), 50) : 0
    const typical = typicalGrowth(xs)
    for (const t of xs) {
      const paused = gcIn(t.start, t.end) > 0
      if (paused) cost += Math.max(0, t.cpu - median)
      bytes += paused ? typical : Math.max(0, t.grown)
    }
  }
  return bytes > 0 ? cost / bytes : 0
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
// Priced on the calibration rounds, where the collector runs when V8 decides (inside turns), as
// in a real process; the measured rounds have no collection inside a turn to price it by.
const rate = gcRate([...calibration.values()])
const arm = (label: string) => {
  const xs = samples.get(label)!
  const gcs = xs.map((t) => gcIn(t.start, t.end))
  return {
    xs,
    cpu: xs.map((t) => t.cpu),
    charged: charged(xs, rate),
    threadCharged: charged(xs, rate, 'thread'),
    bytes: typicalGrowth(xs),
    clean: xs.map((t, i) => (gcs[i] === 0 ? t.cpu : Number.NaN)),
    thread: xs.map((t) => t.thread),
    gcShare: gcs.filter((g) => g > 0).length / xs.length,
    gcMean: mean(gcs),
    wall: xs.map((t) => t.wall),
  }
}
const [bare, plain, noops, control] = ['bare', 'plugin', 'noops', 'control'].map(arm) as [ReturnType<typeof arm>, ReturnType<typeof arm>, ReturnType<typeof arm>, ReturnType<typeof arm>]
const compare = samples.has('compare') ? arm('compare') : undefined
const compareNoops = samples.has('compare_noops') ? arm('compare_noops') : undefined
const diff = (p: number, a: readonly number[], b: readonly number[]) => round(percentile(a, p) - percentile(b, p))
/** Turn i of one arm against turn i of another (run next to each other in the rotation). */
const paired = (a: readonly number[], b: readonly number[]) => a.map((x, i) => x - b[i]!).filter((x) => !Number.isNaN(x))
const QUANTILES = [0.5, 0.99, 0.999] as const
const NAMES = ['p50', 'p99', 'p999'] as const
/**
 * One measure's shift, `noops` and `control` each against `plugin`, at p50, p99 and p99.9:
 * `<prefix>_<q>_ms` with `<prefix>_<q>_ci95_ms` [lo, hi], and `<control>_<q>_ms` likewise.
 */
function shifts(prefix: string, controlPrefix: string, pick: (a: ReturnType<typeof arm>) => readonly number[]): Record<string, number | number[]> {
  const out: Record<string, number | number[]> = {}
  const put = (name: string, xs: Shift[]) => xs.forEach((x, j) => {
    out[`${name}_${NAMES[j]}_ms`] = round(x.estimate)
    out[`${name}_${NAMES[j]}_ci95_ms`] = [round(x.lo), round(x.hi)]
  })
  put(prefix, quantileShift(pick(noops), pick(plain), QUANTILES, { resamples: 500 }))
  put(controlPrefix, quantileShift(pick(control), pick(plain), QUANTILES, { resamples: 500 }))
  return out
}
// The stated measure (session 8, fixed before its runs; docs/stages.md, "Cost"):
// the main thread's CPU, GC charged by allocation at the same price. The process's CPU adds V8's
// helper threads, whose work lands on whichever turn runs beside it, in either arm; that widened
// its p99 interval past what could resolve 0.5 ms. It is still reported (`process_*`).
const stated = shifts('stage_overhead', 'control', (a) => a.threadCharged)
const processCpu = shifts('process_overhead', 'process_control', (a) => a.charged)
const BOUND_MS = 0.5
/** The widest A/A p99 interval with which a run can tell a 0.5 ms shift from none (its half-width is at most the bound). */
const RESOLVING_WIDTH_MS = 2 * BOUND_MS
const [lo99, hi99] = stated.stage_overhead_p99_ci95_ms as number[]
const [clo99, chi99] = stated.control_p99_ci95_ms as number[]
const [plo99, phi99] = processCpu.process_overhead_p99_ci95_ms as number[]
const verdict = (lo: number, hi: number) => (hi <= BOUND_MS ? 'met' : lo > BOUND_MS ? 'missed' : 'not shown')
// CPU time of this process is the measure: other processes on a shared machine stretch the wall
// time of a turn (waiting for a core) but not the CPU it uses.
const result = {
  turns: TURNS,
  handlers_per_stage: NOOPS_PER_STAGE,
  stages: STAGES.length,
  load_start: loadStart.map((x) => round(x, 2)),
  load_end: loadEnd.map((x) => round(x, 2)),
  // The stated figures: the quantile shift of the main thread's GC-charged CPU, noops against plugin, and the
  // same estimate between two arms without handlers (control: how far it moves by chance).
  ...stated,
  // The bound (issue 12): p99 ≤ 0.5 ms is met when the whole interval is at or below it, missed
  // when the whole interval is above it; in between, the run cannot tell. The control's interval
  // should cover 0: when it does not, the run itself drifted and no figure of it should be read.
  bound_p99_ms: BOUND_MS,
  // A run resolves the bound when its A/A control's p99 interval covers 0 and is at most
  // RESOLVING_WIDTH_MS wide; a run that does not resolve it gives no verdict, whatever its interval.
  bound: clo99! <= 0 && chi99! >= 0 && chi99! - clo99! <= RESOLVING_WIDTH_MS ? verdict(lo99!, hi99!) : 'not resolved',
  control_covers_zero: clo99! <= 0 && chi99! >= 0,
  control_p99_width_ms: round(chi99! - clo99!),
  resolving_width_ms: RESOLVING_WIDTH_MS,
  ...processCpu,
  bound_process_cpu: verdict(plo99!, phi99!),
  stage_overhead_mean_ms: round(mean(noops.cpu) - mean(plain.cpu)),
  control_mean_ms: round(mean(control.cpu) - mean(plain.cpu)),
  ...shifts('gc_free_overhead', 'gc_free_control', (a) => a.clean),
  ...shifts('raw_overhead', 'raw_control', (a) => a.cpu),
  ...shifts('thread_overhead', 'thread_control', (a) => a.thread),
  ...shifts('wall_stage_overhead', 'wall_control', (a) => a.wall),
  paired_overhead_p50_ms: round(percentile(paired(noops.charged, plain.charged), 50)),
  paired_overhead_p99_ms: round(percentile(paired(noops.charged, plain.charged), 99)),
  paired_control_p99_ms: round(percentile(paired(control.charged, plain.charged), 99)),
  gc_turn_share_plugin: round(plain.gcShare), gc_turn_share_noops: round(noops.gcShare),
  gc_ms_per_turn_plugin: round(plain.gcMean), gc_ms_per_turn_noops: round(noops.gcMean),
  gc_ms_per_mb: round(rate * 2 ** 20), calibration_rounds: CALIBRATION,
  swept_ms_plugin_p50: round(percentile(plain.xs.map((t) => t.swept), 50)), swept_ms_noops_p50: round(percentile(noops.xs.map((t) => t.swept), 50)), alloc_kb_plugin_p50: round(plain.bytes / 1024, 1), alloc_kb_noops_p50: round(noops.bytes / 1024, 1),
  host_turn_p50_ms: host.p50_ms,
  host_turn_p99_ms: host.p99_ms,
  service_call_via_ctx_us: calls!.via_ctx_us, service_call_traced_us: calls!.traced_us, service_call_untraced_us: calls!.untraced_us,
  cpu_bare_p50_ms: round(percentile(bare.cpu, 50)),
  cpu_bare_p99_ms: round(percentile(bare.cpu, 99)),
  cpu_plugin_p50_ms: round(percentile(plain.cpu, 50)),
  cpu_plugin_p99_ms: round(percentile(plain.cpu, 99)),
  cpu_noops_p50_ms: round(percentile(noops.cpu, 50)),
  cpu_noops_p99_ms: round(percentile(noops.cpu, 99)),
  plugin_overhead_p50_ms: diff(50, plain.cpu, bare.cpu),
  plugin_overhead_mean_ms: round(mean(plain.cpu) - mean(bare.cpu)),
  ...(compare ? {
    cpu_compare_p50_ms: round(percentile(compare.cpu, 50)), cpu_compare_p99_ms: round(percentile(compare.cpu, 99)),
    plugin_vs_compare_p50_ms: diff(50, plain.cpu, compare.cpu), plugin_vs_compare_mean_ms: round(mean(plain.cpu) - mean(compare.cpu)),
  } : {}),
  // The other build's stage overhead by the same estimator, and its handler turns against ours.
  ...(compare && compareNoops ? (() => {
    const [c50, c99] = quantileShift(compareNoops.threadCharged, compare.threadCharged, [0.5, 0.99], { resamples: 500 })
    const [v50, v99] = quantileShift(noops.threadCharged, compareNoops.threadCharged, [0.5, 0.99], { resamples: 500 })
    return {
      compare_stage_overhead_p50_ms: round(c50!.estimate), compare_stage_overhead_p99_ms: round(c99!.estimate), compare_stage_overhead_p99_ci95_ms: [round(c99!.lo), round(c99!.hi)],
      noops_vs_compare_noops_p50_ms: round(v50!.estimate), noops_vs_compare_noops_p50_ci95_ms: [round(v50!.lo), round(v50!.hi)],
      noops_vs_compare_noops_p99_ms: round(v99!.estimate), noops_vs_compare_noops_p99_ci95_ms: [round(v99!.lo), round(v99!.hi)],
      alloc_kb_compare_p50: round(compare.bytes / 1024, 1), alloc_kb_compare_noops_p50: round(compareNoops.bytes / 1024, 1),
    }
  })() : {}),
  wall_bare_p50_ms: round(percentile(bare.wall, 50)),
  wall_plugin_p50_ms: round(percentile(plain.wall, 50)),
  wall_noops_p50_ms: round(percentile(noops.wall, 50)),
}
const ci = (key: string) => `[${(result as Record<string, unknown>)[`${key}_ci95_ms`] as number[]}]`
if (!asJson) {
  for (const [label, a] of Object.entries({ bare, plugin: plain, noops, control, ...(compare ? { compare } : {}), ...(compareNoops ? { compare_noops: compareNoops } : {}) })) {
    console.log(`${label.padEnd(7)} cpu p50 ${percentile(a.cpu, 50).toFixed(3)} ms  p99 ${percentile(a.cpu, 99).toFixed(3)} ms   wall p50 ${percentile(a.wall, 50).toFixed(3)} ms   GC in ${(a.gcShare * 100).toFixed(0)} % of turns`)
  }
  const r = result as unknown as Record<string, number>
  console.log(`stage overhead (${NOOPS_PER_STAGE} no-op handlers × ${STAGES.length} stages, main thread's CPU, GC charged by allocation; Harrell–Davis shift, 95 % block-bootstrap interval):`)
  for (const q of NAMES) console.log(`  ${q.padEnd(4)} ${r[`stage_overhead_${q}_ms`]} ms ${ci(`stage_overhead_${q}`)}   control ${r[`control_${q}_ms`]} ms ${ci(`control_${q}`)}`)
  console.log(`bound p99 ≤ ${BOUND_MS} ms: ${result.bound} (control interval covers 0: ${result.control_covers_zero}, ${result.control_p99_width_ms} ms wide, resolving at ≤ ${RESOLVING_WIDTH_MS}); by the process's CPU: ${result.bound_process_cpu}; load ${result.load_start.join(' ')} → ${result.load_end.join(' ')}`)
  console.log(`p99 raw CPU ${r.raw_overhead_p99_ms} ms (control ${r.raw_control_p99_ms}), GC-free ${r.gc_free_overhead_p99_ms} (control ${r.gc_free_control_p99_ms}), process CPU charged ${r.process_overhead_p99_ms} ${ci('process_overhead_p99')} (control ${r.process_control_p99_ms}), main thread uncharged ${r.thread_overhead_p99_ms} (control ${r.thread_control_p99_ms}), wall ${r.wall_stage_overhead_p99_ms} (control ${r.wall_control_p99_ms})`)
  console.log(`the stage host alone, per turn: p50 ${host.p50_ms} ms, p99 ${host.p99_ms} ms`)
  console.log(`one service call: through ctx.stablemem ${calls!.via_ctx_us} µs, through the traced service ${calls!.traced_us} µs, on the object itself ${calls!.untraced_us} µs`)
}
console.log(JSON.stringify(result))
