/**
 * The per-turn recall reads a follow-up question with the earlier human messages of its
 * session (`lib/plugin/conversation-memory.ts`), through the real agent loop on real batches.
 * Mutation check: a pre-step that forgets the conversation injects nothing for the follow-up.
 */
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { ConversationMemory, MAX_AGENTS } from '../../lib/plugin/conversation-memory.ts'
import { EARLIER_MESSAGES } from '../../lib/recall/conversation.ts'
import { boot, injected, reply, tempStorePath, textOf, type BootOptions } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const TRIP = '黄山团建定在十月第二周，住在山脚的温泉酒店。'
const FACTS = [TRIP, '周会改到每周三下午三点。', 'billing 服务端口 8499，部署在 10.3.7.9', '值班室分机号 4324，值班人 老周']

/** Two turns: a remark about the trip, then a follow-up; what the follow-up's request carries from us. */
async function followUp(t: Test, options: BootOptions = {}, secondSession = 'same'): Promise<string> {
  const h = await boot({ path: tempStorePath() }, [], options)
  t.teardown(() => h.dispose())
  for (const text of FACTS.slice(1)) await h.ctx.stablemem.commit({ text })
  h.script(reply('好的'), reply('定了'))
  await h.turn('下周我们团队去黄山团建', 'same')
  // Saved between the turns (another session): the first message would inject it itself, and a
  // note the conversation already shows is not quoted again (test/plugin/repeats.test.ts).
  await h.ctx.stablemem.commit({ text: TRIP })
  await h.turn('那住哪里定了吗？', secondSession)
  t.same(h.errors, [])
  t.equal(injected(h.adapter.requests[0]!).length, 0, 'the first message finds nothing')
  return injected(h.adapter.requests[1]!).map(textOf).join('\n')
}

t.test('a follow-up question gets the note its conversation is about', async (t) => {
  t.match(await followUp(t), TRIP, 'the trip note reaches the model on the follow-up turn')
  t.equal(await followUp(t, {}, 'other'), '', 'another session does not share the conversation')
  const m = mutant({ file: 'plugin/pre-step.ts', from: 'const earlier = [...conversations.earlier(agent), ...said.slice(0, -1)]', to: 'const earlier: string[] = []' })
  t.teardown(() => m.remove())
  t.equal(await followUp(t, { module: await m.load<typeof plugin>('index.ts') }), '', 'the mutant that forgets the conversation injects nothing')
})

t.test('the memory keeps the last messages of the most recently active agents', async (t) => {
  const memory = new ConversationMemory()
  memory.remember('a', ['一', '二'])
  memory.remember('a', Array.from({ length: EARLIER_MESSAGES }, (_, i) => `m${i}`))
  t.same(memory.earlier('a'), Array.from({ length: EARLIER_MESSAGES }, (_, i) => `m${i}`), `the last ${EARLIER_MESSAGES}, oldest first`)
  for (let i = 0; i < MAX_AGENTS; i++) memory.remember(`agent-${i}`, ['x'])
  t.same(memory.earlier('a'), [], 'the least recently active agent is forgotten first')
  t.same(memory.earlier(`agent-${MAX_AGENTS - 1}`), ['x'])
  memory.remember('agent-0', ['y'])
  memory.remember('new', ['z'])
  t.same(memory.earlier('agent-0'), ['x', 'y'], 'an agent that spoke again is kept')
  t.same(memory.earlier('agent-1'), [], 'the oldest one goes')
})

t.test('mutation checks: without either bound the conversation memory grows', async (t) => {
  /** How many messages `Memory` keeps of one agent's 2 × EARLIER_MESSAGES, and whether the first of MAX_AGENTS + 1 agents is still kept. */
  const measure = (Memory: typeof ConversationMemory): { messages: number, firstKept: boolean } => {
    const memory = new Memory()
    memory.remember('a', Array.from({ length: 2 * EARLIER_MESSAGES }, (_, i) => `m${i}`))
    const messages = memory.earlier('a').length
    for (let i = 0; i < MAX_AGENTS; i++) memory.remember(`agent-${i}`, ['x'])
    return { messages, firstKept: memory.earlier('a').length > 0 }
  }
  t.same(measure(ConversationMemory), { messages: EARLIER_MESSAGES, firstKept: false }, 'the real memory keeps both bounds')
  const messages = mutant({ file: 'plugin/conversation-memory.ts', from: '.slice(-EARLIER_MESSAGES)', to: '' })
  t.teardown(() => messages.remove())
  const { ConversationMemory: Unbounded } = await messages.load<typeof import('../../lib/plugin/conversation-memory.ts')>('plugin/conversation-memory.ts')
  t.equal(measure(Unbounded).messages, 2 * EARLIER_MESSAGES, 'without the message bound every message is kept')
  const agents = mutant({ file: 'plugin/conversation-memory.ts', from: 'if (this.#byAgent.size >= MAX_AGENTS)', to: 'if (false)' })
  t.teardown(() => agents.remove())
  const { ConversationMemory: Unforgetting } = await agents.load<typeof import('../../lib/plugin/conversation-memory.ts')>('plugin/conversation-memory.ts')
  t.ok(measure(Unforgetting).firstKept, 'without the agent bound no agent is forgotten')
})
