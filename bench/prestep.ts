/**
 * Measures what the plugin adds to every turn of a real dsh agent loop: the cost of its recall
 * (query extraction, recall with access recording, rendering and injection), on a store that
 * already holds the benchmark corpus. The recall is a pre_action stage handler, so it runs in two
 * waterfalls: `system-prompt/assemble` (where the stage handlers run) and `agent/pre-step` (where
 * the message is appended).
 *
 * Two timing listeners bracket ours in each waterfall: OUTER runs before it and INNER right after
 * it, so OUTER's duration minus INNER's is exactly the time spent in our listener, per turn,
 * whatever the rest of the loop costs; the turn's sample is the sum over both waterfalls. The same
 * brackets read this process's CPU time (`process.cpuUsage`), which a loaded machine inflates far
 * less than wall time: the listener is synchronous work between its awaits, so nothing else runs inside.
 */
import { Context } from '@deepseek-ai/cordis'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { SessionId } from '@deepseek-ai/dsh-session'
import * as plugin from '../lib/index.ts'
import { ScriptedAdapter, reply, userMessage } from '../test/helpers/harness.ts'
import { stopwatch } from './stats.ts'

/** Per-turn overhead samples (ms, wall and CPU), and how many of all turns (warm-up included) got an injected recall. */
export interface PreStepResult {
  overheadMs: number[]
  overheadCpuMs: number[]
  injected: number
  turns: number
}

/**
 * Runs `queries.length` turns (plus `warmup`) with the plugin mounted on `storePath`. `cwds`, when
 * given, is each turn's session working directory (aligned with `queries`): the workspace whose
 * notes, plus global ones, that turn recalls; without it a session has no workspace.
 */
export async function measurePreStep(storePath: string, queries: readonly string[], warmup: number, cwds?: readonly string[]): Promise<PreStepResult> {
  if (cwds !== undefined && cwds.length !== queries.length) throw new Error(`cwds: ${cwds.length} directories for ${queries.length} turns`)
  const adapter = new ScriptedAdapter([])
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  const samples: number[] = []
  const cpuSamples: number[] = []
  const fiber = await bracketPlugin(ctx, async () => {
    const fiber = await ctx.plugin(plugin, plugin.resolveConfig({ path: storePath }))
    await fiber
    return fiber
  }, (wallMs, cpuMs) => { samples.push(wallMs); cpuSamples.push(cpuMs) })
  ctx.llm.registerAdapter(['mock'], adapter)

  const all = [...queries.slice(0, warmup), ...queries]
  const places = cwds === undefined ? undefined : [...cwds.slice(0, warmup), ...cwds]
  for (let i = 0; i < all.length; i++) {
    adapter.requests.length = 0
    ;(adapter as unknown as { script: unknown[] }).script.push(reply('好的。'))
    const agent = ctx.agentLoop.create(SessionId(`bench-${i}`), { provider: 'mock', model: 'mock-1' }, places === undefined ? undefined : { cwd: places[i]! })
    agent.followup(userMessage(all[i]!))
    await agent.whenIdle()
  }
  const stats = await ctx.stablemem.stats()
  await fiber.dispose()
  await ctx.fiber.dispose()
  const overheadMs = samples.slice(warmup)
  const overheadCpuMs = cpuSamples.slice(warmup)
  if ([...overheadMs, ...overheadCpuMs].some((x) => !Number.isFinite(x) || x < 0)) throw new Error('pre-step timing listeners did not bracket the plugin')
  return { overheadMs, overheadCpuMs, injected: stats.injections, turns: all.length }
}

/**
 * Brackets the plugin's listeners in the two waterfalls its recall runs in, as the module comment
 * says: `mount` mounts the plugin between the INNER `agent/pre-step` listener (prepended before it,
 * so the plugin's prepended listener lands in front of it) and the rest. Every step's
 * `system-prompt/assemble` runs right before its pre-step, so the last one seen is the step's.
 * `record` gets the plugin's wall and CPU ms on the first step of each turn.
 */
export async function bracketPlugin<T>(ctx: Context, mount: () => Promise<T>, record: (wallMs: number, cpuMs: number) => void): Promise<T> {
  let innerMs = 0
  let innerCpuMs = 0
  ctx.on('agent/pre-step', async (_payload, next): Promise<PreStepDecision> => {
    const c = stopwatch()
    const decision = await next()
    innerMs = c.wall()
    innerCpuMs = c.cpu()
    return decision
  }, { prepend: true })
  const mounted = await mount()
  // The same bracket around the plugin's (appended, so innermost so far) assemble listener.
  let assembleInnerMs = 0
  let assembleInnerCpuMs = 0
  let assembleMs = 0
  let assembleCpuMs = 0
  ctx.on('system-prompt/assemble', async (_assembly, _context, next) => {
    const c = stopwatch()
    const result = await next()
    assembleInnerMs = c.wall()
    assembleInnerCpuMs = c.cpu()
    return result
  })
  ctx.on('system-prompt/assemble', async (_assembly, _context, next) => {
    const c = stopwatch()
    assembleInnerMs = Number.NaN
    assembleInnerCpuMs = Number.NaN
    const result = await next()
    assembleMs = c.wall() - assembleInnerMs
    assembleCpuMs = c.cpu() - assembleInnerCpuMs
    return result
  }, { prepend: true })
  ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
    const c = stopwatch()
    innerMs = Number.NaN
    innerCpuMs = Number.NaN
    const decision = await next()
    if (payload.step === 1) record(c.wall() - innerMs + assembleMs, c.cpu() - innerCpuMs + assembleCpuMs)
    return decision
  }, { prepend: true })
  return mounted
}
