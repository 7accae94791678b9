/**
 * Per-turn recall through the real agent loop: what the model's request contains, when recall
 * runs, what it never does, and how it fails. Every turn runs on a real batch shape (the
 * `realContext` plugin adds a runtime-context line, the skill catalog and another plugin's note
 * after the human question). Each guard has a mutation check against a copy of the real source.
 */
import { DatabaseSync } from 'node:sqlite'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { Message } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { RECALL_HEADER } from '../../lib/plugin/render.ts'
import { requestTexts, boot, injected, realBatch, reply, tempStorePath, textOf, toolCall, userMessage, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const FACTS = [
  'billing 服务端口 8499，部署在 10.3.7.9',
  'nginx 配置文件在 /etc/nginx/nginx.conf',
  '值班室分机号 4324，值班人 老周',
]

/** Boots with the facts committed through the service, on a fresh file. */
async function bootWithFacts(t: Test, config: Partial<plugin.Config> = {}, options: BootOptions = {}): Promise<Harness> {
  const h = await boot({ path: tempStorePath(), ...config }, [], options)
  t.teardown(() => h.dispose())
  for (const text of FACTS) await h.ctx.stablemem.commit({ text })
  return h
}

/** Our recall messages in a session's durable history. */
function injectedEvents(agent: Agent): Message[] {
  return agent.session.events
    .filter((e) => e.type === 'user/message')
    .map((e) => e.data as Message)
    .filter((m) => m.source.kind === 'plugin' && (m.source as { plugin?: string }).plugin === plugin.name)
}

/** How the turn ended (`completed`, `error`, …). */
function turnEnds(agent: Agent): string[] {
  return agent.session.events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
}

/** The end-to-end assertion: the billing fact reached the model inside our attributed message. */
async function recallReachesModel(options: BootOptions, t: Test): Promise<{ ok: boolean, detail: string }> {
  const h = await bootWithFacts(t, {}, options)
  h.script(reply('8499'))
  await h.turn('billing 服务的端口是多少？')
  const request = h.adapter.requests[0]!
  const ours = injected(request)
  const text = ours.map(textOf).join('\n')
  const ok = h.errors.length === 0 && ours.length === 1 && text.includes('> billing 服务端口 8499，部署在 10.3.7.9')
  return { ok, detail: `${ours.length} message(s): ${JSON.stringify(text.slice(0, 300))}` }
}

t.test('a real turn: the model request carries the recalled fact in OUR attributed, quoted message', async (t) => {
  const h = await bootWithFacts(t)
  h.script(reply('端口是 8499。'))
  const agent = await h.turn('billing 服务的端口是多少？')
  t.same(h.errors, [])
  t.same(turnEnds(agent), ['completed'])
  const request = h.adapter.requests[0]!
  const kinds = request.messages.map((m) => m.source.kind === 'plugin' ? `plugin:${(m.source as { plugin: string }).plugin}` : m.source.kind)
  t.same(kinds, ['user', 'plugin:@deepseek-ai/dsh-system-prompt', 'skill-catalog', 'plugin:demo-plugin', `plugin:${plugin.name}`],
    'the real batch shape: question, snapshot, catalog, other plugin, then our recall last')
  const ours = injected(request)
  t.equal(ours.length, 1)
  t.same(ours[0]!.source, { kind: 'plugin', plugin: 'dsh-stablemem', form: 'recall' })
  t.equal(ours[0]!.role, 'user')
  t.ok(Object.isFrozen(ours[0]) && typeof ours[0]!.id === 'string' && ours[0]!.id !== '', 'built by createUserMessage: an id, deep-frozen')
  const text = textOf(ours[0]!)
  t.ok(text.startsWith(RECALL_HEADER), 'header first')
  t.match(text, /\n\[1\] blk_[0-9a-f]{24}( · exact match)?\n> billing 服务端口 8499，部署在 10\.3\.7\.9/)
  t.notMatch(text, /nginx|4324/, 'unrelated notes stay out')
  for (const line of text.split('\n').slice(1)) t.match(line, /^(|\[\d+\] blk_[0-9a-f]{24}( · exact match)?|> .*)$/, `line is framing or quoted: ${line.slice(0, 40)}`)
  t.same(injectedEvents(agent).map((m) => m.id), [ours[0]!.id], 'the injected message is durable, once')
  t.match(await h.ctx.stablemem.stats(), { injections: 1, recallFailures: 0 })
})

/**
 * The recall runs at pre_action, on the step's input (what the inbox released, after on_input).
 * dsh's own additions come later, but another plugin's on_input handler may put context after the
 * question: this one rewrites the input into the real batch shape.
 */
const contextAfterQuestion = {
  name: 'context-after-question',
  inject: ['stablemem'],
  apply(ctx: Context) {
    ctx.stablemem.stages.on('on_input', ({ messages }) => ({ kind: 'rewrite', messages: realBatch(messages[0]!) }))
  },
}

t.test('mutation: without the source allowlist the real batch recalls from injected context', async (t) => {
  const good = await recallReachesModel({ extra: [{ plugin: contextAfterQuestion }] }, t)
  t.ok(good.ok, `real plugin: ${good.detail}`)
  const m = mutant({ file: 'plugin/query-source.ts', from: ' || !allow.has(source.kind)', to: '' })
  t.teardown(() => m.remove())
  const bad = await recallReachesModel({ module: await m.load<typeof plugin>('index.ts'), extra: [{ plugin: contextAfterQuestion }] }, t)
  t.notOk(bad.ok, `mutant reads the other plugin's note as the query: ${bad.detail}`)
})

/** A turn whose first step calls a tool that steers a new human message in, so step 2 has a human message too. */
async function steeredTurn(t: Test, options: BootOptions = {}): Promise<{ h: Harness, agent: Agent }> {
  const h = await bootWithFacts(t, {}, options)
  let agent: Agent | undefined
  h.ctx.tools.register(defineTool({
    name: 'ask_again',
    description: 'test tool',
    parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute() {
      agent!.steer(userMessage('还有：值班室分机号是多少？'))
      return 'ok'
    },
  }))
  h.script(toolCall('c1', 'ask_again', {}), reply('done'))
  agent = h.ctx.agentLoop.create(SessionId('steered'), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('billing 服务的端口是多少？'))
  await agent.whenIdle()
  return { h, agent }
}

t.test('recall only on step 1: a tool-continuation step injects nothing, even with a new human message', async (t) => {
  const { h, agent } = await steeredTurn(t)
  t.same(h.errors, [])
  t.equal(h.adapter.requests.length, 2)
  const second = h.adapter.requests[1]!
  t.ok(second.messages.some((m) => m.source.kind === 'user' && textOf(m).includes('值班室分机号')), 'the steered question reached step 2')
  t.equal(injected(second).length, 1, 'step 2 re-sends the step-1 recall but adds none')
  t.equal(injectedEvents(agent).length, 1, 'exactly one injection in the history for the turn')
  const m = mutant({ file: 'plugin/pre-step.ts', from: ' || payload.step !== 1', to: '' })
  t.teardown(() => m.remove())
  const bad = await steeredTurn(t, { module: await m.load<typeof plugin>('index.ts') })
  t.equal(injectedEvents(bad.agent).length, 2, 'mutation: without the step check the continuation injects again')
})

t.test('one injection per turn across turns of one session', async (t) => {
  const h = await bootWithFacts(t)
  h.script(reply('8499'), reply('4324'), reply('hm'))
  await h.turn('billing 服务的端口是多少？', 'same')
  await h.turn('值班室分机号是多少？', 'same')
  const agent = await h.turn('今天天气不错', 'same')
  const ours = injectedEvents(agent)
  t.equal(ours.length, 2, 'two matching turns, two injections; the non-matching turn none')
  t.match(textOf(ours[0]!), /8499/)
  t.match(textOf(ours[1]!), /4324/)
  t.notMatch(textOf(ours[1]!), /8499/, 'turn 2 recalled for its own question, not from turn 1\'s recall in the history')
})

t.test('nothing matches, or an empty store: nothing is injected', async (t) => {
  const h = await bootWithFacts(t)
  h.script(reply('ok'))
  await h.turn('completely unrelated zebra question')
  t.equal(injected(h.adapter.requests[0]!).length, 0)
  const empty = await boot({ path: tempStorePath() }, [reply('ok')])
  t.teardown(() => empty.dispose())
  await empty.turn('billing 服务的端口是多少？')
  t.equal(injected(empty.adapter.requests[0]!).length, 0)
  t.match(await empty.ctx.stablemem.stats(), { injections: 0, recallFailures: 0 })
  const m = mutant({ file: 'plugin/render.ts', from: "text: shown === 0 ? '' : out", to: 'text: out' })
  t.teardown(() => m.remove())
  const bad = await boot({ path: tempStorePath() }, [reply('ok')], { module: await m.load<typeof plugin>('index.ts') })
  t.teardown(() => bad.dispose())
  await bad.turn('billing 服务的端口是多少？')
  t.equal(injected(bad.adapter.requests[0]!).length, 1, 'mutation: rendering a bare header injects an empty recall')
})

t.test('inject: false mounts tool and service but never injects', async (t) => {
  const h = await bootWithFacts(t, { inject: false })
  h.script(reply('ok'))
  await h.turn('billing 服务的端口是多少？')
  t.equal(injected(h.adapter.requests[0]!).length, 0)
  t.same(h.adapter.requests[0]!.tools?.map((x) => x.name), ['stablemem_commit', 'stablemem_recall'])
})

t.test('the injected message respects injectBudgetChars', async (t) => {
  const h = await boot({ path: tempStorePath(), injectBudgetChars: 500, topK: 10 }, [reply('ok')])
  t.teardown(() => h.dispose())
  for (let i = 0; i < 10; i++) await h.ctx.stablemem.commit({ text: `gateway 8443 note ${i}\n${'第'.repeat(60)}\n${'line\n'.repeat(20)}` })
  await h.turn('gateway 8443?')
  const text = textOf(injected(h.adapter.requests[0]!)[0]!)
  t.ok(text.length <= 500, `${text.length} ≤ 500`)
  t.match(text, /\[1\] blk_/, 'at least one note shown')
})

/** Runs one turn on a store that fails during recall, via `breakStore`. */
async function failingTurn(t: Test, breakStore: (h: Harness) => void, options: BootOptions = {}) {
  const path = tempStorePath()
  const h = await boot({ path }, [reply('answered without memory')], options)
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: 'billing 服务端口 8499' })
  breakStore(h)
  const agent = await h.turn('billing 服务的端口是多少？')
  return { h, agent, path }
}

