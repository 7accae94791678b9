/**
 * `npm run demo`: the plugin working inside the real dsh agent loop, in seconds and offline.
 *
 * Session 1 asks the model to remember two facts (one Chinese, one English); the model saves each
 * with `stablemem_commit`. Sessions 2 and 3 are new sessions on the same store: the plugin recalls
 * the notes into the request and the model answers from them. Every step is printed, including the
 * exact messages the model received in session 2.
 *
 * Without DEEPSEEK_API_KEY the model is a small scripted one (and the demo says so). With the key
 * set, or with --real, it is the real DeepSeek model through dsh's own adapter
 * (@deepseek-ai/dsh-llm-deepseek; DEEPSEEK_BASE_URL overrides the endpoint).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Context } from '@deepseek-ai/cordis'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import type { GenerateOptions, Message, StreamChunk } from '@deepseek-ai/dsh-llm'
import * as DeepSeek from '@deepseek-ai/dsh-llm-deepseek'
import { SessionId } from '@deepseek-ai/dsh-session'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import * as stablemem from '../lib/index.ts'
import { ScriptedDemoModel, textOf } from './scripted-model.ts'

const USAGE = `Usage: npm run demo [-- --real] [-- --model <id>]

  --real         use the real DeepSeek model (needs DEEPSEEK_API_KEY; implied when it is set)
  --model <id>   DeepSeek model id for --real (default deepseek-v4-flash)`

const SESSION_1 = '记住：billing 服务端口 8499，部署在 10.3.7.9。Also remember: the staging database is PostgreSQL 16.4 on db-stage.internal:5433.'
const SESSION_2 = 'billing 服务的端口是多少？'
const SESSION_3 = 'Which PostgreSQL version runs on the staging database?'

/** One model call as the demo saw it: the request and the blocks the model answered with. */
interface Call {
  session: string
  request: GenerateOptions
  answer: Array<{ type: string, text?: string, name?: string, arguments?: string }>
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { real: { type: 'boolean' }, model: { type: 'string' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) {
    console.log(USAGE)
    return 0
  }
  const apiKey = process.env.DEEPSEEK_API_KEY ?? ''
  const real = values.real === true || apiKey !== ''
  if (real && apiKey === '') {
    console.error('demo: --real needs DEEPSEEK_API_KEY in the environment')
    return 2
  }

  // A throw-away dsh home, so the plugin's own default store path is a fresh file.
  process.env.DSH_HOME = mkdtempSync(join(tmpdir(), 'stablemem-demo-'))
  const storePath = stablemem.defaultStorePath()
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(stablemem, stablemem.resolveConfig({}))
  let route: { provider: string, model: string }
  if (real) {
    await ctx.plugin(DeepSeek, {})
    route = { provider: 'deepseek-official', model: values.model ?? 'deepseek-v4-flash' }
  } else {
    ctx.llm.registerAdapter(['demo'], new ScriptedDemoModel(stablemem.name, 'stablemem_commit'))
    route = { provider: 'demo', model: 'scripted' }
  }

  const calls: Call[] = []
  let session = ''
  ctx.on('llm/stream', async function * (request: GenerateOptions, next: () => AsyncIterable<StreamChunk>) {
    const call: Call = { session, request, answer: [] }
    calls.push(call)
    for await (const chunk of next()) {
      if (chunk.type === 'block-end') call.answer.push(chunk.block as Call['answer'][number])
      yield chunk
    }
  })
  const errors: string[] = []
  ctx.on('agent/error', ({ error }) => { errors.push(error instanceof Error ? error.message : String(error)) })

  console.log('dsh-stablemem demo: the real dsh agent loop (@deepseek-ai/dsh-agent-loop 0.1.0-rc.8) with the plugin mounted.')
  console.log(real
    ? `Model: the real DeepSeek model ${route.model} through @deepseek-ai/dsh-llm-deepseek${process.env.DEEPSEEK_BASE_URL ? ` at ${process.env.DEEPSEEK_BASE_URL}` : ''}.`
    : 'Model: a small SCRIPTED model (no DEEPSEEK_API_KEY set). It saves what it is told to remember and answers only from recalled notes.')
  console.log(`Store: ${storePath} (a fresh file at the plugin's default path under a temporary DSH_HOME)`)

  const turn = async (name: string, prompt: string): Promise<Call[]> => {
    session = name
    const first = calls.length
    console.log(`\n━━ ${name} (a new session) ━━`)
    console.log(`user: ${prompt}`)
    const agent = ctx.agentLoop.create(SessionId(`demo-${name.replace(/\W+/g, '-').toLowerCase()}`), route)
    agent.followup(createUserMessage({ content: [{ type: 'text', text: prompt }], source: { kind: 'user' } }))
    const errorsBefore = errors.length
    await agent.whenIdle()
    if (errors.length > errorsBefore) throw new Error(`${name} failed: ${errors.slice(errorsBefore).join(' | ')}`)
    const mine = calls.slice(first)
    mine.forEach((call, i) => {
      const results = newToolResults(mine[i - 1]?.request, call.request)
      for (const result of results) console.log(`  tool result → model: ${result}`)
      const recall = call.request.messages.filter(isRecall)
      if (i === 0 && recall.length > 0) console.log(`  stablemem recalled into this request:\n${indent(textOf(recall.at(-1)!), '    ')}`)
      for (const block of call.answer) {
        if (block.type === 'tool-call') console.log(`  model → tool call ${block.name} ${block.arguments}`)
        else if (block.type === 'text') console.log(`  model: ${block.text}`)
      }
    })
    return mine
  }

  let failure: string | undefined
  try {
    const s1 = await turn('Session 1', SESSION_1)
    const saved = [...new Set((s1.at(-1)?.request.messages ?? []).flatMap(toolResultTexts).flatMap((t) => /blk_[0-9a-f]{24}/.exec(t)?.[0] ?? []))]
    for (const id of saved) {
      const block = await ctx.stablemem.get(id)
      console.log(`  stored ${id}: ${JSON.stringify(block?.text)}`)
    }
    if (saved.length === 0) console.log('  (the model saved nothing this time; with a real model, try again or rephrase)')

    const s2 = await turn('Session 2', SESSION_2)
    console.log('\n  The exact messages the model received in session 2 (after the system prompt and tool list):')
    const request = s2[0]?.request
    if (request) {
      console.log(`  system prompt: ${request.system?.length ?? 0} characters; tools: ${request.tools?.map((t) => t.name).join(', ')}`)
      request.messages.forEach((message, i) => console.log(describe(message, i + 1)))
    }
    await turn('Session 3', SESSION_3)
    const stats = await ctx.stablemem.stats()
    console.log(`\nDone. ${stats.blocks} notes in ${storePath}; recall messages injected: ${stats.injections}.`)
    console.log(`Inspect it: npm run stablemem -- recall "billing 端口" --db ${storePath}`)
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error)
  } finally {
    await ctx.fiber.dispose()
  }
  if (failure !== undefined) {
    console.error(`demo: ${failure}`)
    return 1
  }
  return 0
}

