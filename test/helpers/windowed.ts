/**
 * The real agent loop with dsh's token meter and basic compaction over a small context window:
 * what a long conversation looks like to the plugin. A scripted model answers conversation
 * requests and writes a short summary when compaction asks (`purpose: 'compaction'`), so the
 * compaction is dsh's own, replacing real regions with a real checkpoint.
 */
import { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { LlmAdapter, type GenerateOptions, type LlmResolvedModelInfo, type StreamChunk } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import TokenMeter from '@deepseek-ai/dsh-token-meter'
import * as plugin from '../../lib/index.ts'
import type { Config } from '../../lib/config.ts'
import { realContext, reply, requestTexts, userMessage } from './harness.ts'

/** The checkpoint text the scripted model writes for every compaction: short, and free of any needle. */
export const SUMMARY = '## Primary Request and Intent\n- chat about several topics\n## Critical Context\n- (none)'

/** A model with a fixed context window that records every request. */
export class WindowedAdapter extends LlmAdapter {
  readonly requests: GenerateOptions[] = []
  private readonly contextWindow: number
  private readonly answer: (request: GenerateOptions) => StreamChunk[]
  private readonly summary: string | ((request: GenerateOptions) => string)
  constructor(contextWindow: number, answer: (request: GenerateOptions) => StreamChunk[] = () => reply('好的。'), summary: string | ((request: GenerateOptions) => string) = SUMMARY) {
    super()
    this.contextWindow = contextWindow
    this.answer = answer
    this.summary = summary
  }
  override resolveModel(provider: string, model: string): Promise<LlmResolvedModelInfo> {
    return Promise.resolve({ provider, id: model, name: model, context: { contextWindow: this.contextWindow } } as LlmResolvedModelInfo)
  }
  override async * stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    this.requests.push(options)
    yield * (options.purpose === 'compaction' ? reply(typeof this.summary === 'string' ? this.summary : this.summary(options)) : this.answer(options))
  }
  /** The conversation requests (not the compaction calls). */
  conversation(): GenerateOptions[] {
    return this.requests.filter((r) => r.purpose !== 'compaction')
  }
  /** How many compactions the model was asked to summarise. */
  compactions(): number {
    return this.requests.filter((r) => r.purpose === 'compaction').length
  }
}

/** Options of a windowed run. */
export interface WindowedOptions {
  contextWindow: number
  thresholdRatio?: number
  retainTokens?: number
  /** The plugin's config, or false to run without the plugin (the baseline). */
  plugin: Partial<Config> | false
  /** The plugin module (a mutant in mutation checks). */
  module?: typeof plugin
  answer?: (request: GenerateOptions) => StreamChunk[]
  /** The compaction engine (default dsh's basic one; `dsh-stablemem/compaction` in its tests). */
  engine?: typeof BasicCompactionEngine
  /** The checkpoint text the scripted model writes (default `SUMMARY`), or a function of the compaction request. */
  summary?: string | ((request: GenerateOptions) => string)
}

/** A booted windowed loop with one agent. */
export interface Windowed {
  ctx: Context
  adapter: WindowedAdapter
  agent: Agent
  errors: unknown[]
  say(text: string): Promise<void>
  dispose(): Promise<void>
}

/** Boots the loop, the meter, basic compaction and (unless `plugin: false`) the plugin, with one agent. */
export async function bootWindowed(options: WindowedOptions): Promise<Windowed> {
  const ctx = new Context()
  ctx.logger.exporter({ levels: { default: 1 }, export() {} })
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(TokenMeter)
  await ctx.plugin(options.engine ?? BasicCompactionEngine, { thresholdRatio: options.thresholdRatio ?? 0.5, retainTokens: options.retainTokens ?? Math.round(options.contextWindow * 0.1) })
  await ctx.plugin(realContext)
  if (options.plugin !== false) {
    const mod = options.module ?? plugin
    await ctx.plugin(mod, mod.resolveConfig(options.plugin))
  }
  const adapter = new WindowedAdapter(options.contextWindow, options.answer, options.summary)
  ctx.llm.registerAdapter(['mock'], adapter)
  const errors: unknown[] = []
  ctx.on('agent/error', ({ error }) => { errors.push(error) })
  const agent = ctx.agentLoop.create(SessionId(`w${Math.random().toString(36).slice(2, 10)}`), { provider: 'mock', model: 'mock-1' })
  return {
    ctx, adapter, agent, errors,
    async say(text) {
      agent.followup(userMessage(text))
      await agent.whenIdle()
    },
    async dispose() {
      await ctx.fiber.dispose()
    },
  }
}

/** Whether a request shows the model this string anywhere (messages, tool results, system text). */
export function requestHas(request: GenerateOptions, needle: string): boolean {
  return requestTexts(request).some((text) => text.includes(needle)) || JSON.stringify(request.system ?? '').includes(needle)
}

/** Filler turns on unrelated topics, without digits, so they can neither match nor shadow a needle by value. */
export function filler(i: number, chars: number): string {
  const topics = ['前端样式和按钮的颜色', 'the structure of the onboarding docs', '周会的议程安排', 'naming conventions for test files', '代码评审的流程', 'which fonts the slides use']
  const words = `Round ${'abcdefghij'[i % 10]}${'klmnopqrst'[Math.floor(i / 10) % 10]}: let us talk about ${topics[i % topics.length]}. `
  let out = words
  while (out.length < chars) out += `${topics[(i + out.length) % topics.length]}，继续讨论细节 and keep going with the details. `
  return out.slice(0, chars)
}
