/**
 * The stage API in real turns: the real agent loop with a scripted model, handlers registered
 * through `ctx.stablemem.stages`. Each power and each guard has a mutation check against a copy
 * of the real source.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { StreamChunk } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import type { Stages } from '../../lib/index.ts'
import { boot, echoTool, reply, requestTexts, tempStorePath, textOf, toolCall, userMessage, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Boots the loop with the plugin (or a mutant of it) and an `echo` tool that counts its runs. */
async function setup(t: Test, script: StreamChunk[][], options: { config?: Partial<plugin.Config>, mutation?: { file: string, from: string, to: string } } = {}): Promise<{ h: Harness, stages: Stages, runs: string[] }> {
  let module: typeof plugin | undefined
  if (options.mutation) {
    const m = mutant(options.mutation)
    t.teardown(() => m.remove())
    module = await m.load<typeof plugin>('index.ts')
  }
  const h = await boot({ path: tempStorePath(), ...options.config }, script, module ? { module } : {})
  t.teardown(() => h.dispose())
  const runs: string[] = []
  h.ctx.tools.register(echoTool((word) => { runs.push(word) }))
  return { h, stages: h.ctx.stablemem.stages, runs }
}

function turnEnds(agent: Agent): string[] {
  return agent.session.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind)
}

function assistantTexts(agent: Agent): string[] {
  return agent.session.events.filter((e) => e.type === 'assistant/message').map((e) => textOf(e.data.message as never))
}

/** The tool results the model saw in one request. */
function toolResults(h: Harness, request: number): string[] {
  return h.adapter.requests[request]!.messages.filter((m) => m.source.kind === 'tool').flatMap((m) => m.content.flatMap((b) =>
    b.type === 'tool-result' ? b.content.map((c) => (c.type === 'text' ? c.text : '')) : []))
}

/** A turn with two tool steps and a final answer, with a handler on every stage writing the trace. */
async function tracedTurn(t: Test, mutation?: { file: string, from: string, to: string }): Promise<string[]> {
  const { h, stages } = await setup(t, [toolCall('c1', 'echo', { word: 'a' }), toolCall('c2', 'echo', { word: 'b' }), reply('done')], mutation ? { mutation } : {})
  const trace: string[] = []
  stages.on('on_input', ({ step }) => { trace.push(`on_input ${step}`) })
  stages.on('pre_action', ({ step }) => { trace.push(`pre_action ${step}`) })
  stages.on('post_action', ({ step, chunk }) => { if (chunk.type === 'finish') trace.push(`post_action ${step}`) })
  stages.on('before_toolcall', ({ step, name }) => { trace.push(`before_toolcall ${step} ${name}`) })
  stages.on('after_toolcall', ({ step, name }) => { trace.push(`after_toolcall ${step} ${name}`) })
  stages.on('after_output', ({ reason, text }) => { trace.push(`after_output ${reason.kind} ${text}`) })
  const agent = await h.turn('run the two steps')
  await stages.idle()
  t.same(turnEnds(agent), ['completed'])
  return trace
}

/** The order docs/stages.md documents for a turn with two tool steps. */
const DOCUMENTED_ORDER = [
  'on_input 1', 'pre_action 1', 'post_action 1', 'before_toolcall 1 echo', 'after_toolcall 1 echo',
  'pre_action 2', 'post_action 2', 'before_toolcall 2 echo', 'after_toolcall 2 echo',
  'pre_action 3', 'post_action 3', 'after_output completed done',
]

t.test('the stages of a real turn with two tool steps run in the documented order', async (t) => {
  t.same(await tracedTurn(t), DOCUMENTED_ORDER)
})

t.test('mutation: on_input on every step breaks the documented order', async (t) => {
  const trace = await tracedTurn(t, { file: 'kernel/stages/bind.ts', from: 'if ((step === 1 || human) && host', to: 'if (host' })
  t.notSame(trace, DOCUMENTED_ORDER)
})

async function rejectedTurn(t: Test, mutation?: { file: string, from: string, to: string }) {
  const { h, stages } = await setup(t, [reply('the model answered')], mutation ? { mutation } : {})
  stages.on('on_input', ({ messages }) => (messages.some((m) => textOf(m as never).includes('forbidden')) ? { kind: 'reject', reason: 'blocklist' } : undefined))
  const agent = await h.turn('a forbidden word')
  return { h, agent }
}

