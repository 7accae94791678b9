/**
 * The relevance gate in the real agent loop (real batches through `boot`): a turn about nothing
 * the store holds injects nothing; a turn about a stored fact still gets it; the service's
 * `purpose: 'inject'` and the CLI's `--inject` return exactly the injected notes. Mutation check:
 * with the gate taken out of the injection path the nothing-relevant turn injects again.
 */
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { DEFAULT_MIN_RELEVANCE } from '../../lib/recall/gate.ts'
import { boot, injected, reply, tempStorePath, textOf, type BootOptions, type Harness } from '../helpers/harness.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'

const FACTS = [
  'billing 服务端口 8499，部署在 10.3.7.9',
  'nginx 配置文件在 /etc/nginx/nginx.conf',
  '值班室分机号 4324，值班人 老周；夜里有急事先打分机，没人接再打他的手机，周末由小王顶班',
]
/** About a cat that shares a name with the duty officer: ranking alone would inject the duty-room note. */
const UNRELATED = '我家的猫叫老周，今天它心情不好，一直躲在沙发下面不出来'
const RELATED = 'billing 服务的端口是多少？'

async function bootWithFacts(t: Test, options: BootOptions = {}): Promise<{ h: Harness, path: string }> {
  const path = tempStorePath()
  const h = await boot({ path }, [], options)
  t.teardown(() => h.dispose())
  for (const text of FACTS) await h.ctx.stablemem.commit({ text })
  return { h, path }
}

/** The ids quoted in our injected message of one request. */
function injectedIds(h: Harness, request: number): string[] {
  return injected(h.adapter.requests[request]!).flatMap((m) => [...textOf(m).matchAll(/^\[\d+\] (blk_[0-9a-f]{24})/gm)].map((match) => match[1]!))
}

t.test('nothing relevant: nothing injected; a relevant question: its note, and only what purpose inject returns', async (t) => {
  const { h, path } = await bootWithFacts(t)
  h.script(reply('不知道'), reply('8499'))
  const ranked = await h.ctx.stablemem.recall(UNRELATED, { recordAccess: false })
  t.match(ranked.map((x) => x.text), [FACTS[2]], 'the ranked list (a deliberate search) still finds the note')
  t.equal(ranked[0]!.relevance.toFixed(3), '0.095', 'the message mentions 老周 and nothing else of the note, the note holds 老周 and nothing else of the message: below the gate')
  t.ok(ranked[0]!.relevance < DEFAULT_MIN_RELEVANCE)
  t.same(await h.ctx.stablemem.recall(UNRELATED, { purpose: 'inject', recordAccess: false }), [])
  await h.turn(UNRELATED)
  t.equal(injected(h.adapter.requests[0]!).length, 0, 'no recall message at all')

  const wanted = await h.ctx.stablemem.recall(RELATED, { purpose: 'inject', recordAccess: false })
  await h.turn(RELATED)
  t.same(injectedIds(h, 1), wanted.map((x) => x.id), 'the pre-step injects exactly what purpose inject returns')
  t.match(textOf(injected(h.adapter.requests[1]!)[0]!), /> billing 服务端口 8499/)
  t.notMatch(textOf(injected(h.adapter.requests[1]!)[0]!), /nginx|4324/)
  t.match(await h.ctx.stablemem.stats(), { injections: 1, recallFailures: 0 })
  await h.dispose()

  const cli = await runCli(['recall', RELATED, '--inject', '--json', '--db', path])
  t.equal(cli.code, 0, cli.stderr)
  t.same((JSON.parse(cli.stdout) as { hits: Array<{ id: string }> }).hits.map((x) => x.id), wanted.map((x) => x.id), 'stablemem recall --inject shows the same notes')
  const none = await runCli(['recall', UNRELATED, '--inject', '--db', path])
  t.equal(none.stdout, 'nothing relevant enough to inject (1 ranked below the gate)\n')
  const ranks = await runCli(['recall', UNRELATED, '--db', path])
  t.match(ranks.stdout, /^1\. blk_[0-9a-f]{24}  score [0-9.]+  relevance 0\.095\n/, 'the ranked list shows why it would not be injected')
})

t.test('purpose inject counts only the gated notes as accessed, and refuses an unknown purpose', async (t) => {
  const { h } = await bootWithFacts(t)
  await h.ctx.stablemem.recall(UNRELATED, { purpose: 'inject' })
  const duty = (await h.ctx.stablemem.recall(UNRELATED, { recordAccess: false }))[0]!
  t.equal((await h.ctx.stablemem.get(duty.id))!.accessCount, 0, 'a gated-out note is not an access')
  const [billing] = await h.ctx.stablemem.recall(RELATED, { purpose: 'inject' })
  t.equal((await h.ctx.stablemem.get(billing!.id))!.accessCount, 1)
  await t.rejects(h.ctx.stablemem.recall(RELATED, { purpose: 'injection' as 'inject' }), { code: 'invalid_input', message: `purpose must be 'inject' or 'search', not "injection"` })
})

t.test('minRelevance 0 and relevanceFalloff 0 restore the ungated injection', async (t) => {
  const h = await boot({ path: tempStorePath(), minRelevance: 0, relevanceFalloff: 0 }, [reply('?')])
  t.teardown(() => h.dispose())
  for (const text of FACTS) await h.ctx.stablemem.commit({ text })
  await h.turn(UNRELATED)
  t.match(textOf(injected(h.adapter.requests[0]!)[0]!), /> 值班室分机号 4324/)
})

t.test('mutation: without the gate in the injection path the nothing-relevant turn injects again', async (t) => {
  const m = mutant({ file: 'plugin/pre-step.ts', from: "purpose: 'inject'", to: "purpose: 'search'" })
  t.teardown(() => m.remove())
  const { h } = await bootWithFacts(t, { module: await m.load<typeof plugin>('index.ts') })
  h.script(reply('?'))
  await h.turn(UNRELATED)
  t.match(textOf(injected(h.adapter.requests[0]!)[0]!), /> 值班室分机号 4324/, 'the mutant injects the unrelated note')
})
