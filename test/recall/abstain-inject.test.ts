import t from 'tap'
import { ABSTAIN_QUALIFIER, renderAbstention } from '../../lib/plugin/render.ts'
import { boot, injected, reply, tempStorePath } from '../helpers/harness.ts'

function injectedText(h: Awaited<ReturnType<typeof boot>>, request: number): string {
  return injected(h.adapter.requests[request]!).flatMap((m) => m.content.map((b) => (b.type === 'text' ? b.text : ''))).join('')
}

t.test('a question about an absent port injects the abstention notice, not unrelated notes', async (t) => {
  const h = await boot({ path: tempStorePath() }, [reply('a'), reply('b')])
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: '本机 13010 端口给内部网关用' })
  await h.turn('本机 19999 端口是干什么的')
  const text = injectedText(h, 0)
  t.match(text, /has no record that directly corresponds to «19999»/)
  t.match(text, /it only mentions 本机, 端口 in general/)
  t.ok(text.includes(ABSTAIN_QUALIFIER), 'says only the store lacks it; trust the user')
  t.notMatch(text, /13010/, 'no unrelated note')
  // Mutation check: the same turn about a port the store holds injects the note instead.
  await h.turn('本机 13010 端口是干什么的')
  t.match(injectedText(h, 1), /> 本机 13010 端口给内部网关用/)
  t.same(h.errors, [])
})

t.test('both notice variants carry the qualifier and never claim the thing does not exist', async (t) => {
  const some = renderAbstention({ missing: ['19999'], mentioned: ['端口'] })
  const none = renderAbstention({ missing: ['v9.9.9'], mentioned: [] })
  t.match(none, /has no record related to «v9\.9\.9»\./)
  for (const text of [some, none]) {
    t.ok(text.endsWith(ABSTAIN_QUALIFIER))
    t.notMatch(text.replace(ABSTAIN_QUALIFIER, ''), /does not exist/)
  }
})