/** Drops the FTS table from a second connection: the next recall hits an SQLite error. */
function dropIndex(h: Harness): void {
  const db = new DatabaseSync((h.ctx.stablemem as unknown as { storePath: string }).storePath)
  db.exec('DROP TABLE blocks_fts')
  db.close()
}

/** Closes the service's store under it. */
function closeStore(h: Harness): void {
  (h.ctx.stablemem as unknown as { guard: { store: { close(): void } } }).guard.store.close()
}

for (const [label, breakStore, logged] of [['throwing (index dropped)', dropIndex, /no such (fts5 )?table/]] as const) {
  t.test(`a ${label} store never breaks the turn: it completes, the failure is counted and logged`, async (t) => {
    const { h, agent } = await failingTurn(t, breakStore)
    t.same(h.errors, [])
    t.same(turnEnds(agent), ['completed'])
    t.equal(h.adapter.requests.length, 1, 'the model was still asked')
    t.equal(injected(h.adapter.requests[0]!).length, 0)
    t.equal((await h.ctx.stablemem.stats()).recallFailures, 1)
    t.equal((await h.ctx.stablemem.stats()).stages.errors.pre_action, 0, 'caught by the recall itself, not by the stage host')
    t.ok(h.logs.some((l) => l.name === 'stablemem' && l.type === 'warn' && /recall failed, turn continues without notes/.test(l.text) && logged.test(l.text)),
      `logged: ${JSON.stringify(h.logs.filter((l) => l.name === 'stablemem'))}`)
  })
}

