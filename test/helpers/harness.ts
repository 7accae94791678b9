/**
 * Test harness: the real dsh agent loop (via the testkit spine), with a scripted LlmAdapter
 * standing in for the model, and this plugin mounted from source.
 */
import { join } from 'node:path'
import { Context, type Fiber } from '@deepseek-ai/cordis'
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { CallId, LlmAdapter, createUserMessage, type GenerateOptions, type Message, type StreamChunk, type UserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import * as plugin from '../../lib/index.ts'
import type { Config } from '../../lib/config.ts'
import { tempDir } from './temp.ts'

/** A model that replays a fixed list of responses and records every request it receives. */
export class ScriptedAdapter extends LlmAdapter {
  readonly requests: GenerateOptions[] = []
  private readonly script: StreamChunk[][]
  constructor(script: StreamChunk[][]) {
    super()
    this.script = script
  }
  override async * stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    this.requests.push(options)
    const chunks = this.script.shift()
    if (chunks === undefined) throw new Error('ScriptedAdapter: script exhausted')
    yield * chunks
  }
}

/** A model response that calls one tool. */
export function toolCall(id: string, name: string, args: unknown): StreamChunk[] {
  return [
    { type: 'block-start', index: 0, blockType: 'tool-call' },
    { type: 'block-end', index: 0, block: { type: 'tool-call', id: CallId(id), name, arguments: JSON.stringify(args) } },
    { type: 'finish', reason: { kind: 'tool-calls' } },
  ]
}

/** A model response with plain text. */
export function reply(text: string): StreamChunk[] {
  return [
    { type: 'block-start', index: 0, blockType: 'text' },
    { type: 'block-end', index: 0, block: { type: 'text', text } },
    { type: 'finish', reason: { kind: 'stop' } },
  ]
}

/** Every text the model saw in one request, including tool results. */
export function requestTexts(request: GenerateOptions): string[] {
  return request.messages.flatMap((m) => m.content.flatMap((b) =>
    b.type === 'text' ? [b.text] : b.type === 'tool-result' ? b.content.flatMap((c) => c.type === 'text' ? [c.text] : []) : []))
}

/** The messages of one request that this plugin injected. */
export function injected(request: GenerateOptions): Message[] {
  return request.messages.filter((m) => m.source.kind === 'plugin' && (m.source as { plugin?: string }).plugin === plugin.name)
}

/** A fresh temporary store path (a real file). */
export function tempStorePath(label = 'store'): string {
  return join(tempDir('stablemem-test'), `${label}.db`)
}

/** A human prompt as dsh builds it. */
export function userMessage(text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } })
}

/**
 * A realistic first-step batch: the human question FOLLOWED by the injected context a real dsh
 * profile adds (runtime-context snapshot, skill catalog, another plugin's note). Every test of
 * `agent/pre-step` builds its batch here, never as the question alone.
 */
export function realBatch(question: UserMessage | string): UserMessage[] {
  const human = typeof question === 'string' ? userMessage(question) : question
  return [
    human,
    createUserMessage({
      content: [{ type: 'text', text: 'Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\nApproval policy: ask. 端口 8080 is the default.' }],
      source: { kind: 'plugin', plugin: '@deepseek-ai/dsh-system-prompt', form: 'snapshot', sections: [{ name: 'approval:policy', text: 'Approval policy: ask.' }] },
    }),
    createUserMessage({
      content: [{ type: 'text', text: '<system-reminder>\nThe following skills are available: `deploy`: Deploy the billing service to port 9000.\n</system-reminder>' }],
      source: { kind: 'skill-catalog', form: 'catalog', entries: [{ name: 'deploy', description: 'Deploy the billing service' }] } as never,
    }),
    createUserMessage({
      content: [{ type: 'text', text: 'E2E reminder from another plugin: nginx 配置 /etc/nginx/nginx.conf' }],
      source: { kind: 'plugin', plugin: 'demo-plugin' },
    }),
  ]
}

