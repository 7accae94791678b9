/**
 * The commit tool as the model uses it: declared schema, a stored block, the rendered result,
 * recall in a later session, and refusals that come back as tool errors while the agent goes on.
 */
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { boot, injected, reply, tempStorePath, textOf, toolCall } from '../helpers/harness.ts'

/** The tool results of one request: text and error flag, by call id. */
function toolResults(request: GenerateOptions): Array<{ id: string, isError: boolean, text: string }> {
  return request.messages.flatMap((m) => m.content.flatMap((b) => b.type === 'tool-result'
    ? [{ id: String(b.toolCallId), isError: Boolean(b.isError), text: b.content.map((c) => (c.type === 'text' ? c.text : '')).join('') }]
    : []))
}

t.test('the tool is declared with its parameters and output schema', async (t) => {
  const h = await boot({ path: tempStorePath() }, [reply('hi')])
  t.teardown(() => h.dispose())
  await h.turn('hello')
  const declared = h.adapter.requests[0]!.tools!.find((x) => x.name === 'stablemem_commit')!
  t.match(declared, { name: 'stablemem_commit', description: /long-term memory/ })
  t.match(declared.parameters, { type: 'object', properties: { text: { type: 'string' }, source: { type: 'string' }, scene: { type: 'string' } }, required: ['text'] })
  const definition = h.ctx.tools.get('stablemem_commit')!
  t.same(definition.output.schema, { type: 'object', properties: { id: { type: 'string' }, created: { type: 'boolean' }, restored: { type: 'string' }, redacted: { type: 'array', items: { type: 'string' } }, duplicateOf: { type: 'string' }, shared: { type: 'boolean' } }, additionalProperties: false })
  t.same(definition.output.render({}, { id: 'blk_x', created: true }), [{ type: 'text', text: 'Saved to long-term memory as blk_x.' }])
  t.same(definition.output.render({}, { id: 'blk_y', created: true, duplicateOf: 'blk_x' }),
    [{ type: 'text', text: 'Saved to long-term memory as blk_y. It nearly duplicates blk_x, which was already saved.' }])
})

t.test('a scripted tool call stores a block; a later turn in a new agent and session recalls it', async (t) => {
  const path = tempStorePath()
  const text = '测试环境 kafka broker 在 10.8.0.12:9092'
  const h = await boot({ path }, [
    toolCall('c1', 'stablemem_commit', { text, source: 'user', scene: 'chan:test' }),
    reply('记住了'),
    toolCall('c2', 'stablemem_commit', { text: `  ${text}\n` }),
    reply('早就记住了'),
    reply('9092'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('记住 kafka 地址', 'first')
  t.same(toolResults(h.adapter.requests[1]!), [{ id: 'c1', isError: false, text: `Saved to long-term memory as ${blockId(text)}.` }], 'the render the model reads')
  t.match(await h.ctx.stablemem.get(blockId(text)), { text, source: 'user', scene: 'chan:test' })
  await h.turn('再记一次', 'first')
  t.match(toolResults(h.adapter.requests[3]!).at(-1), { id: 'c2', isError: false, text: `Already in long-term memory as ${blockId(text)}.` })
  t.match(await h.ctx.stablemem.get(blockId(text)), { source: 'user', scene: 'chan:test' }, 're-saving without source/scene kept them')
  await h.turn('kafka broker 的地址是什么？', 'second')
  const last = h.adapter.requests.at(-1)!
  t.notOk(last.messages.some((m) => textOf(m).includes('记住 kafka 地址')), 'a new session: turn 1 is not in its history')
  t.match(textOf(injected(last)[0]!), new RegExp(`> ${text.replace(/\./g, '\\.')}`))
  t.same(h.errors, [])
})

t.test('refusals come back as tool errors with a clear message, and the agent keeps going', async (t) => {
  const h = await boot({ path: tempStorePath(), maxBlockChars: 64 }, [
    toolCall('c1', 'stablemem_commit', { text: '   ' }),
    toolCall('c2', 'stablemem_commit', { text: 'x'.repeat(65) }),
    toolCall('c3', 'stablemem_commit', { text: 'bad \uD800 surrogate' }),
    toolCall('c4', 'stablemem_commit', {}),
    toolCall('c5', 'stablemem_commit', { text: 'finally a fine note 7777' }),
    reply('done'),
  ])
  t.teardown(() => h.dispose())
  const agent = await h.turn('save things')
  t.same(h.errors, [])
  t.equal(h.adapter.requests.length, 6, 'every refusal was followed by another model call')
  const results = toolResults(h.adapter.requests.at(-1)!)
  const byId = Object.fromEntries(results.map((r) => [r.id, r]))
  t.match(byId.c1, { isError: true, text: /text is empty/ })
  t.match(byId.c2, { isError: true, text: /text has 65 characters; the limit is 64 \(config maxBlockChars\)/ })
  t.match(byId.c3, { isError: true, text: /unpaired UTF-16 surrogate/ })
  t.match(byId.c4, { isError: true, text: /text/ })
  t.match(byId.c5, { isError: false, text: /^Saved to long-term memory as blk_/ })
  t.equal((await h.ctx.stablemem.stats()).blocks, 1, 'only the fine note was stored')
  t.match(await h.ctx.stablemem.get(blockId('finally a fine note 7777')), { source: 'model' }, 'a new note saved without a source is marked as the model\'s')
  t.same(agent.session.events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind), ['completed'])
})
