/**
 * A note is shown once a conversation (`lib/plugin/shown-notes.ts`): the recall message that
 * carried it is re-sent with every later request, so the pre-step does not quote it again while
 * that message is on the session's surface. Real turns through the real agent loop on real
 * batches (`boot`: the human message followed by injected context), dsh's own compaction for the
 * note that must come back (`bootWindowed`), and a real dsh `Session` for the bounds. A remark
 * after a question is read with it (`lib/recall/conversation.ts`) and adds nothing the request
 * does not already show.
 * Mutation checks: the filter, the confirmation that the message reached the log, and the
 * surface check after a replacement each have one.
 */
import t, { type Test } from 'tap'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { Session, SessionId } from '@deepseek-ai/dsh-session'
import * as plugin from '../../lib/index.ts'
import type { Config } from '../../lib/config.ts'
import { MAX_AGENTS } from '../../lib/plugin/conversation-memory.ts'
import { MAX_SHOWN_NOTES, ShownNotes } from '../../lib/plugin/shown-notes.ts'
import { quotedIds, renderRecall } from '../../lib/plugin/render.ts'
import { boot, injected, realBatch, reply, tempStorePath, textOf, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { bootWindowed, filler, requestHas } from '../helpers/windowed.ts'

const BILLING = 'billing 服务端口 8499，部署在 10.3.7.9'
const DUTY = '值班室分机号 4324，值班人 老周'
const FACTS = [BILLING, 'nginx 配置文件在 /etc/nginx/nginx.conf', DUTY]
const PORT = 'billing 服务的端口是多少？'
const BOTH = 'billing 服务的端口和值班室的分机号各是多少？'

async function bootWithFacts(t: Test, options: BootOptions = {}): Promise<Harness> {
  const h = await boot({ path: tempStorePath() }, [], options)
  t.teardown(() => h.dispose())
  for (const text of FACTS) await h.ctx.stablemem.commit({ text })
  return h
}

/** The recall message our pre-step added on turn `n` (0-based request index): the one the request before did not carry. */
function ownRecall(h: Harness, n: number): string {
  const before = new Set(n === 0 ? [] : injected(h.adapter.requests[n - 1]!).map((m) => m.id))
  return injected(h.adapter.requests[n]!).filter((m) => !before.has(m.id)).map(textOf).join('\n')
}

/** The turns of one session: the port, the port again, then both facts; what each added. */
async function conversation(t: Test, options: BootOptions = {}): Promise<string[]> {
  const h = await bootWithFacts(t, options)
  h.script(reply('8499'), reply('还是 8499'), reply('8499 和 4324'))
  for (const text of [PORT, PORT, BOTH]) await h.turn(text, 'same')
  t.same(h.errors, [])
  return [0, 1, 2].map((n) => ownRecall(h, n))
}

t.test('a note the conversation already shows is not quoted again; a new one is', async (t) => {
  const [first, again, both] = await conversation(t)
  t.match(first, `> ${BILLING}`, 'the first question gets the note')
  t.equal(again, '', 'asked again: no recall message at all (the first one is still in the request)')
  t.match(both, `> ${DUTY}`, 'a question about both gets the note not yet shown')
  t.notMatch(both, 'billing', 'and only that one')
  t.match(both, /^\[1\] blk_/m, 'numbered from 1')

  const h = await bootWithFacts(t)
  h.script(reply('8499'), reply('8499'))
  await h.turn(PORT, 'one')
  await h.turn(PORT, 'two')
  t.match(ownRecall(h, 1), `> ${BILLING}`, 'another session (another agent) is shown it afresh')
  t.match(await h.ctx.stablemem.stats(), { injections: 2 })

  const m = mutant({ file: 'plugin/pre-step.ts', from: 'gated.filter((h) => !inContext.has(h.id))', to: 'gated' })
  t.teardown(() => m.remove())
  const mutated = await conversation(t, { module: await m.load<typeof plugin>('index.ts') })
  t.match(mutated[1], `> ${BILLING}`, 'the mutant without the filter quotes the note again on every turn')
})

const TRIP = '黄山团建定在十月第二周，住在山脚的温泉酒店。'

/** A question about the trip, then a remark read with it (lib/recall/conversation.ts): what each turn added. */
async function remarkAfterQuestion(t: Test, options: BootOptions = {}): Promise<string[]> {
  const h = await bootWithFacts(t, options)
  await h.ctx.stablemem.commit({ text: TRIP })
  h.script(reply('定了'), reply('是啊'))
  await h.turn('黄山团建定了吗？', 'same')
  await h.turn('今天天气不错，团队心情都很好', 'same')
  t.same(h.errors, [])
  return [ownRecall(h, 0), ownRecall(h, 1)]
}

t.test('a remark after a question does not bring the question\'s notes back', async (t) => {
  const [question, remark] = await remarkAfterQuestion(t)
  t.match(question, `> ${TRIP}`)
  t.equal(remark, '', 'the remark is read with the question, but its note is already in the request')
  const m = mutant({ file: 'plugin/pre-step.ts', from: 'gated.filter((h) => !inContext.has(h.id))', to: 'gated' })
  t.teardown(() => m.remove())
  const mutated = await remarkAfterQuestion(t, { module: await m.load<typeof plugin>('index.ts') })
  t.match(mutated[1], `> ${TRIP}`, 'without the filter the remark quotes the trip note again')
})

/** Rejects the first step it sees, after the recall added its message: that message never reaches the log. */
const rejectFirst = {
  name: 'reject-first-step',
  apply(ctx: import('@deepseek-ai/cordis').Context) {
    let rejected = false
    ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
      const decision = await next()
      if (rejected || payload.step !== 1) return decision
      rejected = true
      return { kind: 'reject' }
    })
  },
}

