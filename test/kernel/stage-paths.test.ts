/**
 * The two ways a stage runs: synchronously while its handlers answer synchronously (no promise,
 * no list, nothing awaited: what makes a no-op handler cheap) and asynchronously from the first
 * handler that returns a promise. Both must give the same decisions in the same order. The host
 * is tested on its own; the stream, tool and exit paths in real turns with sync, async and mixed
 * handlers. Mutation checks: the snapshot a run iterates, the agent scope on the allocation-free
 * path, and the rest of an expanded chunk.
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { StreamChunk } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import type { StageHost as Host } from '../../lib/kernel/stages/host.ts'
import { StageHost } from '../../lib/kernel/stages/host.ts'
import { boot, echoTool, reply, tempStorePath, textOf, toolCall, userMessage, type Harness } from '../helpers/harness.ts'
import { mutant, type Edit } from '../helpers/mutant.ts'

const agentA = { id: 'a', session: { header: {} } } as unknown as Agent
const agentB = { id: 'b', session: { header: {} } } as unknown as Agent
const signal = new AbortController().signal
const input = (agent: Agent) => () => ({ agent, turn: 1, step: 1, messages: [], signal })
const tick = () => new Promise((resolve) => setImmediate(resolve))

/** The host class itself, or the one of a mutated copy of lib/. */
async function hostClass(t: Test, edit?: Edit): Promise<typeof Host> {
  if (edit === undefined) return StageHost
  const m = mutant(edit)
  t.teardown(() => m.remove())
  return (await m.load<{ StageHost: typeof Host }>('kernel/stages/host.ts')).StageHost
}

t.test('synchronous handlers run synchronously: no promise comes back, decisions in order', async (t) => {
  const host = new StageHost({ warn: () => {} })
  const seen: string[] = []
  host.add('on_input', () => { seen.push('one') })
  host.add('on_input', () => { seen.push('two'); return { kind: 'reply', text: 'x' } })
  host.add('on_input', () => { seen.push('three') })
  const visited: string[] = []
  const ran = host.run('on_input', agentA, input(agentA), (d) => { visited.push(d.kind); return 'stop' })
  t.equal(ran, undefined, 'nothing to await')
  t.same(seen, ['one', 'two'], 'stopped at the decision, synchronously')
  t.same(visited, ['reply'])
  t.equal(host.stats().calls.on_input, 2)
})

t.test('from the first asynchronous handler on, the rest run after it, in order', async (t) => {
  const host = new StageHost({ warn: () => {} })
  const events: string[] = []
  host.add('pre_action', () => { events.push('sync 1') })
  host.add('pre_action', async () => {
    events.push('async start')
    await tick()
    events.push('async end')
    return { messages: [] }
  })
  host.add('pre_action', () => { events.push('sync 2'); return undefined })
  host.add('pre_action', async () => { throw new Error('late failure') })
  host.add('pre_action', () => { events.push('sync 3') })
  const visited: number[] = []
  const ran = host.run('pre_action', agentA, input(agentA), (d) => { visited.push(d.messages?.length ?? -1); return 'next' })
  t.ok(ran instanceof Promise, 'a promise once a handler returned one')
  t.same(events, ['sync 1', 'async start'], 'nothing after the pending handler has started yet')
  await ran
  t.same(events, ['sync 1', 'async start', 'async end', 'sync 2', 'sync 3'])
  t.same(visited, [0], 'the async decision was visited')
  t.match(host.stats(), { calls: { pre_action: 5 }, errors: { pre_action: 1 } }, 'the rejection was counted, the next handler still ran')
  const stopped: string[] = []
  const early = new StageHost({ warn: () => {} })
  early.add('on_input', async () => ({ kind: 'reject' }))
  early.add('on_input', () => { stopped.push('ran') })
  await early.run('on_input', agentA, input(agentA), () => 'stop')
  t.same(stopped, [], 'an asynchronous stop ends the stage too')
})

/** A run that registers a handler on its own stage from inside a handler. */
async function registersDuringRun(t: Test, edit?: Edit): Promise<string[]> {
  const Host = await hostClass(t, edit)
  const host = new Host({ warn: () => {} })
  const seen: string[] = []
  host.add('after_output', () => {
    seen.push('first')
    host.add('after_output', () => { seen.push('added') })
  })
  await host.run('after_output', agentA, () => ({ agent: agentA, turn: 1, reason: { kind: 'completed' }, text: '' }) as never, () => 'next')
  return seen
}