function isRecall(message: Message): boolean {
  return message.source.kind === 'plugin' && (message.source as { plugin?: string }).plugin === stablemem.name
}

function toolResultTexts(message: Message): string[] {
  return message.content.flatMap((b) => b.type === 'tool-result' ? b.content.flatMap((c) => c.type === 'text' ? [c.text] : []) : [])
}

/** Tool results present in `request` but not in the previous request of the same turn. */
function newToolResults(previous: GenerateOptions | undefined, request: GenerateOptions): string[] {
  const seen = new Set(previous?.messages.map((m) => m.id) ?? [])
  return request.messages.filter((m) => !seen.has(m.id)).flatMap(toolResultTexts)
}

/** One message of a request, with its role, its source and its full text. */
function describe(message: Message, n: number): string {
  const source = message.source as { kind: string, plugin?: string, form?: string }
  const from = [source.kind, source.plugin, source.form].filter((x) => x !== undefined).join(' / ')
  const marker = isRecall(message) ? '   ◀ the recalled note, in the plugin\'s attributed message' : ''
  const body = message.content.map((b) => b.type === 'text' ? b.text : `[${b.type}]`).join('\n')
  return `  [${n}] ${message.role} · ${from}${marker}\n${indent(body, '      ')}`
}

function indent(text: string, prefix: string): string {
  return text.split('\n').map((line) => prefix + line).join('\n')
}

process.exitCode = await main()
