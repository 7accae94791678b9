/**
 * The scene card and the recall message never quote one convention twice in a request: once the
 * agent's requests are seen to carry the card, the notes it shows whole are left out of the
 * recall (docs/scenes.md, "The card and the recall"). Where the card does not arrive (suppressed
 * runtime context drops it), or cuts a note short, the recall keeps the convention. Mutations that drop
 * the filter or the delivery guard must turn these red.
 *
 * A note a recall message of the session already quoted is not quoted again while that message is
 * in the request (`lib/plugin/shown-notes.ts`), so the conventions these tests follow on later
 * turns are saved between turns: a note first recalled on a turn whose card has arrived.
 */
import { createUserMessage, type GenerateOptions, type UserMessage } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import { boot, injected, reply, tempStorePath, textOf, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const RULE = '回一群的消息不要用 Markdown'
/** A second convention of the group, saved after the first turn. */
const LATER = '一群里发链接要附一句说明'
const LEXICAL = '值班表放在运维 wiki 的首页'
const SCENE = 'chan:qq/group:group_1'

function qq(text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: 'qq', group: 'group_1' } })
}

/** The card snapshots of a request (runtime-context messages holding the card). */
function cardsIn(request: GenerateOptions): string[] {
  return request.messages.filter((m) => m.source.kind === 'plugin' && (m.source as { form?: string }).form === 'snapshot')
    .map(textOf).filter((text) => text.includes('Current situation:'))
}

/** Every recall message a request carries (this turn's and the earlier turns' still in it), joined. */
function recallsIn(request: GenerateOptions): string {
  return injected(request).map(textOf).join('\n')
}

/** Three turns in (qq, group_1), `LATER` saved after the first: each turn's own recall message and its request. */
async function threeTurns(h: Harness): Promise<Array<{ recall: string, request: GenerateOptions }>> {
  await h.ctx.stablemem.commit({ text: RULE, scene: SCENE })
  await h.ctx.stablemem.commit({ text: LEXICAL })
  const seen = new Set<string>()
  const out = []
  for (const text of ['今晚谁值班', '值班的人是谁', '明天谁值班']) {
    h.script(reply('ok'))
    await h.turn(qq(text), 'g1')
    if (out.length === 0) await h.ctx.stablemem.commit({ text: LATER, scene: SCENE })
    const request = h.adapter.requests.at(-1)!
    const fresh = injected(request).filter((m) => !seen.has(m.id))
    for (const m of injected(request)) seen.add(m.id)
    out.push({ recall: fresh.map(textOf).join('\n'), request })
  }
  t.same(h.errors, [])
  return out
}

async function withModule(edit?: { file: string, from: string, to: string }): Promise<{ options: BootOptions, remove: () => void }> {
  if (edit === undefined) return { options: {}, remove: () => {} }
  const m = mutant(edit)
  return { options: { module: await m.load('index.ts') }, remove: m.remove }
}

/** A deployment that turns runtime context off, which drops the card in `context` mode. */
const noRuntimeContext = {
  name: 'no-runtime-context',
  inject: ['systemPrompt'],
  apply(ctx: { systemPrompt: { suppressRuntimeContext(): void } }) {
    ctx.systemPrompt.suppressRuntimeContext()
  },
}

interface Teardown {
  teardown(fn: () => unknown): void
}

async function contextMode(t: Teardown, edit?: { file: string, from: string, to: string }) {
  const mod = await withModule(edit)
  t.teardown(mod.remove)
  const h = await boot({ path: tempStorePath('card-recall') }, [], mod.options)
  t.teardown(() => h.dispose())
  return await threeTurns(h)
}

async function suppressedMode(t: Teardown, edit?: { file: string, from: string, to: string }) {
  const mod = await withModule(edit)
  t.teardown(mod.remove)
  const h = await boot({ path: tempStorePath('card-recall-suppressed') }, [], { ...mod.options, extra: [{ plugin: noRuntimeContext }] })
  t.teardown(() => h.dispose())
  const turns = await threeTurns(h)
  return { turns, card: (await h.ctx.stablemem.stats()).scenes!.card }
}

