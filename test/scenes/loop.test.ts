/**
 * Scenes in the real agent loop (scripted model): a rule given in one QQ group comes back in that
 * group with wording that shares nothing with it, and nowhere else; emergence across turns;
 * turns that are not a human prompt create nothing; scene-attached notes respect scopes.
 */
import { createUserMessage, type UserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import t from 'tap'
import { boot, injected, reply, tempStorePath, textOf, toolCall, type Harness } from '../helpers/harness.ts'

const RULE = '回这个群的消息不要用 Markdown，只用纯文本'

/** A human message as a QQ bridge stamps it (`source.channel/peer/group`, declared on MessageSourceMap). */
function qq(text: string, group: string, peer = 'u_100'): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: 'qq', group, peer } })
}

/** A web prompt: dsh's user RPC adds `rpcId` (and the browser's zone). */
function web(text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', rpcId: 'r1', clientTimeZone: 'Asia/Shanghai' } as never })
}

/** The recall message the plugin injected into the turn's last request ('' when none). */
function recalled(h: Harness): string {
  const request = h.adapter.requests.at(-1)!
  return injected(request).map(textOf).join('\n')
}

t.test('a rule from (qq, group_1) returns there with unrelated wording, not in group_2 nor on web', async (t) => {
  const h = await boot({ path: tempStorePath('scenes-loop'), sceneCard: 'off' })
  t.teardown(() => h.dispose())
  h.script(toolCall('c1', 'stablemem_commit', { text: RULE }), reply('好的'))
  await h.turn(qq('以后回这个群的消息别用 Markdown 了', 'group_1'), 'g1')
  t.same(h.errors, [])
  const stats = await h.ctx.stablemem.stats()
  t.equal(stats.scenes?.emergent, 0, 'no emergent scene after the first sighting')
  const tagged = h.ctx.stablemem.scenes.get('chan:qq/group:group_1')
  t.equal(tagged?.notes.length, 1, 'the commit was tagged with the turn\'s scene')

  h.script(reply('明天多云'))
  await h.turn(qq('明天天气怎么样', 'group_1', 'u_200'), 'g1')
  t.match(recalled(h), /不要用 Markdown/, 'recalled in its situation with unrelated wording')
  t.equal((await h.ctx.stablemem.stats()).scenes?.emergent, 1, 'an emergent scene at the second sighting')
  t.match(h.ctx.stablemem.scenes.current('g1'), { primary: 'auto:group:group_1_chan:qq', emergent: true })

  h.script(reply('明天多云'))
  await h.turn(qq('明天天气怎么样', 'group_2'), 'g2')
  t.notMatch(recalled(h), /Markdown/, 'not in another group of the same channel')

  h.script(reply('明天多云'))
  await h.turn(web('明天天气怎么样'), 'w1')
  t.notMatch(recalled(h), /Markdown/, 'not on web')
  t.equal(h.ctx.stablemem.scenes.current('w1')?.keys[0], 'chan:web')

  h.script(reply('好'))
  await h.turn(qq('今晚谁值班', 'group_1'), 'g1')
  t.match(recalled(h), /不要用 Markdown/, 'and again in group_1, another wording')
})

t.test('turns that are not a human prompt, and subagent sessions, create and reinforce nothing', async (t) => {
  const h = await boot({ path: tempStorePath('scenes-internal'), sceneCard: 'off' })
  t.teardown(() => h.dispose())
  const schedule = (text: string) => createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'schedule' } })
  h.script(reply('ok'), reply('ok'))
  await h.turn(schedule('每日巡检 nginx'), 'sch')
  await h.turn(schedule('每日巡检 nginx'), 'sch')
  const handle = await h.ctx.agentLoop.createAgent(h.ctx, { sessionId: SessionId('sub1'), meta: { origin: 'subagent' }, agentOptions: { provider: 'mock', model: 'mock-1' } })
  t.teardown(() => handle.dispose())
  for (let i = 0; i < 2; i++) {
    h.script(reply('ok'))
    handle.agent.followup(qq('查一下 nginx 日志', 'group_9'))
    await handle.agent.whenIdle()
  }
  const stats = (await h.ctx.stablemem.stats()).scenes!
  t.match(stats, { scenes: 0, evidence: 0, turns: { resolved: 0, skipped: 4 } })
  t.equal(h.ctx.stablemem.scenes.current('sub1'), undefined)
})