t.test('a run iterates a snapshot: a handler registered during it runs from the next run on', async (t) => {
  t.same(await registersDuringRun(t), ['first'])
  const inPlace = await registersDuringRun(t, {
    file: 'kernel/stages/host.ts',
    from: 'this.replace(stage, [...this.entries.get(stage)!, entry as unknown as Entry<Stage>].sort(',
    to: 'this.replace(stage, (this.entries.get(stage) as Entry<Stage>[]).push(entry as unknown as Entry<Stage>) < 0 ? [] : (this.entries.get(stage) as Entry<Stage>[]).sort(',
  })
  t.same(inPlace, ['first', 'added'], 'mutation: a list changed in place runs the new handler in the run that added it')
})

/** Which handlers apply to agent b when one of two is scoped to agent a. */
async function scopedFor(t: Test, edit?: Edit): Promise<{ applicable: number, has: boolean, ran: string[] }> {
  const Host = await hostClass(t, edit)
  const host = new Host({ warn: () => {} })
  const ran: string[] = []
  host.add('post_action', () => { ran.push('only a') }, { agents: (agent) => agent.id === 'a' })
  host.add('before_toolcall', () => { ran.push('only a') }, { agents: (agent) => agent.id === 'a' })
  host.add('post_action', () => { ran.push('all') })
  for (const e of host.applicable('post_action', agentB)) host.invoke(e, { agent: agentB, turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } })
  return { applicable: host.applicable('post_action', agentB).length, has: host.has('before_toolcall', agentB), ran }
}

t.test('without scoped handlers the stage\'s list is handed out as it is; with one, it is filtered', async (t) => {
  const host = new StageHost({ warn: () => {} })
  host.add('post_action', () => undefined)
  t.equal(host.applicable('post_action', agentA), host.applicable('post_action', agentB), 'the same list every time: nothing allocated')
  const { applicable, has, ran } = await scopedFor(t)
  t.equal(applicable, 1)
  t.equal(has, false, 'no before_toolcall handler applies to b')
  t.same(ran, ['all'])
  const bad = await scopedFor(t, { file: 'kernel/stages/host.ts', from: 'return this.scoped.get(stage) ? list.filter((e) => applies(e.agents, agent)) : list', to: 'return list' })
  t.same(bad.ran, ['only a', 'all'], 'mutation: without the scope check the handler for a runs for b')
  const badHas = await scopedFor(t, { file: 'kernel/stages/host.ts', from: 'if (!this.scoped.get(stage)) return list.length > 0', to: 'return list.length > 0' })
  t.equal(badHas.has, true, 'mutation: without it `has` says yes for b')
})

/** Boots a loop (or a mutant's) with an `echo` tool that records its runs. */
async function setup(t: Test, script: StreamChunk[][], config: Partial<plugin.Config> = {}, edit?: Edit): Promise<{ h: Harness, runs: string[] }> {
  let module: typeof plugin | undefined
  if (edit !== undefined) {
    const m = mutant(edit)
    t.teardown(() => m.remove())
    module = await m.load<typeof plugin>('index.ts')
  }
  const h = await boot({ path: tempStorePath('paths'), ...config }, script, module ? { module } : {})
  t.teardown(() => h.dispose())
  const runs: string[] = []
  h.ctx.tools.register(echoTool((word) => { runs.push(word) }))
  return { h, runs }
}

type Mode = 'sync' | 'async'
/** A handler body run synchronously, or after a tick. */
const as = <T>(mode: Mode, fn: () => T): T | Promise<T> => (mode === 'sync' ? fn() : tick().then(fn))

/**
 * A streamed reply with two text deltas through four post_action handlers: split every delta in
 * two, drop deltas (or not), redact the assembled block, record what comes out.
 */
