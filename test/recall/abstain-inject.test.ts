import t from 'tap'
import { ABSTAIN_QUALIFIER, renderAbstention } from '../../lib/plugin/render.ts'
import * as plugin from '../../lib/index.ts'
import { isQuestion } from '../../lib/text/question.ts'
import { boot, injected, reply, tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

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

t.test('a question about a port one typo from a stored one names it as a question, without the note', async (t) => {
  const h = await boot({ path: tempStorePath() }, [reply('a')])
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: '本机 13010 端口给内部网关用' })
  await h.turn('本机 13001 端口是干什么的？')
  const text = injectedText(h, 0)
  t.match(text, /no record that directly corresponds to «13001» .* It does hold «13010», one typo away: if the user may have meant that, ask them before using it\./)
  t.notMatch(text, /内部网关/, 'the note itself is not injected')
})

t.test('both notice variants carry the qualifier and never claim the thing does not exist', async (t) => {
  const some = renderAbstention({ missing: ['19999'], mentioned: ['端口'], near: [] })
  const none = renderAbstention({ missing: ['v9.9.9'], mentioned: [], near: [] })
  const typo = renderAbstention({ missing: ['8494'], mentioned: ['端口'], near: ['8499'] })
  t.match(none, /has no record related to «v9\.9\.9»\./)
  t.match(typo, /no record that directly corresponds to «8494» .* It does hold «8499», one typo away: if the user may have meant that, ask them before using it\./)
  t.notMatch(some, /typo/)
  for (const text of [some, none, typo]) {
    t.ok(text.endsWith(ABSTAIN_QUALIFIER))
    t.notMatch(text.replace(ABSTAIN_QUALIFIER, ''), /does not exist/)
  }
})

t.test('a statement carrying a new number, or any message to an empty store, gets no abstention notice', async (t) => {
  const h = await boot({ path: tempStorePath() }, [reply('a'), reply('b'), reply('c')])
  t.teardown(() => h.dispose())
  await h.turn('本机 19999 端口是干什么的？')
  t.equal(injected(h.adapter.requests[0]!).length, 0, 'empty store: nothing to say, even to a question')
  await h.ctx.stablemem.commit({ text: '本机 13010 端口给内部网关用' })
  await h.turn('记住：billing 服务端口 8499，部署在 10.3.7.9')
  t.equal(injected(h.adapter.requests[1]!).length, 0, 'a statement is not answered with "no record"')
  await h.turn('billing 服务端口 8499 是谁配置的？')
  t.match(injectedText(h, 2), /has no record/, 'the same number in a question does get the notice')
  t.same(h.errors, [])
})

t.test('mutation: without the question gate a statement is answered with the notice', async (t) => {
  const m = mutant({ file: 'plugin/pre-step.ts', from: 'isQuestion(query) && ', to: '' })
  t.teardown(() => m.remove())
  const h = await boot({ path: tempStorePath(), }, [reply('a')], { module: await m.load<typeof plugin>('index.ts') })
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: '本机 13010 端口给内部网关用' })
  await h.turn('记住：billing 服务端口 8499，部署在 10.3.7.9')
  t.match(injectedText(h, 0), /has no record/)
})

t.test('isQuestion: questions in Chinese and English ask; statements and save orders do not', async (t) => {
  for (const q of ['billing 的端口是多少', '值班人是谁', 'nginx 配置放在哪', '上次说的版本是什么', 'what port does billing use', 'Which version is on staging',
    'tell me the staging host', 'ok. where is the config', '端口 8499 对吗', 'is 10.3.7.9 the gateway']) t.ok(isQuestion(q), q)
  for (const s of ['记住：billing 服务端口 8499', '记一下 v2.3.1 已发布', 'remember: staging is on 5433', 'the gateway is 10.3.7.9',
    'billing 服务端口改成 8500 了', 'deploy 1.4.2 to staging now']) t.notOk(isQuestion(s), s)
})
