/**
 * The scene card in the real agent loop: its text changes only when the scene does, so in
 * `section` mode a scene switch costs exactly one `request/header`, and in `context` mode none
 * (one runtime-context snapshot per switch instead); a complete persona drops it and `stats()`
 * says why.
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage, type UserMessage } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import { renderCard } from '../../lib/kernel/scenes/card-text.ts'
import { boot, reply, tempStorePath, textOf, type Harness } from '../helpers/harness.ts'

function qq(text: string, group: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: 'qq', group } })
}

const WORDS = ['天气', '值班', '午饭', '周报', '会议', '发布', '报销']

/** 20 turns in one session: 7 in group_1, 7 in group_2, 6 in group_1 (two switches). */
async function twentyTurns(h: Harness): Promise<Agent> {
  const memory = h.ctx.stablemem
  await memory.commit({ text: '回一群的消息不要用 Markdown', scene: 'chan:qq/group:group_1' })
  await memory.commit({ text: '二群只说英文', scene: 'chan:qq/group:group_2' })
  let agent: Agent | undefined
  for (let i = 0; i < 20; i++) {
    const group = i < 7 || i >= 14 ? 'group_1' : 'group_2'
    h.script(reply('ok'))
    agent = await h.turn(qq(`${WORDS[i % WORDS.length]}怎么安排`, group), 'bridge')
  }
  return agent!
}

function events(agent: Agent, type: string) {
  return (agent.session.events as ReadonlyArray<{ type: string, data: unknown }>).filter((e) => e.type === type)
}

t.test('section mode: 3 request headers over 20 turns with 2 switches; identical system text between switches', async (t) => {
  const h = await boot({ path: tempStorePath('card-section'), sceneCard: 'section' })
  t.teardown(() => h.dispose())
  const agent = await twentyTurns(h)
  t.same(h.errors, [])
  t.equal(events(agent, 'request/header').length, 3)
  const systems = h.adapter.requests.map((r) => r.system ?? '')
  t.equal(new Set(systems.slice(0, 7)).size, 1)
  t.equal(new Set(systems.slice(7, 14)).size, 1)
  t.equal(systems[0], systems[14], 'back in group_1: the same text as before')
  t.match(systems[0], /Markdown/)
  t.match(systems[7], /英文/)
  t.ok(systems[0]!.trimEnd().endsWith('回一群的消息不要用 Markdown'), 'the card is the last section')
  t.match((await h.ctx.stablemem.stats()).scenes?.card, { mode: 'section', shown: 20, suppressed: 0 })
})

t.test('context mode: 1 request header and 3 card snapshots', async (t) => {
  const h = await boot({ path: tempStorePath('card-context') })
  t.teardown(() => h.dispose())
  const agent = await twentyTurns(h)
  t.equal(events(agent, 'request/header').length, 1)
  const snapshots = h.adapter.requests.at(-1)!.messages.filter((m) => m.source.kind === 'plugin' && (m.source as { form?: string }).form === 'snapshot')
  const cards = snapshots.map(textOf).filter((text) => text.includes('Current situation:'))
  t.equal(cards.length, 3)
  t.notOk(h.adapter.requests.some((r) => (r.system ?? '').includes('Current situation')), 'never in the system prompt')
})

t.test('a complete persona gets no card, and stats() says why', async (t) => {
  const persona = {
    name: 'complete-persona',
    inject: ['systemPrompt'],
    apply(ctx: { systemPrompt: { section(s: object): void } }) {
      ctx.systemPrompt.section({ name: 'test:complete', order: 0, text: 'You are a terse bot.', complete: true })
    },
  }
  const h = await boot({ path: tempStorePath('card-complete'), sceneCard: 'section' }, [], { extra: [{ plugin: persona }] })
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: '回一群的消息不要用 Markdown', scene: 'chan:qq/group:group_1' })
  h.script(reply('ok'))
  await h.turn(qq('天气怎么样', 'group_1'), 'p1')
  t.equal(h.adapter.requests[0]!.system, 'You are a terse bot.')
  const card = (await h.ctx.stablemem.stats()).scenes!.card
  t.match(card, { mode: 'section', shown: 0, suppressed: 1 })
  t.match(card.reason, /complete persona/)
})

t.test('the card keeps its budget and says nothing without notes', async (t) => {
  t.same(renderCard('chan:qq', [], 600), { text: '', whole: 0 })
  const { text, whole } = renderCard('chan:qq', ['规则'.repeat(400), '第二条'], 300)
  t.ok(text.length <= 300)
  t.equal(whole, 0, 'the cut note is not shown whole')
  t.match(text, /^Current situation: chan:qq\./)
})