t.test('on_input reject: the model is never called and the turn ends blocked', async (t) => {
  const { h, agent } = await rejectedTurn(t)
  t.equal(h.adapter.requests.length, 0)
  t.same(turnEnds(agent), ['blocked'])
  t.ok(h.logs.some((l) => /rejected turn/.test(l.text) && /blocklist/.test(l.text)), 'the reason is logged')
  const bad = await rejectedTurn(t, { file: 'kernel/stages/bind.ts', from: 'if (rejected) return { kind: \'reject\' }', to: '' })
  t.equal(bad.h.adapter.requests.length, 1, 'mutation: without the reject the model is called')
  t.same(turnEnds(bad.agent), ['completed'])
})

async function cannedTurn(t: Test, mutation?: { file: string, from: string, to: string }) {
  const { h, stages } = await setup(t, [], mutation ? { mutation } : {})
  stages.on('on_input', () => ({ kind: 'reply', text: '我不能回答这个。' }))
  const agent = await h.turn('a question the plugin answers itself')
  return { h, agent }
}

t.test('on_input reply: the canned text is logged as the assistant message without a model call', async (t) => {
  const { h, agent } = await cannedTurn(t)
  t.equal(h.adapter.requests.length, 0)
  t.same(assistantTexts(agent), ['我不能回答这个。'])
  t.same(turnEnds(agent), ['completed'])
  t.ok(agent.session.events.some((e) => e.type === 'user/message' && textOf(e.data as never) === 'a question the plugin answers itself'), 'the input is logged')
  const bad = await cannedTurn(t, { file: 'kernel/stages/bind.ts', from: '    st.reply = prepared.reply\n', to: '' })
  t.equal(bad.h.adapter.requests.length, 1, 'mutation: without the stashed reply the model is asked')
  t.same(turnEnds(bad.agent), ['error'])
})

t.test('on_input rewrite: the rewritten input enters the step in place of the claimed one', async (t) => {
  const { h, stages } = await setup(t, [reply('ok')])
  stages.on('on_input', () => ({ kind: 'rewrite', messages: [userMessage('rewritten question')] }))
  await h.turn('original question')
  const texts = requestTexts(h.adapter.requests[0]!)
  t.ok(texts.includes('rewritten question'))
  t.notOk(texts.includes('original question'))
  t.equal(h.adapter.requests[0]!.messages[0]!.source.kind, 'user', 'at the position of the claimed input, before the snapshot')
})

async function garbageRewrite(t: Test, mutation?: { file: string, from: string, to: string }) {
  const { h, stages } = await setup(t, [reply('ok')], mutation ? { mutation } : {})
  stages.on('on_input', () => ({ kind: 'rewrite', messages: [{ text: 'not a message' }] as never }))
  const agent = await h.turn('the real question')
  return { h, agent }
}

t.test('a rewrite to something that is not a user message is refused and counted; the input stays', async (t) => {
  const { h, agent } = await garbageRewrite(t)
  t.same(turnEnds(agent), ['completed'])
  t.ok(requestTexts(h.adapter.requests[0]!).includes('the real question'))
  t.equal((await h.ctx.stablemem.stats()).stages.errors.on_input, 1)
  const bad = await garbageRewrite(t, { file: 'kernel/stages/bind.ts', from: "if (d.kind === 'rewrite' && userMessages(d.messages))", to: "if (d.kind === 'rewrite' && Array.isArray(d.messages))" })
  const sent = JSON.stringify(bad.h.adapter.requests[0]?.messages ?? [])
  t.ok(!sent.includes('the real question') && sent.includes('not a message'), 'mutation: without the check the garbage replaces the input in the log and the request')
})

