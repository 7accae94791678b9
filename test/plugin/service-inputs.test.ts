/**
 * Every public method of `ctx.stablemem` checks its input and refuses a wrong one with a
 * `StableMemError` naming the field, never a raw `TypeError` from deep inside: plugins are
 * written in JavaScript too, and a refusal is the only error they are told to expect.
 */
import t from 'tap'
import type { StableMem } from '../../lib/index.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { refusal } from '../helpers/refusal.ts'
import type * as PluginModule from '../../lib/index.ts'

/** Wrong inputs, each with the field its refusal must name. */
function cases(mem: StableMem): Array<[string, () => unknown, RegExp]> {
  const any = mem as unknown as Record<string, (...args: unknown[]) => unknown>
  return [
    ['recall(q, null)', () => any.recall!('x', null), /^options must be an object, not null$/],
    ['recall(q, 5)', () => any.recall!('x', 5), /^options must be an object, not number 5$/],
    ['recall(q, {recordAccess: "yes"})', () => any.recall!('x', { recordAccess: 'yes' }), /^recordAccess must be a boolean, not string$/],
    ['recall(42)', () => any.recall!(42), /^query must be a string, not number 42$/],
    ['recall(q, {earlier: "x"})', () => any.recall!('x', { earlier: 'x' }), /^earlier must be an array of message texts$/],
    ['recall(q, {earlier: [1]})', () => any.recall!('x', { earlier: [1] }), /^earlier must be an array of message texts$/],
    ['recordAccess(null)', () => any.recordAccess!(null), /^ids must be an array of block ids, not null$/],
    ['recordAccess("blk")', () => any.recordAccess!('blk_x'), /^ids must be an array of block ids, not string$/],
    ['recordAccess([{}])', () => any.recordAccess!([{}]), /^ids\[0\] must be a block id string, not an object$/],
    ['recordAccess(["a", 3])', () => any.recordAccess!(['blk_a', 3]), /^ids\[1\] must be a block id string, not number 3$/],
    ['get(null)', () => any.get!(null), /^id must be a string, not null$/],
    ['get({})', () => any.get!({}), /^id must be a string, not an object$/],
    ['commit(null)', () => any.commit!(null), /^input must be an object with a text field$/],
    ['commit({text: 1})', () => any.commit!({ text: 1 }), /^text must be a string$/],
    ['commit({text, scene: 3})', () => any.commit!({ text: 'a', scene: 3 }), /^scene must be a string$/],
    ['link(null)', () => any.link!(null), /^edge must be an object$/],
    ['link({})', () => any.link!({}), /^sourceKind must be a string$/],
  ]
}

async function refusals(module?: typeof PluginModule): Promise<Array<[string, unknown]>> {
  const h = await boot({ path: tempStorePath() }, [], { module })
  try {
    const out: Array<[string, unknown]> = []
    for (const [name, call] of cases(h.ctx.stablemem)) out.push([name, await refusal(call)])
    return out
  } finally {
    await h.dispose()
  }
}

t.test('wrong inputs to every public method are refused with a StableMemError naming the field', async (t) => {
  const h = await boot({ path: tempStorePath() })
  t.teardown(() => h.dispose())
  const expected = cases(h.ctx.stablemem)
  for (const [i, [name, result]] of (await refusals()).entries()) {
    t.match(result, { code: 'invalid_input', message: expected[i]![2] }, name)
  }
})

t.test('mutation: without the option checks, recall(q, null) and recordAccess([{}]) throw raw errors', async (t) => {
  const m = mutant(
    { file: 'service/inputs.ts', from: "  if (options === null || typeof options !== 'object') throw", to: '  if (false) throw' },
    { file: 'service/inputs.ts', from: "    if (typeof id !== 'string') throw", to: '    if (false) throw' },
  )
  t.teardown(() => m.remove())
  const results = new Map(await refusals(await m.load<typeof PluginModule>('index.ts')))
  t.match(results.get('recall(q, null)'), /^threw a non-StableMemError: TypeError/)
  t.notMatch(JSON.stringify(results.get('recordAccess([{}])')), /ids\[0\]/, 'the bad id is not named')
})
