/**
 * The `ctx.stablemem` service as another plugin sees it (`inject: ['stablemem']`): typed
 * commit / recall / get / link / stats, refusals with codes, and closed on fiber dispose.
 */
import type { Context } from '@deepseek-ai/cordis'
import t from 'tap'
import * as plugin from '../../lib/index.ts'
import type { Block, CommitResult, Hit, ServiceStats, StableMem } from '../../lib/index.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { refusal } from '../helpers/refusal.ts'

/** A consumer plugin that keeps the service it was given. */
function consumer() {
  const seen: { service?: StableMem, disposed: boolean } = { disposed: false }
  return {
    seen,
    plugin: {
      name: 'stablemem-consumer',
      inject: ['stablemem'],
      apply(ctx: Context) {
        seen.service = ctx.stablemem
        ctx.effect(() => () => { seen.disposed = true })
      },
    },
  }
}

t.test('another plugin uses commit, recall, get, link and stats', async (t) => {
  const c = consumer()
  const path = tempStorePath()
  const h = await boot({ path }, [], { extra: [{ plugin: c.plugin }] })
  t.teardown(() => h.dispose())
  const mem = c.seen.service!
  t.ok(mem, 'injected')
  const first: CommitResult = await mem.commit({ text: 'redis 端口 6379，密码在 vault', source: 'ops', scene: 'infra' })
  t.same(first, { id: blockId('redis 端口 6379，密码在 vault'), created: true })
  const again: CommitResult = await mem.commit({ text: 'redis 端口 6379，密码在 vault' })
  t.equal(again.created, false)
  const second = await mem.commit({ text: 'redis 新端口 6380' })
  const hits: Hit[] = await mem.recall('redis 6379', { topK: 3 })
  t.equal(hits[0]!.id, first.id)
  t.match(hits[0]!, { text: 'redis 端口 6379，密码在 vault', exact: true, why: String })
  t.ok(hits[0]!.score >= 1, 'an exact numeric hit is pinned')
  t.ok((await mem.recall('redis', { topK: 1 })).length <= 1, 'topK respected')
  const block: Block | undefined = await mem.get(first.id)
  t.match(block, { source: 'ops', scene: 'infra', accessCount: 1 }, 'the recall counted as an access')
  t.equal(await mem.get(blockId('absent')), undefined)
  await mem.recall('redis 6379', { recordAccess: false })
  t.equal((await mem.get(first.id))!.accessCount, 1, 'recordAccess: false leaves the count alone')
  await mem.recordAccess([first.id])
  t.equal((await mem.get(first.id))!.accessCount, 2, 'recordAccess counts explicitly')
  t.same(await mem.link({ sourceKind: 'block', sourceId: second.id, targetKind: 'block', targetId: first.id, type: 'supersedes' }), { created: true })
  const stats: ServiceStats = await mem.stats()
  t.match(stats, { available: true, blocks: 2, edges: 1, path, recallFailures: 0, injections: 0 })
  t.match(await refusal(() => mem.commit({ text: '' })), { code: 'invalid_input', message: /text is empty/ })
  t.match(await refusal(() => mem.link({ sourceKind: 'block', sourceId: blockId('ghost'), targetKind: 'block', targetId: first.id, type: 'x' })), { code: 'not_found' })
  t.same(await mem.recall(''), [], 'an empty query recalls nothing')
})

t.test('recall refuses a query or topK of the wrong type, naming the field', async (t) => {
  const c = consumer()
  const h = await boot({ path: tempStorePath() }, [], { extra: [{ plugin: c.plugin }] })
  t.teardown(() => h.dispose())
  const mem = c.seen.service!
  await mem.commit({ text: '42 号机房' })
  t.match(await refusal(() => mem.recall(42 as unknown as string)), { code: 'invalid_input', message: 'query must be a string, not number 42' })
  t.match(await refusal(() => mem.recall(null as unknown as string)), { code: 'invalid_input', message: /not null/ })
  t.match(await refusal(() => mem.recall({ q: 1 } as unknown as string)), { code: 'invalid_input', message: /not an object/ })
  t.match(await refusal(() => mem.recall('42', { topK: '3' as unknown as number })), { code: 'invalid_input', message: /^topK must be a number .*not string/ })
  t.match(await refusal(() => mem.recall('42', { topK: Number.NaN })), { code: 'invalid_input', message: /topK/ })
  t.equal((await mem.recall('42 号机房', { topK: 500 })).length, 1, 'a number out of range is clamped, not refused')
})

t.test('mutation: without the type check, recall(42) silently recalls nothing', async (t) => {
  const m = mutant({ file: 'service/inputs.ts', from: "if (typeof query !== 'string') throw", to: 'if (false) throw' })
  t.teardown(() => m.remove())
  const c = consumer()
  const h = await boot({ path: tempStorePath() }, [], { module: await m.load<typeof plugin>('index.ts'), extra: [{ plugin: c.plugin }] })
  t.teardown(() => h.dispose())
  await c.seen.service!.commit({ text: '42 号机房' })
  t.same(await c.seen.service!.recall(42 as unknown as string), [])
})

t.test('the service is closed on fiber dispose: consumers are unloaded, calls refuse, stats say so', async (t) => {
  const c = consumer()
  const h = await boot({ path: tempStorePath() }, [], { extra: [{ plugin: c.plugin }] })
  t.teardown(() => h.ctx.fiber.dispose())
  const mem = c.seen.service!
  await mem.commit({ text: 'x 1' })
  await h.fiber.dispose()
  t.ok(c.seen.disposed, 'the consumer was unloaded with the service')
  t.equal(h.ctx.get('stablemem'), undefined, 'ctx.stablemem is gone')
  t.match(await refusal(() => mem.commit({ text: 'y' })), { code: 'unavailable', message: /store is closed/ })
  t.match(await refusal(() => mem.recall('x')), { code: 'unavailable' })
  t.match(await mem.stats(), { available: false, error: 'store is closed' })
})
