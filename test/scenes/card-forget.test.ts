/**
 * A scene card never carries what was forgotten, nor a credential or hidden characters (issue 31,
 * capture and cooling): the card of a turn after `forget` is rendered from the notes still
 * attached, and a note written with a key after a prose label and zero-width characters shows
 * masked and visible-safe. Real agent loop, real store. Mutation check: a card cache that
 * ignores which notes it was rendered from keeps showing the forgotten convention.
 */
import { createUserMessage, type GenerateOptions, type UserMessage } from '@deepseek-ai/dsh-llm'
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { boot, reply, tempStorePath, textOf, type BootOptions } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const SCENE = 'chan:qq/group:group_1'
const RULE = '回一群的消息不要用 Markdown'
const OTHER = '一群里称呼大家为“各位”'
const KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Kd2Lm4T'
const SECRET = `aws 的 secret 是 ${KEY} 别外传\u200b，部署脚本在一群置顶`

function qq(text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: 'qq', group: 'group_1' } })
}

/** The card snapshots of a request (runtime-context messages holding the card). */
function cardsIn(request: GenerateOptions): string[] {
  return request.messages.filter((m) => m.source.kind === 'plugin' && (m.source as { form?: string }).form === 'snapshot')
    .map(textOf).filter((text) => text.includes('Current situation:'))
}

/** Two turns of one session in the scene, the convention forgotten between them; the last card of each request. */
async function forgetBetween(t: Test, options: BootOptions = {}): Promise<{ before: string, after: string }> {
  const h = await boot({ path: tempStorePath('card-forget') }, [], options)
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: RULE, scene: SCENE })
  await h.ctx.stablemem.commit({ text: OTHER, scene: SCENE })
  await h.ctx.stablemem.commit({ text: SECRET, scene: SCENE })
  h.script(reply('ok'), reply('ok'))
  await h.turn(qq('今晚谁值班'), 'g1')
  const before = cardsIn(h.adapter.requests.at(-1)!).at(-1) ?? ''
  const forgotten = await h.ctx.stablemem.forget(blockId(RULE))
  t.equal(forgotten.deleted.length, 1)
  await h.turn(qq('明天谁值班'), 'g1')
  const after = cardsIn(h.adapter.requests.at(-1)!).at(-1) ?? ''
  t.same(h.errors, [])
  return { before, after }
}

t.test('the card after a forget is rendered without the forgotten note; credentials and hidden characters never reach it', async (t) => {
  const { before, after } = await forgetBetween(t)
  t.match(before, RULE, 'before: the card shows the convention')
  t.match(after, OTHER, 'after: the card is rendered again from the notes still attached')
  t.notMatch(after, RULE, 'without the forgotten one')
  for (const card of [before, after]) {
    t.notMatch(card, KEY.slice(0, 12), 'the key is masked')
    t.notMatch(card, '\u200b', 'no zero-width character')
    t.match(card, '部署脚本在一群置顶', 'the rest of the note is shown')
  }
})

t.test('mutation check: a card cache that ignores its notes keeps the forgotten convention', async (t) => {
  const m = mutant({ file: 'kernel/scenes/api.ts', from: 'if (last?.from === from) {', to: 'if (last !== undefined) {' })
  t.teardown(() => m.remove())
  const { after } = await forgetBetween(t, { module: await m.load('index.ts') })
  t.match(after, RULE)
})