/** The text of one message's text blocks, joined. */
export function textOf(message: Message): string {
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

/** A log record as a test sees it: logger name, level name and the formatted line. */
export interface LogLine {
  name: string
  type: string
  text: string
}

/**
 * Stands in for what a real dsh profile adds to a first step after the human message: a
 * runtime-context line (rendered into the snapshot), the skill catalog and another plugin's
 * note (the same messages `realBatch` appends), so an end-to-end turn sees a real batch shape.
 */
export const realContext = {
  name: 'real-context',
  inject: ['systemPrompt'],
  apply(ctx: Context) {
    ctx.systemPrompt.context({ name: 'test:approval', order: 100, text: () => 'Approval policy: ask. 端口 8080 is the default.' })
    ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
      const decision = await next()
      if (decision.kind !== 'enter' || payload.step !== 1) return decision
      return { kind: 'enter', messages: [...decision.messages, ...realBatch('').slice(2)] }
    })
  },
}

/**
 * A tool `echo` with one parameter `word`, answering `echo:<word>`; `ran` hears each word its body
 * runs with, so a stage test can tell a call that reached the tool from one a handler stopped.
 */
export function echoTool(ran: (word: string) => void = () => {}): ReturnType<typeof defineTool> {
  return defineTool({
    name: 'echo',
    description: 'Echo a word.',
    parameters: { word: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute(args) {
      ran(args.word)
      return `echo:${args.word}`
    },
  })
}

/** Options for `boot` beyond the plugin config. */
export interface BootOptions {
  /** The plugin module to mount (default: `lib/index.ts`; a mutant in mutation checks). */
  module?: typeof plugin
  /** Mount `realContext` (default true): every turn then runs on a real batch shape. */
  realContext?: boolean
  /** Plugins mounted after this one (e.g. a consumer with `inject: ['stablemem']`). */
  extra?: Array<{ plugin: object, config?: unknown }>
}

/** A mounted agent loop with the plugin and a scripted model. */
export interface Harness {
  ctx: Context
  adapter: ScriptedAdapter
  errors: unknown[]
  /** Every log record written while the harness ran (all levels). */
  logs: LogLine[]
  /** The plugin's fiber (state 2 = active). */
  fiber: Fiber
  /** Runs one turn with this prompt, on a fresh agent (a new session) unless `sessionId` names one, and waits until idle. */
  turn(prompt: string | UserMessage, sessionId?: string): Promise<Agent>
  /** Adds scripted responses. */
  script(...responses: StreamChunk[][]): void
  dispose(): Promise<void>
}

/** Boots the real loop, mounts the plugin with `config`, and registers the scripted model. */
export async function boot(config: Partial<Config>, script: StreamChunk[][] = [], options: BootOptions = {}): Promise<Harness> {
  const adapter = new ScriptedAdapter(script)
  const ctx = new Context()
  const logs: LogLine[] = []
  ctx.logger.exporter({
    levels: { default: 3 },
    export(message) {
      logs.push({ name: message.name, type: message.type, text: message.args.map((a) => typeof a === 'string' ? a : JSON.stringify(a)).join(' ') })
    },
  })
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  if (options.realContext !== false) await ctx.plugin(realContext)
  const mod = options.module ?? plugin
  const fiber = await ctx.plugin(mod, mod.resolveConfig(config))
  for (const extra of options.extra ?? []) await ctx.plugin(extra.plugin as never, extra.config as never)
  ctx.llm.registerAdapter(['mock'], adapter)
  const errors: unknown[] = []
  ctx.on('agent/error', ({ error }) => { errors.push(error) })
  const agents = new Map<string, Agent>()
  let sessions = 0
  return {
    ctx, adapter, errors, logs, fiber,
    async turn(prompt, sessionId) {
      const id = sessionId ?? `s${++sessions}`
      let agent = agents.get(id)
      if (!agent) {
        agent = ctx.agentLoop.create(SessionId(id), { provider: 'mock', model: 'mock-1' })
        agents.set(id, agent)
      }
      agent.followup(typeof prompt === 'string' ? userMessage(prompt) : prompt)
      await agent.whenIdle()
      return agent
    },
    script(...responses) { (adapter as unknown as { script: StreamChunk[][] }).script.push(...responses) },
    async dispose() {
      await fiber.dispose()
      await ctx.fiber.dispose()
    },
  }
}