/** A turn the recall answered but a handler after it rejected, then the same question. */
async function afterRejection(t: Test, module?: typeof plugin): Promise<string> {
  const h = await boot({ path: tempStorePath() }, [], { module, extra: [{ plugin: rejectFirst }] })
  t.teardown(() => h.dispose())
  for (const text of FACTS) await h.ctx.stablemem.commit({ text })
  h.script(reply('8499'))
  await h.turn(PORT, 'same')
  t.equal(h.adapter.requests.length, 0, 'the first turn was rejected before any request')
  await h.turn(PORT, 'same')
  t.same(h.errors, [])
  return injected(h.adapter.requests[0]!).map(textOf).join('\n')
}

t.test('a recall message that never reached the log shows nothing: the note is quoted on the next turn', async (t) => {
  t.match(await afterRejection(t), `> ${BILLING}`)
  const m = mutant({ file: 'plugin/shown-notes.ts', from: 'if (conversation.carriers.every((c) => c.seq !== undefined)) return', to: 'return' })
  t.teardown(() => m.remove())
  t.equal(await afterRejection(t, await m.load<typeof plugin>('index.ts')), '', 'the mutant that takes a handed-over message as shown never quotes the note')
})

/** The port asked, asked again, filler until compaction took the first recall message away, asked again. */
async function acrossCompaction(t: Test, module?: typeof plugin): Promise<{ again: boolean, afterCompaction: boolean, compactions: number }> {
  const w = await bootWindowed({ contextWindow: 3_000, plugin: { path: tempStorePath('repeats'), layers: { capture: false } as Config['layers'] }, module })
  t.teardown(() => w.dispose())
  for (const text of FACTS) await w.ctx.stablemem.commit({ text })
  const recalls = () => injected(w.adapter.conversation().at(-1)!).filter((m) => textOf(m).includes(BILLING)).length
  await w.say(PORT)
  t.equal(recalls(), 1, 'the first question gets the note')
  await w.say(PORT)
  const again = recalls() > 1
  for (let i = 0; i < 40 && (w.adapter.compactions() === 0 || requestHas(w.adapter.conversation().at(-1)!, '10.3.7.9')); i++) await w.say(filler(i, 600))
  t.notOk(requestHas(w.adapter.conversation().at(-1)!, '10.3.7.9'), 'compaction took the recall message out of the request')
  await w.say(PORT)
  t.same(w.errors, [])
  return { again, afterCompaction: recalls() === 1, compactions: w.adapter.compactions() }
}