t.test('scene-attached notes stay within the session\'s scopes and below exact pins', async (t) => {
  const h = await boot({ path: tempStorePath('scenes-scope'), sceneCard: 'off', scopes: { defaultScope: 'workspace', workspaceAliases: {}, recallGlobal: true } })
  t.teardown(() => h.dispose())
  const memory = h.ctx.stablemem
  const other = await memory.commit({ text: '另一个项目的规矩：提交前跑 lint', scene: 'chan:qq/group:group_1', scope: 'workspace', workspace: '/tmp' })
  const pin = await memory.commit({ text: 'nginx 监听 8443 端口', scope: 'global' })
  const rule = await memory.commit({ text: RULE, scene: 'chan:qq/group:group_1', scope: 'global' })
  h.script(reply('ok'))
  await h.turn(qq('nginx 现在是 8443 吗', 'group_1'), 'g1')
  const text = recalled(h)
  t.ok(text.indexOf('8443') >= 0 && text.indexOf('8443') < text.indexOf('Markdown'), 'the exact pin first, then the scene\'s note')
  t.notMatch(text, /lint/, 'a note of another workspace never comes through its scene')
  t.ok(pin.id && rule.id && other.id)
})

t.test('mutations: without the scope clause another workspace\'s note comes through; without the policy a schedule turn counts', async (t) => {
  const { mutant } = await import('../helpers/mutant.ts')
  const scoped = mutant({ file: 'store/scene-attached.ts', from: 'm.scope = j.value)', to: '(m.scope = j.value OR 1))' })
  t.teardown(scoped.remove)
  const h = await boot({ path: tempStorePath('scenes-mutant-scope'), sceneCard: 'off' }, [], { module: await scoped.load('index.ts') })
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: '另一个项目的规矩：提交前跑 lint', scene: 'chan:qq/group:group_1', scope: 'workspace', workspace: '/tmp' })
  h.script(reply('ok'))
  await h.turn(qq('明天天气怎么样', 'group_1'), 'g1')
  t.match(recalled(h), /lint/)

  const policy = mutant({ file: 'kernel/scenes/register.ts', from: "return message.source.kind === 'user' && agent.session?.header?.origin !== 'subagent'", to: 'return true' })
  t.teardown(policy.remove)
  const p = await boot({ path: tempStorePath('scenes-mutant-policy'), sceneCard: 'off' }, [], { module: await policy.load('index.ts') })
  t.teardown(() => p.dispose())
  p.script(reply('ok'))
  await p.turn(createUserMessage({ content: [{ type: 'text', text: '每日巡检' }], source: { kind: 'plugin', plugin: 'schedule' } }), 'sch')
  t.equal((await p.ctx.stablemem.stats()).scenes?.evidence, 1)
})

t.test('the tools a turn called join its emergent scene at turn end, without strength', async (t) => {
  const h = await boot({ path: tempStorePath('scenes-tools'), sceneCard: 'off' })
  t.teardown(() => h.dispose())
  h.script(reply('ok'), reply('ok'), toolCall('c1', 'stablemem_recall', { query: 'nginx' }), reply('ok'))
  await h.turn(qq('你好', 'group_7'), 'g7')
  await h.turn(qq('你好', 'group_7'), 'g7')
  await h.turn(qq('查一下记录', 'group_7'), 'g7')
  const scene = h.ctx.stablemem.scenes.get('auto:group:group_7_chan:qq')!
  t.ok(scene.features.some((f) => f.key === 'tool:stablemem_recall' && f.weight === 0.8))
  t.equal(scene.strength, 2, 'created at the second turn, +1 at the third; the tools added none')
})
