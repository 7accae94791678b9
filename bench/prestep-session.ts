/**
 * The pre-step in one long session (`bench:follow-up --session T`): what the plugin adds to each
 * turn of a real dsh agent loop at turn 1 and at turn T of the same conversation, and which part of
 * it is recall and which the bookkeeping around it that may grow with the session (the repeat
 * memory, `lib/plugin/shown-notes.ts`; the conversation memory, `conversation-memory.ts`; where the
 * session runs, `session-place.ts`, which reads the session's events). `bench/prestep.ts` measures
 * a new session per turn, so it never sees that growth.
 *
 * Each side is a real loop (dsh's token meter and basic compaction, `realContext`'s injected
 * context after the human message, a scripted model that also writes compaction summaries) with
 * the plugin mounted on its own copy of the store. Two sides (the working tree's `lib/` and
 * another build of it, e.g. a git ref's) take turns one by one, in alternating order, so load hits
 * both alike. The brackets are `bench/prestep.ts`'s (`bracketPlugin`) (the listener's time in the `agent/pre-step`
 * and `system-prompt/assemble` waterfalls, wall and CPU); inside them, the recall
 * (`service.recall`), the repeat memory (`ShownNotes.inContext` + `remember`), the conversation
 * memory (`earlier` + `remember`) and the time from the latter to the recall (the session's place:
 * its workspace, its preset; and the scenes' read keys) are timed by wrapping those methods.
 */
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { SessionId } from '@deepseek-ai/dsh-session'
import TokenMeter from '@deepseek-ai/dsh-token-meter'
import type * as Plugin from '../lib/index.ts'
import { untraced } from '../lib/plugin/untraced.ts'
import { realContext, userMessage } from '../test/helpers/harness.ts'
import { WindowedAdapter } from '../test/helpers/windowed.ts'
import { bracketPlugin } from './prestep.ts'
import { percentile, round, stopwatch } from './stats.ts'

/** One turn of the long session on one side: ms of wall and CPU time, and the log's size before it. */
export interface TurnSample {
  wall: number, cpu: number
  recall: number, recallCpu: number
  shown: number, shownCpu: number
  conversation: number, conversationCpu: number
  place: number, placeCpu: number
  /** Events in the session's log and nodes on its surface when the turn started. */
  events: number, surface: number
  /** Compactions the session had gone through when the turn started. */
  compactions: number
}

/** A build of the plugin: its module and the `lib/` folder it was loaded from. */
export interface Build {
  label: string
  lib: string
}

/** A mounted side: runs one turn of its long session and returns what it measured. */
interface Side {
  turn(query: string, sessionId: string): Promise<TurnSample>
  dispose(): Promise<void>
}

/** Wraps `owner[name]` so every call adds its wall and CPU time to `into`; `after` runs when it returns. */
function timeMethod(owner: Record<string, unknown>, name: string, into: (wall: number, cpu: number) => void, before?: () => void): void {
  const original = owner[name] as (...args: unknown[]) => unknown
  owner[name] = function (this: unknown, ...args: unknown[]) {
    before?.()
    const c = stopwatch()
    const result = original.apply(this, args)
    if (result instanceof Promise) return result.finally(() => into(c.wall(), c.cpu()))
    into(c.wall(), c.cpu())
    return result
  }
}

/** Mounts one side on `storePath`: the real loop with compaction over `contextWindow` tokens. */
async function mountSide(build: Build, storePath: string, contextWindow: number): Promise<Side> {
  const mod = await import(pathToFileURL(join(build.lib, 'index.ts')).href) as typeof Plugin
  const { ShownNotes } = await import(pathToFileURL(join(build.lib, 'plugin', 'shown-notes.ts')).href) as typeof import('../lib/plugin/shown-notes.ts')
  const { ConversationMemory } = await import(pathToFileURL(join(build.lib, 'plugin', 'conversation-memory.ts')).href) as typeof import('../lib/plugin/conversation-memory.ts')
  const ctx = new Context()
  ctx.logger.exporter({ levels: { default: 1 }, export() {} })
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(TokenMeter)
  await ctx.plugin(BasicCompactionEngine, { thresholdRatio: 0.5, retainTokens: Math.round(contextWindow * 0.1) })
  await ctx.plugin(realContext)
  let sample = emptySample()
  const fiber = await bracketPlugin(ctx, async () => {
    const fiber = await ctx.plugin(mod, mod.resolveConfig({ path: storePath }))
    await fiber
    return fiber
  }, (wall, cpu) => { sample.wall += wall; sample.cpu += cpu })
  const adapter = new WindowedAdapter(contextWindow)
  ctx.llm.registerAdapter(['mock'], adapter)
  // The parts, timed where they run (the wrappers' own cost, well under a µs a call, falls on the parts).
  let placeFrom: ReturnType<typeof stopwatch> | undefined
  const shownProto = ShownNotes.prototype as unknown as Record<string, unknown>
  const conversationProto = ConversationMemory.prototype as unknown as Record<string, unknown>
  const addShown = (w: number, c: number) => { sample.shown += w; sample.shownCpu += c }
  const addConversation = (w: number, c: number) => { sample.conversation += w; sample.conversationCpu += c }
  timeMethod(shownProto, 'inContext', addShown)
  timeMethod(shownProto, 'remember', addShown)
  timeMethod(conversationProto, 'earlier', addConversation)
  timeMethod(conversationProto, 'remember', (w, c) => { addConversation(w, c); placeFrom = stopwatch() })
  timeMethod(untraced(ctx.stablemem) as unknown as Record<string, unknown>, 'recall', (w, c) => { sample.recall += w; sample.recallCpu += c }, () => {
    if (placeFrom !== undefined) { sample.place += placeFrom.wall(); sample.placeCpu += placeFrom.cpu(); placeFrom = undefined }
  })
  const agents = new Map<string, Agent>()
  let compactions = 0
  return {
    async turn(query, sessionId) {
      let agent = agents.get(sessionId)
      if (agent === undefined) agents.set(sessionId, agent = ctx.agentLoop.create(SessionId(sessionId), { provider: 'mock', model: 'mock-1' }))
      sample = emptySample()
      sample.events = agent.session.seq
      sample.surface = agent.session.surface.nodes.length
      sample.compactions = compactions
      adapter.requests.length = 0
      agent.followup(userMessage(query))
      await agent.whenIdle()
      compactions += adapter.compactions()
      const done = sample
      if ([done.wall, done.cpu].some((x) => !Number.isFinite(x) || x < 0)) throw new Error('pre-step timing listeners did not bracket the plugin')
      return done
    },
    async dispose() {
      await fiber.dispose()
      await ctx.fiber.dispose()
    },
  }
}

