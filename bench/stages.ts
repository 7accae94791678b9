/**
 * `npm run bench:stages -- [--turns T] [--compare <dir>/lib/index.ts] [--json]`
 *
 * What the stage API costs per turn: the same turn (two tool steps and a final answer, so every
 * stage fires: on_input, pre_action ×3, post_action on every chunk, before/after_toolcall ×2,
 * after_output) in three real agent loops in one process, turn by turn in rotation:
 *
 * - `bare`: dsh alone, no plugin;
 * - `plugin`: dsh-stablemem mounted (its binding plus its own recall and statistics handlers);
 * - `noops`: the `plugin` loop with seven no-op handlers on every stage, registered for the turn.
 *
 * The stage overhead is `noops` against `plugin`: p50 and p99 of the process CPU time per turn
 * (wall time is reported too, but on a shared machine it mostly measures waiting for a core).
 * The default of 1,000 turns per loop puts ten samples above each p99.
 * `--compare <dir>/lib/index.ts` adds a fourth loop, `compare`, with another build of the plugin
 * (e.g. one without the stage API: `git archive <rev> lib | tar -x -C .cache/rev`).
 * `host_turn_*` times the stage host alone on the same handler calls (see `hostOnly`).
 * With `--json` the last line is one JSON object.
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
import { ScriptedAdapter, reply, toolCall, userMessage } from '../test/helpers/harness.ts'
import { cpuMs, nowMs, round, summary } from './stats.ts'

const { values: args } = parseArgs({ options: { turns: { type: 'string', default: '1000' }, json: { type: 'boolean', default: false }, compare: { type: 'string' } } })
const TURNS = Number(args.turns)
if (!Number.isInteger(TURNS) || TURNS <= 0) throw new Error(`--turns must be a positive integer, got ${String(args.turns)}`)
const WARMUP = 50
const NOOPS_PER_STAGE = 7

/** One agent loop, ready to run the benchmark turn. */
interface Loop {
  label: string
  /** Runs one turn; its wall time and this process's CPU time (user + system), in ms. */
  run(): Promise<{ wall: number, cpu: number }>
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
      const start = nowMs()
      const cpu = cpuMs()
      agent.followup(userMessage('run two steps'))
      await agent.whenIdle()
      if (withPlugin) await ctx.stablemem.stages?.idle()
      const used = cpuMs() - cpu
      const wall = nowMs() - start
      adapter.requests.length = 0
      await handle.dispose() // so that no loop grows with the number of turns it ran
      return { wall, cpu: used }
    },
    async dispose() {
      await fiber?.dispose()
      await ctx.fiber.dispose()
    },
  }
}

/**
 * The `plugin` loop again with the no-op handlers registered just for the turn (registration is
 * outside the timed part), so `plugin` and `noops` turns alternate on one loop, one heap, one store.
 */
function withNoops(base: Loop & { ctx: Context }): Loop {
  return {
    label: 'noops',
    async run() {
      const disposers = STAGES.flatMap((stage) => Array.from({ length: NOOPS_PER_STAGE }, () => base.ctx.stablemem.stages.on(stage, () => undefined)))
      const t = await base.run()
      await Promise.all(disposers.map((d) => d()))
      return t
    },
    dispose: async () => {},
  }
}

const pluginLoop = await loop('plugin', true)
const loops: Loop[] = [await loop('bare', false), pluginLoop, withNoops(pluginLoop)]
if (args.compare !== undefined) loops.push(await loop('compare', true, await import(pathToFileURL(resolve(args.compare)).href) as typeof plugin))
const wall = new Map(loops.map((l) => [l.label, [] as number[]]))
const cpu = new Map(loops.map((l) => [l.label, [] as number[]]))
for (let i = 0; i < WARMUP + TURNS; i++) {
  for (const l of i % 2 === 0 ? loops : [...loops].reverse()) {
    const t = await l.run()
    if (i < WARMUP) continue
    wall.get(l.label)!.push(t.wall)
    cpu.get(l.label)!.push(t.cpu)
  }
}
for (const l of loops) await l.dispose()

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

const w = Object.fromEntries([...wall].map(([label, xs]) => [label, summary(xs)]))
const c = Object.fromEntries([...cpu].map(([label, xs]) => [label, summary(xs)]))
// CPU time of this process is the measure: other processes on a shared machine stretch the wall
// time of a turn (waiting for a core) but not the CPU it uses.
const result = {
  turns: TURNS,
  handlers_per_stage: NOOPS_PER_STAGE,
  stages: STAGES.length,
  cpu_bare_p50_ms: c.bare!.p50_ms,
  cpu_bare_p99_ms: c.bare!.p99_ms,
  cpu_plugin_p50_ms: c.plugin!.p50_ms,
  cpu_plugin_p99_ms: c.plugin!.p99_ms,
  cpu_noops_p50_ms: c.noops!.p50_ms,
  cpu_noops_p99_ms: c.noops!.p99_ms,
  stage_overhead_p50_ms: round(c.noops!.p50_ms - c.plugin!.p50_ms),
  stage_overhead_p99_ms: round(c.noops!.p99_ms - c.plugin!.p99_ms),
  ratio_p99_noops_vs_plugin: round(c.noops!.p99_ms / c.plugin!.p99_ms),
  host_turn_p50_ms: host.p50_ms,
  host_turn_p99_ms: host.p99_ms,
  plugin_overhead_p50_ms: round(c.plugin!.p50_ms - c.bare!.p50_ms),
  ...(c.compare ? {
    cpu_compare_p50_ms: c.compare.p50_ms, cpu_compare_p99_ms: c.compare.p99_ms,
    plugin_vs_compare_p50_ms: round(c.plugin!.p50_ms - c.compare.p50_ms), plugin_vs_compare_p99_ms: round(c.plugin!.p99_ms - c.compare.p99_ms),
  } : {}),
  wall_bare_p50_ms: w.bare!.p50_ms,
  wall_bare_p99_ms: w.bare!.p99_ms,
  wall_plugin_p50_ms: w.plugin!.p50_ms,
  wall_noops_p50_ms: w.noops!.p50_ms,
  wall_plugin_p99_ms: w.plugin!.p99_ms,
  wall_noops_p99_ms: w.noops!.p99_ms,
  wall_stage_overhead_p50_ms: round(w.noops!.p50_ms - w.plugin!.p50_ms),
  wall_stage_overhead_p99_ms: round(w.noops!.p99_ms - w.plugin!.p99_ms),
  ...(w.compare ? { wall_compare_p50_ms: w.compare.p50_ms, wall_compare_p99_ms: w.compare.p99_ms } : {}),
}
if (!args.json) {
  for (const [label, v] of Object.entries(c)) console.log(`${label.padEnd(7)} cpu p50 ${v.p50_ms.toFixed(3)} ms  p99 ${v.p99_ms.toFixed(3)} ms   wall p50 ${w[label]!.p50_ms.toFixed(3)} ms  p99 ${w[label]!.p99_ms.toFixed(3)} ms`)
  console.log(`stage overhead (${NOOPS_PER_STAGE} no-op handlers × ${STAGES.length} stages, CPU): p50 ${result.stage_overhead_p50_ms} ms, p99 ${result.stage_overhead_p99_ms} ms`)
  console.log(`the stage host alone, per turn: p50 ${host.p50_ms} ms, p99 ${host.p99_ms} ms`)
}
console.log(JSON.stringify(result))
