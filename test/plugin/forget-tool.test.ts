/**
 * The optional forget tool as the model uses it: absent unless enabled; by id only; at most
 * `maxPerTurn` notes per turn (a new turn starts a new allowance); unknown ids reported; every
 * deletion logged with its session and turn. The two guards (off by default, the per-turn cap)
 * are mutation-checked.
 */
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import t, { type Test } from 'tap'
import type * as plugin from '../../lib/index.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { boot, reply, tempStorePath, toolCall, type BootOptions } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

function toolResults(request: GenerateOptions): Array<{ id: string, isError: boolean, text: string }> {
  return request.messages.flatMap((m) => m.content.flatMap((b) => b.type === 'tool-result'
    ? [{ id: String(b.toolCallId), isError: Boolean(b.isError), text: b.content.map((c) => (c.type === 'text' ? c.text : '')).join('') }]
    : []))
}

async function declaredTools(t: Test, config: Record<string, unknown>, options: BootOptions = {}): Promise<string[]> {
  const h = await boot({ path: tempStorePath(), ...config }, [reply('hi')], options)
  t.teardown(() => h.dispose())
  await h.turn('hello')
  return h.adapter.requests[0]!.tools!.map((x) => x.name)
}

t.test('off by default: the model has no way to delete', async (t) => {
  const tools = await declaredTools(t, {})
  t.ok(tools.includes('stablemem_commit'))
  t.notOk(tools.includes('stablemem_forget'))
  t.ok((await declaredTools(t, { forgetTool: { enabled: true, name: 'stablemem_forget', maxPerTurn: 3 } })).includes('stablemem_forget'), 'enabled, it is declared')
  const m = mutant({ file: 'plugin/model-tools.ts', from: 'if (config.forgetTool.enabled) ', to: '' })
  t.teardown(() => m.remove())
  t.ok((await declaredTools(t, {}, { module: await m.load<typeof plugin>('index.ts') })).includes('stablemem_forget'), 'mutation check: without the switch the default config declares it')
})

/** Two turns of one session against a store with four notes; the model tries to forget too much. */
async function greedyModel(t: Test, options: BootOptions = {}) {
  const notes = ['note one 1111', 'note two 2222', 'note three 3333', 'note four 4444']
  const [a, b, c, d] = notes.map(blockId) as [string, string, string, string]
  const unknown = blockId('never stored')
  const h = await boot({ path: tempStorePath(), forgetTool: { enabled: true, name: 'stablemem_forget', maxPerTurn: 2 } }, [
    toolCall('f1', 'stablemem_forget', { ids: [a, unknown] }),
    toolCall('f2', 'stablemem_forget', { ids: [b] }),
    toolCall('f3', 'stablemem_forget', { ids: [c] }),
    reply('done'),
    toolCall('f4', 'stablemem_forget', { ids: [c] }),
    reply('done again'),
  ], options)
  t.teardown(() => h.dispose())
  for (const text of notes) await h.ctx.stablemem.commit({ text })
  await h.turn('forget my notes', 's1')
  const first = Object.fromEntries(toolResults(h.adapter.requests[3]!).map((r) => [r.id, r]))
  await h.turn('and the third one', 's1')
  const second = Object.fromEntries(toolResults(h.adapter.requests.at(-1)!).map((r) => [r.id, r]))
  return { h, a, b, c, d, unknown, first, second }
}

t.test('by id, at most maxPerTurn per turn, unknown ids reported, each deletion logged with its turn', async (t) => {
  const { h, a, b, c, d, unknown, first, second } = await greedyModel(t)
  t.match(first.f1, { isError: false, text: `Forgot ${a}; they are deleted from long-term memory. Not in memory: ${unknown}.` })
  t.match(first.f2, { isError: false, text: `Forgot ${b};` })
  t.match(first.f3, { isError: true, text: /at most 2 notes per turn \(config forgetTool\.maxPerTurn\); 2 already forgotten in this turn, 1 asked/ })
  t.match(second.f4, { isError: false, text: `Forgot ${c};` }, 'a new turn has a new allowance')
  t.equal(await h.ctx.stablemem.get(a), undefined)
  t.equal(await h.ctx.stablemem.get(c), undefined)
  t.ok(await h.ctx.stablemem.get(d), 'the note nobody asked about stays')
  const lines = h.logs.filter((l) => l.text.includes('stablemem_forget:')).map((l) => l.text)
  t.equal(lines.length, 3)
  t.match(lines[0], new RegExp(`session s1 turn (\\d+) asked to forget ${a}, ${unknown}; deleted ${a}; not stored: ${unknown}`))
  const turnOf = (line: string) => Number(/turn (\d+)/.exec(line)![1])
  t.equal(turnOf(lines[0]!), turnOf(lines[1]!))
  t.ok(turnOf(lines[2]!) > turnOf(lines[1]!), 'the second turn is logged as another turn')
  t.same(h.errors, [])
})

t.test('mutation check: without the per-turn cap the model deletes past it', async (t) => {
  const m = mutant({ file: 'plugin/forget-tool.ts', from: 'if (used + ids.length > config.maxPerTurn) {', to: 'if (false) {' })
  t.teardown(() => m.remove())
  const { first } = await greedyModel(t, { module: await m.load<typeof plugin>('index.ts') })
  t.match(first.f3, { isError: false, text: /^Forgot / })
})
