/**
 * `untraced` gives the plugin's per-turn paths the memory service object itself rather than
 * cordis's tracing proxy (lib/plugin/untraced.ts): the same object however it was reached, no
 * proxy, and a value without one comes back unchanged.
 */
import { types } from 'node:util'
import t from 'tap'
import { StableMem } from '../../lib/index.ts'
import { untraced } from '../../lib/plugin/untraced.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'

t.test('the service behind ctx.stablemem, with every tracing proxy removed', async (t) => {
  const h = await boot({ path: tempStorePath('untraced') })
  t.teardown(() => h.dispose())
  t.ok(types.isProxy(h.ctx.stablemem), 'ctx.stablemem is a cordis proxy')
  const raw = untraced(h.ctx.stablemem)
  t.notOk(types.isProxy(raw), 'untraced is not')
  t.ok(raw instanceof StableMem)
  t.equal(untraced(h.ctx.stablemem), raw, 'the same object on every lookup')
  t.equal(raw.blockCount(), h.ctx.stablemem.blockCount(), 'and it answers as the traced service does')
  const plain = { a: 1 }
  t.equal(untraced(plain), plain, 'a value without a proxy comes back unchanged')
})