async function deniedTurn(t: Test, config: Partial<plugin.Config>, mutation?: { file: string, from: string, to: string }, steer = false) {
  const { h, stages, runs } = await setup(t, [toolCall('c1', 'echo', { word: 'rm -rf' }), toolCall('c2', 'echo', { word: 'again' }), reply('gave up')], { config, ...(mutation ? { mutation } : {}) })
  let agent: Agent | undefined
  stages.on('before_toolcall', ({ arguments: args }) => {
    if (steer) agent!.steer(userMessage('queued: do something else'))
    return (args as { word: string }).word === 'rm -rf' ? { kind: 'deny', reason: 'destructive commands are not allowed' } : undefined
  })
  agent = h.ctx.agentLoop.create(SessionId('denied'), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('clean up'))
  await agent.whenIdle()
  return { h, agent, runs }
}

t.test('before_toolcall deny: the model gets the denial as the tool error and the turn goes on', async (t) => {
  const { h, agent, runs } = await deniedTurn(t, {})
  t.same(runs, ['again'], 'the denied call never ran')
  t.same(toolResults(h, 1), ['Error: destructive commands are not allowed'])
  t.equal(h.adapter.requests.length, 3)
  t.same(turnEnds(agent), ['completed'])
  const bad = await deniedTurn(t, {}, { file: 'kernel/stages/bind.ts', from: "if (d.kind === 'deny') decision = { kind: 'deny', reason: String(d.reason) }", to: "if (d.kind === 'deny') return 'next'" })
  t.same(bad.runs, ['rm -rf', 'again'], 'mutation: without the deny the call runs')
})

t.test('stopWhenAllDenied ends the turn after an all-denied step', async (t) => {
  const { h, agent, runs } = await deniedTurn(t, { stopWhenAllDenied: true })
  t.equal(h.adapter.requests.length, 1, 'no second model call')
  t.same(runs, [])
  t.same(turnEnds(agent), ['blocked'])
  t.match((await h.ctx.stablemem.stats()).stages.exits, { stopWhenAllDenied: 1 })
})

t.test('stopWhenAllDenied never drops input queued during the denied step', async (t) => {
  const { h, agent } = await deniedTurn(t, { stopWhenAllDenied: true }, undefined, true)
  t.ok(h.adapter.requests.length >= 2, 'the step with the queued input ran')
  t.ok(requestTexts(h.adapter.requests[1]!).includes('queued: do something else'), 'the model saw it')
  t.same(turnEnds(agent), ['completed'])
  const bad = await deniedTurn(t, { stopWhenAllDenied: true }, { file: 'kernel/stages/bind.ts', from: ' && claimed.length === 0', to: '' }, true)
  t.equal(bad.h.adapter.requests.length, 1, 'mutation: without the guard the turn stops')
  t.notOk(bad.h.adapter.requests.some((r) => requestTexts(r).includes('queued: do something else')), 'and the queued input is lost')
})

async function loopingTurn(t: Test, mutation?: { file: string, from: string, to: string }) {
  const script = Array.from({ length: 8 }, (_, i) => toolCall(`c${i}`, 'echo', { word: `w${i}` }))
  const { h } = await setup(t, script, { config: { maxStepsPerTurn: 3 }, ...(mutation ? { mutation } : {}) })
  const agent = await h.turn('loop forever')
  return { h, agent }
}

t.test('maxStepsPerTurn ends a looping turn at N model calls', async (t) => {
  const { h, agent } = await loopingTurn(t)
  t.equal(h.adapter.requests.length, 3)
  t.same(turnEnds(agent), ['blocked'])
  t.match((await h.ctx.stablemem.stats()).stages.exits, { maxStepsPerTurn: 1 })
  const bad = await loopingTurn(t, { file: 'kernel/stages/bind.ts', from: 'step > exits.maxStepsPerTurn', to: 'false' })
  t.equal(bad.h.adapter.requests.length, 9, 'mutation: without the exit the loop runs until the script is exhausted')
})

async function redactedTurn(t: Test, mutation?: { file: string, from: string, to: string }) {
  const { h, stages } = await setup(t, [toolCall('c1', 'echo', { word: 'secret' }), reply('done')], mutation ? { mutation } : {})
  stages.on('after_toolcall', ({ content }) => ({ kind: 'replace', content: content.map((b) => (b.type === 'text' ? { ...b, text: b.text.replace('secret', '[redacted]') } : b)) }))
  await h.turn('echo the secret')
  return h
}