async function streamed(t: Test, modes: [Mode, Mode, Mode, Mode], drop: boolean, edit?: Edit): Promise<{ out: string[], logged: string[], deltasSeen: number, text: string }> {
  const chunks: StreamChunk[] = [
    { type: 'block-start', index: 0, blockType: 'text' },
    { type: 'text-delta', index: 0, text: 'the password ' },
    { type: 'text-delta', index: 0, text: 'is hunter2' },
    { type: 'block-end', index: 0, block: { type: 'text', text: 'the password is hunter2' } },
    { type: 'finish', reason: { kind: 'stop' } },
  ]
  const { h } = await setup(t, [chunks], {}, edit)
  const stages = h.ctx.stablemem.stages
  const out: string[] = []
  let deltasSeen = 0
  stages.on('post_action', ({ chunk }) => as(modes[0], () => (chunk.type === 'text-delta'
    ? [{ ...chunk, text: chunk.text.slice(0, 3) }, { ...chunk, text: chunk.text.slice(3) }]
    : undefined)), { order: 1 })
  stages.on('post_action', ({ chunk }) => as(modes[1], () => {
    if (chunk.type !== 'text-delta') return undefined
    deltasSeen++
    return drop ? null : undefined
  }), { order: 2 })
  stages.on('post_action', ({ chunk }) => as(modes[2], () => (chunk.type === 'block-end' && chunk.block.type === 'text'
    ? { ...chunk, block: { ...chunk.block, text: chunk.block.text.replace('hunter2', '***') } }
    : undefined)), { order: 3 })
  stages.on('post_action', ({ chunk }) => as(modes[3], () => { out.push(chunk.type === 'text-delta' ? `delta ${chunk.text}` : chunk.type) }), { order: 4 })
  const agent = await h.turn('what is it')
  const text = agent.session.events.filter((e) => e.type === 'assistant/message').map((e) => textOf(e.data.message as never)).join('|')
  // What the stream yielded, as the session logged it chunk by chunk.
  const logged = agent.session.events.flatMap((e) => (e.type === 'assistant/chunk' ? [e.data.chunk.type === 'text-delta' ? `delta ${e.data.chunk.text}` : e.data.chunk.type] : []))
  return { out, logged, deltasSeen, text }
}

const kept = ['block-start', 'delta the', 'delta  password ', 'delta is ', 'delta hunter2', 'block-end', 'finish']

t.test('post_action: split, kept, redacted, the same with synchronous, asynchronous and mixed handlers', async (t) => {
  for (const modes of [['sync', 'sync', 'sync', 'sync'], ['async', 'async', 'async', 'async'], ['sync', 'async', 'sync', 'sync'], ['async', 'sync', 'sync', 'async']] as Array<[Mode, Mode, Mode, Mode]>) {
    const { out, logged, deltasSeen, text } = await streamed(t, modes, false)
    t.same(out, kept, `${modes.join('/')}: every piece of a split chunk reaches the later handlers, in order`)
    t.same(logged, kept, 'and the log')
    t.equal(deltasSeen, 4)
    t.equal(text, 'the password is ***')
  }
})

t.test('post_action: chunks dropped by a handler (synchronous or not) reach no later handler and no log', async (t) => {
  for (const modes of [['sync', 'sync', 'sync', 'sync'], ['sync', 'async', 'sync', 'sync']] as Array<[Mode, Mode, Mode, Mode]>) {
    const { out, logged, deltasSeen, text } = await streamed(t, modes, true)
    t.same(out, ['block-start', 'block-end', 'finish'], modes.join('/'))
    t.same(logged, out)
    t.equal(deltasSeen, 4, 'the dropping handler saw each split piece')
    t.equal(text, 'the password is ***')
  }
})

t.test('mutation check: a stream that hands on only the first chunk of a split loses the rest', async (t) => {
  const { out, logged } = await streamed(t, ['sync', 'sync', 'sync', 'sync'], false, { file: 'kernel/stages/post-action-stream.ts', from: '    this.at = 1\n', to: '    this.at = out.length\n' })
  t.same(out, kept, 'the handlers still saw every piece')
  t.same(logged, ['block-start', 'delta the', 'delta is ', 'block-end', 'finish'], 'mutation: the log lost the second piece of each split')
})

/** Two tool calls; the handlers deny the first (sync or async), replace the second's content. */
async function toolTurn(t: Test, mode: Mode, config: Partial<plugin.Config> = {}): Promise<{ h: Harness, runs: string[], agent: Agent }> {
  const { h, runs } = await setup(t, [toolCall('c1', 'echo', { word: 'rm -rf' }), toolCall('c2', 'echo', { word: 'secret' }), reply('done')], config)
  const stages = h.ctx.stablemem.stages
  stages.on('before_toolcall', () => as(mode, () => undefined)) // no opinion: straight on
  stages.on('before_toolcall', ({ arguments: args }) => as(mode, () => ((args as { word: string }).word === 'rm -rf' ? { kind: 'deny', reason: 'not allowed' } as const : undefined)))
  stages.on('after_toolcall', () => as(mode, () => undefined))
  stages.on('after_toolcall', ({ content }) => as(mode, () => ({ kind: 'replace', content: content.map((b) => (b.type === 'text' ? { ...b, text: b.text.replace('secret', '[redacted]') } : b)) }) as const))
  const agent = h.ctx.agentLoop.create(SessionId(`tools-${mode}`), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('clean up'))
  await agent.whenIdle()
  return { h, runs, agent }
}