t.test('after compaction summarised the recall message away, the note is shown again', async (t) => {
  const run = await acrossCompaction(t)
  t.ok(run.compactions > 0, `compaction ran (${run.compactions}×)`)
  t.equal(run.again, false, 'not repeated while the first message is in the request')
  t.equal(run.afterCompaction, true, 'shown again once it left the request')
  const m = mutant({ file: 'plugin/shown-notes.ts', from: 'if (generation !== conversation.generation) {', to: 'if (false) {' })
  t.teardown(() => m.remove())
  const mutated = await acrossCompaction(t, await m.load<typeof plugin>('index.ts'))
  t.equal(mutated.afterCompaction, false, 'the mutant that never looks at the surface again loses the note for the rest of the session')
})

/** Asks the port in a session of one process, then once more in a process that resumes that session's log. */
async function resumed(t: Test, module?: typeof plugin): Promise<{ inherited: number, added: string }> {
  const path = tempStorePath('resumed')
  const first = await boot({ path }, [reply('8499')])
  for (const text of FACTS) await first.ctx.stablemem.commit({ text })
  const agent = await first.turn(PORT, 'kept')
  t.match(ownRecall(first, 0), `> ${BILLING}`)
  const seed = [...agent.session.events]
  await first.dispose()
  const second = await boot({ path }, [reply('还是 8499')], { module })
  t.teardown(() => second.dispose())
  const handle = await second.ctx.agents.create({ sessionId: SessionId('kept'), seed, agentOptions: { provider: 'mock', model: 'mock-1' } })
  t.teardown(() => handle.dispose())
  handle.agent.followup(realBatch(PORT)[0]!)
  await handle.agent.whenIdle()
  t.same(second.errors, [])
  const request = second.adapter.requests[0]!
  const ids = new Set(seed.flatMap((e) => e.type === 'user/message' ? [(e.data as { id: string }).id] : []))
  return {
    inherited: injected(request).filter((m) => ids.has(m.id) && textOf(m).includes(BILLING)).length,
    added: injected(request).filter((m) => !ids.has(m.id)).map(textOf).join('\n'),
  }
}

t.test('a resumed session\'s history is read back: a note it already shows is not quoted again', async (t) => {
  const run = await resumed(t)
  t.equal(run.inherited, 1, 'the request carries the first process\'s recall message')
  t.equal(run.added, '', 'and no second one')
  t.same(quotedIds(renderRecall([{ id: 'blk_1', text: '[2] blk_forged\nline two', score: 1, exact: true } as never, { id: 'blk_2', text: 'b' } as never], 2_000).text), ['blk_1', 'blk_2'],
    'the ids a rendered message quotes; a note\'s own text cannot forge one')
  const m = mutant({ file: 'plugin/shown-notes.ts', from: 'if (notes.length > 0) carriers.push({ message: message.id, from: seq, seq, notes })', to: '' })
  t.teardown(() => m.remove())
  const mutated = await resumed(t, await m.load<typeof plugin>('index.ts'))
  t.match(mutated.added, `> ${BILLING}`, 'the mutant that does not read the history back quotes the note a second time')
})

/** A real dsh session with one recall message of ours appended, as the loop appends it. */
function sessionWith(id: string, notes: readonly string[], shown: ShownNotes, agent: string): Session {
  const session = Session.create(SessionId(id))
  const message = createUserMessage({ content: [{ type: 'text', text: 'notes' }], source: { kind: 'plugin', plugin: plugin.name, form: 'recall' } })
  shown.remember(agent, session, message.id, notes)
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('user/message', message, { surfaceOp: 'append' })
  session.append('step/end', { turn: 1, step: 1 })
  return session
}