t.test('after_toolcall content replacement reaches the next request', async (t) => {
  t.same(toolResults(await redactedTurn(t), 1), ['echo:[redacted]'])
  const bad = await redactedTurn(t, { file: 'kernel/stages/bind.ts', from: "[content, replaced] = [d.content, 'content']", to: '' })
  t.same(toolResults(bad, 1), ['echo:secret'], 'mutation: without the replacement the raw result reaches the model')
})

async function throwingTurn(t: Test, mutation?: { file: string, from: string, to: string }) {
  const { h, stages } = await setup(t, [reply('fine')], mutation ? { mutation } : {})
  const ran: string[] = []
  stages.on('on_input', function broken() { throw new Error('handler bug') })
  stages.on('on_input', () => { ran.push('second') })
  const agent = await h.turn('hello')
  return { h, agent, ran }
}

t.test('a throwing handler: the turn completes, the error is counted and logged, later handlers run', async (t) => {
  const { h, agent, ran } = await throwingTurn(t)
  t.same(turnEnds(agent), ['completed'])
  t.same(ran, ['second'])
  t.match((await h.ctx.stablemem.stats()).stages, { errors: { on_input: 1 }, calls: { on_input: 2 } })
  t.ok(h.logs.some((l) => l.type === 'warn' && /handler %s failed/.test(l.text) && / broken .*handler bug/.test(l.text)), 'logged with the handler name')
  const bad = await throwingTurn(t, { file: 'kernel/stages/host.ts', from: '    } catch (error) {\n      return this.failed(entry, error)', to: '    } catch (error) {\n      throw error' })
  t.same(turnEnds(bad.agent), ['error'], 'mutation: an uncaught handler error ends the turn in an error')
  t.same(bad.ran, [])
})

async function overlapping(t: Test, mutation?: { file: string, from: string, to: string }): Promise<string[]> {
  const { h, stages } = await setup(t, [reply('ok')], mutation ? { mutation } : {})
  const events: string[] = []
  stages.on('on_input', async () => {
    events.push('first start')
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
    events.push('first end')
  })
  stages.on('on_input', () => { events.push('second start') })
  await h.turn('hello')
  return events
}

t.test('two handlers of one stage run in order, never concurrently', async (t) => {
  t.same(await overlapping(t), ['first start', 'first end', 'second start'])
  const bad = await overlapping(t, {
    file: 'kernel/stages/host.ts',
    from: 'if (isPromise(called)) return this.resume(stage, entries, i, called, input, visit)',
    to: 'if (isPromise(called)) return Promise.all([called, ...entries.slice(i + 1).map((e) => this.invoke(e, input()))]).then(() => undefined)',
  })
  t.same(bad, ['first start', 'second start', 'first end'], 'mutation: under Promise.all the second starts before the first ends')
})

t.test('order, agent scope, and removal when the registering plugin is disposed', async (t) => {
  const { h, stages } = await setup(t, [reply('1'), reply('2'), reply('3'), reply('4')])
  const seen: string[] = []
  stages.on('pre_action', () => { seen.push('late') }, { order: 10 })
  stages.on('pre_action', () => { seen.push('early') }, { order: -10 })
  stages.on('pre_action', ({ agent }) => { seen.push(`only ${agent.id}`) }, { agents: (agent) => agent.id === 's1' })
  stages.on('pre_action', () => { seen.push('preset') }, { agents: { preset: 'stablemem' } })
  await h.turn('one', 's1')
  await h.turn('two', 's2')
  t.same(seen, ['early', 'only s1', 'late', 'early', 'late'], 'ascending order; the predicate picks s1; a bare agent is on no preset')
  const fiber = await h.ctx.plugin({
    name: 'blocker',
    inject: ['stablemem'],
    apply(ctx: Context) { ctx.stablemem.stages.on('on_input', () => ({ kind: 'reject' })) },
  })
  t.equal(h.ctx.stablemem.stages.stats().handlers.on_input, 1)
  t.same(turnEnds(await h.turn('three', 's3')), ['blocked'])
  await fiber.dispose()
  t.equal(h.ctx.stablemem.stages.stats().handlers.on_input, 0, 'the handler went with its plugin')
  t.same(turnEnds(await h.turn('four', 's4')), ['completed'])
})