const FILTER = { file: 'plugin/pre-step.ts', from: 'withoutCardNotes(found, service.scenes.cardNotes(agent, payload.turn))', to: 'found' }
const GUARD = { file: 'kernel/scenes/api.ts', from: 'card.turn === turn && this.delivered.get(id) === true', to: 'card.turn === turn' }

t.test('context mode: once the card is seen to arrive, the recall does not quote its convention again', async (t) => {
  const turns = await contextMode(t)
  t.match(turns[0]!.recall, RULE, 'first turn: the card\'s arrival is not known yet, the recall keeps the convention')
  t.match(turns[0]!.recall, LEXICAL, 'and brings the lexical note')
  for (const [i, turn] of turns.entries()) {
    t.match(cardsIn(turn.request).at(-1), RULE, `turn ${i + 1}: the card shows the convention`)
    t.match(recallsIn(turn.request), LEXICAL, `turn ${i + 1}: the request carries the lexical note (the first turn's recall message)`)
  }
  for (const i of [1, 2]) {
    t.match(cardsIn(turns[i]!.request).at(-1), LATER, `turn ${i + 1}: the card shows the convention saved after the first turn`)
    t.notMatch(recallsIn(turns[i]!.request), LATER, `turn ${i + 1}: the recall does not quote it`)
  }
})

t.test('without the filter the convention is quoted twice', async (t) => {
  const turns = await contextMode(t, FILTER)
  t.match(turns[1]!.recall, LATER)
  t.match(cardsIn(turns[1]!.request).at(-1), LATER)
})

t.test('suppressed runtime context drops the card: the recall keeps the convention on every turn', async (t) => {
  const { turns, card } = await suppressedMode(t)
  t.match(card, { mode: 'context', shown: 0 })
  t.match(turns[1]!.recall, LATER, 'the convention saved after the first turn is quoted on the next')
  for (const [i, turn] of turns.entries()) {
    t.same(cardsIn(turn.request), [], `turn ${i + 1}: no card`)
    t.match(recallsIn(turn.request), RULE, `turn ${i + 1}: the request carries the convention (the first turn's recall message)`)
    if (i > 0) t.match(recallsIn(turn.request), LATER, `turn ${i + 1}: and the later one`)
  }
})

t.test('without the delivery guard a dropped card loses the convention', async (t) => {
  const { turns } = await suppressedMode(t, GUARD)
  t.notMatch(recallsIn(turns[2]!.request), RULE)
})

async function cutNote(t: Teardown, edit?: { file: string, from: string, to: string }): Promise<{ card: string | undefined, recall: string }> {
  const mod = await withModule(edit)
  t.teardown(mod.remove)
  const h = await boot({ path: tempStorePath('card-recall-cut'), sceneCardChars: 160 }, [], mod.options)
  t.teardown(() => h.dispose())
  const long = `值班交接时要把未关闭的工单逐条念一遍，${'并说明负责人、截止时间和当前进度，'.repeat(4)}不能只发链接`
  // The card arrives on the first turn with a short convention; the long one is saved after it,
  // so the second turn's recall is the first to quote it.
  await h.ctx.stablemem.commit({ text: RULE, scene: SCENE })
  h.script(reply('ok'))
  await h.turn(qq('今晚谁值班'), 'g1')
  await h.ctx.stablemem.commit({ text: long, scene: SCENE })
  const before = new Set(injected(h.adapter.requests.at(-1)!).map((m) => m.id))
  h.script(reply('ok'))
  await h.turn(qq('值班的人是谁'), 'g1')
  const request = h.adapter.requests.at(-1)!
  return { card: cardsIn(request).at(-1), recall: injected(request).filter((m) => !before.has(m.id)).map(textOf).join('\n') }
}

t.test('a note the card cuts short stays in the recall', async (t) => {
  const r = await cutNote(t)
  t.match(r.card, /值班交接[^\n]*…/, 'the card cut the note')
  t.match(r.recall, '不能只发链接', 'the second turn\'s recall quotes it whole')
})

t.test('counting a cut note as shown loses its end', async (t) => {
  const r = await cutNote(t, { file: 'kernel/scenes/api.ts', from: 'whole: new Set(notes.slice(0, whole).map((n) => n.id))', to: 'whole: new Set(notes.map((n) => n.id))' })
  t.notMatch(r.recall, '不能只发链接')
})