const toolTexts = (h: Harness, request: number) => h.adapter.requests[request]!.messages.filter((m) => m.source.kind === 'tool').flatMap((m) => m.content.flatMap((b) =>
  b.type === 'tool-result' ? b.content.map((c) => (c.type === 'text' ? c.text : '')) : []))

t.test('before_toolcall and after_toolcall: the same decisions on the synchronous and the asynchronous path', async (t) => {
  for (const mode of ['sync', 'async'] as const) {
    const { h, runs } = await toolTurn(t, mode)
    t.same(runs, ['secret'], `${mode}: the denied call never ran`)
    t.same(toolTexts(h, 1), ['Error: not allowed'], `${mode}: the model got the denial`)
    t.same(toolTexts(h, 2), ['Error: not allowed', 'echo:[redacted]'], `${mode}: the replaced content reached the next request`)
    t.equal(h.adapter.requests.length, 3)
  }
})

t.test('stopWhenAllDenied counts denials on both paths', async (t) => {
  for (const mode of ['sync', 'async'] as const) {
    const { h, runs, agent } = await toolTurn(t, mode, { stopWhenAllDenied: true })
    t.same(runs, [], mode)
    t.equal(h.adapter.requests.length, 1, `${mode}: the all-denied step ended the turn`)
    t.same(agent.session.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind), ['blocked'])
  }
})

/**
 * Handlers of one dispatch share one argument object until a decision changes what it holds
 * (the cheap path for no-op handlers); a handler after a rewrite, an addition or a replacement
 * must see it. One turn with one tool call: what the second handler of each stage saw.
 */
async function sharedArgument(t: Test, edit?: Edit): Promise<{ input: string[], batch: number[], content: string[] }> {
  const { h } = await setup(t, [toolCall('c1', 'echo', { word: 'secret' }), reply('done')], {}, edit)
  const stages = h.ctx.stablemem.stages
  const seen = { input: [] as string[], batch: [] as number[], content: [] as string[] }
  stages.on('on_input', () => undefined, { order: 1 })
  stages.on('on_input', () => ({ kind: 'rewrite', messages: [userMessage('rewritten')] }), { order: 2 })
  stages.on('on_input', ({ messages }) => { seen.input.push(messages.map((m) => textOf(m)).join('|')) }, { order: 3 })
  stages.on('pre_action', () => undefined, { order: 1 })
  stages.on('pre_action', ({ step }) => (step === 1 ? { messages: [userMessage('added')] } : undefined), { order: 2 })
  stages.on('pre_action', ({ messages }) => { seen.batch.push(messages.length) }, { order: 3 })
  stages.on('after_toolcall', () => undefined, { order: 1 })
  stages.on('after_toolcall', ({ content }) => ({ kind: 'replace', content: content.map((b) => (b.type === 'text' ? { ...b, text: b.text.replace('secret', '[redacted]') } : b)) }), { order: 2 })
  stages.on('after_toolcall', ({ content }) => { seen.content.push(content.map((b) => (b.type === 'text' ? b.text : '')).join('')) }, { order: 3 })
  await h.turn('go')
  return seen
}

t.test('a shared argument is renewed when a handler changes it: the next handler sees the change', async (t) => {
  const seen = await sharedArgument(t)
  t.same(seen, { input: ['rewritten'], batch: [2, 0], content: ['echo:[redacted]'] })
  const input = await sharedArgument(t, { file: 'kernel/stages/bind.ts', from: 'input = d.messages\n          arg = undefined\n', to: 'input = d.messages\n' })
  t.same(input.input, ['go'], 'mutation: without the renewal on_input\'s next handler sees the input before the rewrite')
  const batch = await sharedArgument(t, { file: 'kernel/stages/bind.ts', from: 'added.push(...d.messages)\n          arg = undefined\n', to: 'added.push(...d.messages)\n' })
  t.same(batch.batch, [1, 0], 'mutation: pre_action\'s next handler does not see the added message')
  const content = await sharedArgument(t, { file: 'kernel/stages/bind.ts', from: '      arg = undefined // the next handler sees what this one replaced\n', to: '' })
  t.same(content.content, ['echo:secret'], 'mutation: after_toolcall\'s next handler sees the content before the replacement')
})