t.test('a handler scoped to a preset runs only for agents whose session was composed from it', async (t) => {
  const { h, stages } = await setup(t, [reply('1'), reply('2')])
  const seen: string[] = []
  stages.on('on_input', ({ agent }) => { seen.push(agent.id) }, { agents: { preset: 'stablemem' } })
  for (const [id, agentPreset] of [['on-preset', 'stablemem'], ['other', 'standard']] as const) {
    const { agent } = await h.ctx.agents.create({ sessionId: SessionId(id), agentOptions: { provider: 'mock', model: 'mock-1' }, meta: { agentPreset } })
    agent.followup(userMessage('hi'))
    await agent.whenIdle()
  }
  t.same(seen, ['on-preset'])
})

t.test('registration refuses an unknown stage, before_output (with the reason) and bad options', async (t) => {
  const { stages } = await setup(t, [])
  const noop = (() => undefined) as never
  t.throws(() => stages.on('before_output' as never, noop), { message: /dsh has no gate for the final text/ })
  t.throws(() => stages.on('on_inptu' as never, noop), { message: /unknown stage "on_inptu"; the stages are on_input/ })
  t.throws(() => stages.on('on_input', () => {}, { order: Number.NaN }), { message: /order must be a finite number/ })
  t.throws(() => stages.on('on_input', () => {}, { agents: 'some' as never }), { message: /agents must be/ })
})

t.test('pre_action sections and contexts reach this step\'s request; a bad section is refused and counted', async (t) => {
  const { h, stages } = await setup(t, [reply('ok'), reply('ok')])
  stages.on('pre_action', ({ step }) => ({
    sections: [{ name: 'test:card', text: `Scene card for step ${step}.` }, { name: 'test:bad', text: 'uses {{nope}}' }],
    contexts: [{ name: 'test:ctx', text: 'Context line from a stage.' }],
  }))
  await h.turn('hello')
  const request = h.adapter.requests[0]!
  t.match(request.system, /Scene card for step 1\.$/, 'the section is in the system prompt, last')
  t.notMatch(request.system, /nope/)
  t.ok(requestTexts(request).some((x) => x.includes('Context line from a stage.')), 'the context is in the runtime-context snapshot')
  t.equal((await h.ctx.stablemem.stats()).stages.errors.pre_action, 1)
})

t.test('post_action transforms the model\'s chunks before they are logged', async (t) => {
  const { h, stages } = await setup(t, [reply('the password is hunter2')])
  stages.on('post_action', ({ chunk }) => (chunk.type === 'block-end' && chunk.block.type === 'text'
    ? { ...chunk, block: { ...chunk.block, text: chunk.block.text.replace('hunter2', '***') } }
    : undefined))
  const agent = await h.turn('what is it')
  t.same(assistantTexts(agent), ['the password is ***'])
})

t.test('before_toolcall result: the tool body does not run and the model sees the authored value rendered', async (t) => {
  const { h, stages, runs } = await setup(t, [toolCall('c1', 'echo', { word: 'cached' }), reply('done')])
  stages.on('before_toolcall', () => ({ kind: 'result', value: 'from cache' }))
  await h.turn('use the cache')
  t.same(runs, [])
  t.same(toolResults(h, 1), ['from cache'])
})

t.test('the kernel runs on the stages: recall at pre_action and turn statistics at after_output', async (t) => {
  const { h, stages } = await setup(t, [reply('8499'), reply('ok')])
  await h.ctx.stablemem.commit({ text: 'billing 服务端口 8499' })
  stages.on('on_input', ({ messages }) => (textOf(messages[0] as never).includes('blocked') ? { kind: 'reject' } : undefined))
  await h.turn('billing 端口是多少？')
  await h.turn('this one is blocked')
  await stages.idle()
  const stats = await h.ctx.stablemem.stats()
  t.match(stats, { injections: 1, turns: { completed: 1, blocked: 1 } })
  t.match(stats.stages.handlers, { pre_action: 2, after_output: 1 }, 'the recall, the scene card and the statistics are stage handlers')
})