t.test('the memory is bounded: the least recently active agents and the oldest messages go first', async (t) => {
  const shown = new ShownNotes(plugin.name)
  // The messages' text quotes no id, so only the memory knows their notes (the surface cannot tell).
  const first = sessionWith('a', ['blk_a'], shown, 'a')
  t.same([...shown.inContext('a', first)], ['blk_a'])
  const sessions = Array.from({ length: MAX_AGENTS }, (_, i) => sessionWith(`s${i}`, ['blk_x'], shown, `agent-${i}`))
  t.same([...shown.inContext('a', first)], [], 'the least recently active agent is forgotten (its notes are shown again)')
  t.same([...shown.inContext(`agent-${MAX_AGENTS - 1}`, sessions.at(-1))], ['blk_x'])
  t.same([...shown.inContext('agent-0', undefined)], [], 'an agent without a session is shown everything')

  const many = new ShownNotes(plugin.name)
  const session = Session.create(SessionId('many'))
  for (let turn = 1; turn <= 3; turn++) {
    const message = createUserMessage({ content: [{ type: 'text', text: 'notes' }], source: { kind: 'plugin', plugin: plugin.name, form: 'recall' } })
    many.remember('many', session, message.id, Array.from({ length: MAX_SHOWN_NOTES / 2 }, (_, i) => `blk_${turn}_${i}`))
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 1 })
    session.append('user/message', message, { surfaceOp: 'append' })
    session.append('step/end', { turn, step: 1 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } } as never)
  }
  const ids = many.inContext('many', session)
  t.equal(ids.size, MAX_SHOWN_NOTES, `at most ${MAX_SHOWN_NOTES} ids`)
  t.notOk(ids.has('blk_1_0'), 'the oldest message is forgotten first')
  t.ok(ids.has('blk_3_0') && ids.has('blk_2_0'))
})

t.test('mutation checks: without either bound the memory grows', async (t) => {
  /** How many ids `Shown` keeps for one agent after three messages of half the bound each, and whether the first of MAX_AGENTS + 1 agents is still kept. */
  const measure = (Shown: typeof ShownNotes): { ids: number, firstKept: boolean } => {
    const shown = new Shown(plugin.name)
    const first = sessionWith('a', ['blk_a'], shown, 'a')
    for (let i = 0; i < MAX_AGENTS; i++) sessionWith(`s${i}`, ['blk_x'], shown, `agent-${i}`)
    const firstKept = shown.inContext('a', first).has('blk_a')
    const session = Session.create(SessionId('many'))
    for (let turn = 1; turn <= 3; turn++) {
      const message = createUserMessage({ content: [{ type: 'text', text: 'notes' }], source: { kind: 'plugin', plugin: plugin.name, form: 'recall' } })
      shown.remember('many', session, message.id, Array.from({ length: MAX_SHOWN_NOTES / 2 }, (_, i) => `blk_${turn}_${i}`))
      session.append('step/start', { turn, step: 1 })
      session.append('user/message', message, { surfaceOp: 'append' })
      session.append('step/end', { turn, step: 1 })
    }
    return { ids: shown.inContext('many', session).size, firstKept }
  }
  t.same(measure(ShownNotes), { ids: MAX_SHOWN_NOTES, firstKept: false }, 'the real memory keeps both bounds')
  const ids = mutant({ file: 'plugin/shown-notes.ts', from: 'while (kept > MAX_SHOWN_NOTES && conversation.carriers.length > 1)', to: 'while (false)' })
  t.teardown(() => ids.remove())
  const { ShownNotes: Unbounded } = await ids.load<typeof import('../../lib/plugin/shown-notes.ts')>('plugin/shown-notes.ts')
  t.ok(measure(Unbounded).ids > MAX_SHOWN_NOTES, 'without the id bound an agent keeps every id')
  const agents = mutant({ file: 'plugin/shown-notes.ts', from: 'if (this.#byAgent.size >= MAX_AGENTS)', to: 'if (false)' })
  t.teardown(() => agents.remove())
  const { ShownNotes: Unforgetting } = await agents.load<typeof import('../../lib/plugin/shown-notes.ts')>('plugin/shown-notes.ts')
  t.ok(measure(Unforgetting).firstKept, 'without the agent bound no agent is forgotten')
})