t.test('a closed store turns memory off: the turn completes without recall and the context line says why', async (t) => {
  const { h, agent } = await failingTurn(t, closeStore)
  t.same(h.errors, [])
  t.same(turnEnds(agent), ['completed'])
  t.equal(h.adapter.requests.length, 1, 'the model was still asked')
  t.equal(injected(h.adapter.requests[0]!).length, 0)
  t.equal((await h.ctx.stablemem.stats()).recallFailures, 0, 'no recall was attempted, so none failed')
  t.ok(requestTexts(h.adapter.requests[0]!).some((x) => /Long-term memory \(dsh-stablemem\) is unavailable: store is closed/.test(x)), 'the model is told')
})

t.test('mutation: without the catch a failing recall is no recall failure (only the stage host contains it)', async (t) => {
  const m = mutant({ file: 'plugin/pre-step.ts', from: 'service.noteRecallFailure()', to: 'throw error' })
  t.teardown(() => m.remove())
  const { h, agent } = await failingTurn(t, dropIndex, { module: await m.load<typeof plugin>('index.ts') })
  t.same(turnEnds(agent), ['completed'], 'the stage host still keeps the turn alive')
  const stats = await h.ctx.stablemem.stats()
  t.equal(stats.recallFailures, 0, 'but the failure is not counted as a recall failure')
  t.equal(stats.stages.errors.pre_action, 1, 'only as a handler error')
})

/** Runs a turn where the budget shows only some of the matching notes; returns access counts of shown and hidden notes. */
async function accessAfterTurn(t: Test, options: BootOptions = {}): Promise<{ shown: number[], hidden: number[] }> {
  const h = await boot({ path: tempStorePath(), injectBudgetChars: 500, topK: 10 }, [reply('ok')], options)
  t.teardown(() => h.dispose())
  const ids: string[] = []
  for (let i = 0; i < 6; i++) ids.push((await h.ctx.stablemem.commit({ text: `gateway 8443 note ${i} ${'详细说明'.repeat(20)}` })).id)
  await h.turn('gateway 8443?')
  const text = textOf(injected(h.adapter.requests[0]!)[0]!)
  const shown: number[] = []
  const hidden: number[] = []
  for (const id of ids) ((text.includes(id) ? shown : hidden)).push((await h.ctx.stablemem.get(id))!.accessCount)
  return { shown, hidden }
}

t.test('only the notes the model is shown count as accessed', async (t) => {
  const { shown, hidden } = await accessAfterTurn(t)
  t.ok(shown.length >= 1 && hidden.length >= 1, `${shown.length} shown, ${hidden.length} cut by the budget`)
  t.ok(shown.every((n) => n === 1), 'shown notes: one access each')
  t.ok(hidden.every((n) => n === 0), 'notes cut by the budget: no access')
  const m = mutant({ file: 'plugin/pre-step.ts', from: 'recordAccess: false', to: 'recordAccess: true' })
  t.teardown(() => m.remove())
  const bad = await accessAfterTurn(t, { module: await m.load<typeof plugin>('index.ts') })
  t.ok(bad.hidden.some((n) => n > 0), 'mutation: recording on recall counts notes the model never saw')
})