function emptySample(): TurnSample {
  return { wall: 0, cpu: 0, recall: 0, recallCpu: 0, shown: 0, shownCpu: 0, conversation: 0, conversationCpu: 0, place: 0, placeCpu: 0, events: 0, surface: 0, compactions: 0 }
}

/** Options of a long-session run. */
export interface SessionRun {
  /** The store file (the corpus); each side gets its own copy in `scratch`. */
  store: string
  scratch: string
  builds: readonly Build[]
  /** One query per turn of the long session, and `warmup` more for a throwaway session first. */
  queries: readonly string[]
  warmup: readonly string[]
  /** The model's context window in tokens: compaction runs at half of it. */
  contextWindow: number
  log: (line: string) => void
}

/** Runs the long session on every build, turn by turn in alternating order; the samples of each build by its label. */
export async function measureSession(run: SessionRun): Promise<Record<string, TurnSample[]>> {
  const sides: Side[] = []
  for (const [i, build] of run.builds.entries()) {
    const path = join(run.scratch, `side-${i}.sqlite`)
    copyFileSync(run.store, path)
    sides.push(await mountSide(build, path, run.contextWindow))
  }
  const samples: TurnSample[][] = sides.map(() => [])
  for (const query of run.warmup) for (const side of sides) await side.turn(query, 'warmup')
  for (const [t, query] of run.queries.entries()) {
    const order = t % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => sides.length - 1 - i)
    for (const i of order) samples[i]!.push(await sides[i]!.turn(query, 'long'))
    if ((t + 1) % 100 === 0) run.log(`turn ${t + 1}: ${run.builds.map((b, i) => `${b.label} ${samples[i]!.at(-1)!.events} events`).join(', ')}`)
  }
  for (const side of sides) await side.dispose()
  return Object.fromEntries(run.builds.map((b, i) => [b.label, samples[i]!]))
}

/** p50 and p99 of the turns `from`..`to` (1-based, inclusive) of each part, wall and CPU. */
export function windowSummary(samples: readonly TurnSample[], from: number, to: number) {
  const slice = samples.slice(from - 1, to)
  const q = (pick: (s: TurnSample) => number) => ({ p50_ms: round(percentile(slice.map(pick), 50)), p99_ms: round(percentile(slice.map(pick), 99)) })
  const bookkeeping = (s: TurnSample) => s.shown + s.conversation + s.place
  const bookkeepingCpu = (s: TurnSample) => s.shownCpu + s.conversationCpu + s.placeCpu
  return {
    turns: `${from}-${to}`,
    events: slice.at(-1)?.events ?? 0,
    surface: slice.at(-1)?.surface ?? 0,
    compactions: slice.at(-1)?.compactions ?? 0,
    prestep: q((s) => s.wall), prestep_cpu: q((s) => s.cpu),
    recall: q((s) => s.recall), recall_cpu: q((s) => s.recallCpu),
    bookkeeping: q(bookkeeping), bookkeeping_cpu: q(bookkeepingCpu),
    shown_cpu: q((s) => s.shownCpu), conversation_cpu: q((s) => s.conversationCpu), place_cpu: q((s) => s.placeCpu),
    // The rest of the plugin's turn: the scene card (whose own place lookup runs before the recall's), rendering, access records.
    other_cpu: q((s) => s.cpu - s.recallCpu - bookkeepingCpu(s)),
  }
}

/**
 * The turns that follow a compaction (the repeat memory looks for its messages on the surface
 * again there) against all the others: their count and the repeat memory's CPU ms, p50 and max.
 */
export function afterCompaction(samples: readonly TurnSample[]) {
  const after = samples.filter((s, i) => i > 0 && s.compactions > samples[i - 1]!.compactions)
  const others = samples.filter((s, i) => i === 0 || s.compactions === samples[i - 1]!.compactions)
  const of = (list: readonly TurnSample[]) => ({ turns: list.length, shown_cpu_p50_ms: round(percentile(list.map((s) => s.shownCpu), 50)), shown_cpu_max_ms: round(Math.max(...list.map((s) => s.shownCpu))) })
  return { after_compaction: of(after), other_turns: of(others) }
}
