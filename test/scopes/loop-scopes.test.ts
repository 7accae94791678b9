/**
 * Scopes in the real agent loop: sessions are created with real session headers carrying their
 * working directory (`cwd`, what `dsh --profile headless` and the web host record) and, for
 * presets, joined to a preset the way dsh's AgentPresets does it (the agent's scope key parented
 * to `{agentPreset: id}`) or recorded in the header. The model is scripted; everything else is real.
 */
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import { bindScopeParent, scopeOf } from '@deepseek-ai/dsh-scope'
import { SessionId } from '@deepseek-ai/dsh-session'
import t from 'tap'
import * as plugin from '../../lib/index.ts'
import type { Config } from '../../lib/config.ts'
import { boot, injected, realBatch, reply, tempStorePath, textOf, toolCall, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { refusal } from '../helpers/refusal.ts'
import { tempDir } from '../helpers/temp.ts'

const root = realpathSync(tempDir('stablemem-loop-scopes'))
const A = join(root, 'project-a')
const B = join(root, 'project-b')
mkdirSync(A)
mkdirSync(B)
mkdirSync(join(A, 'sub'))
symlinkSync(A, join(root, 'link-to-a'))

const WS_FACT = 'billing 服务端口 8499，部署在 10.3.7.9'
const GLOBAL_FACT = '回复用中文，我的时区是上海'
const PRESET_FACT = 'reviewer preset: 代码评审只看 diff，不跑测试'

interface Place {
  cwd?: string
  /** Join this preset through the agent's scope chain (as AgentPresets.mount does). */
  joinPreset?: string
  /** Record this preset in the session header (as the web host does when it composes per session). */
  headerPreset?: string
}

/** Scope keys of preset mounts, one object per id (dsh keeps one standing mount per preset). */
const presetKeys = new Map<string, object>()

let serial = 0

/** Runs one turn in a new session at `place` and returns the request the model got. */
async function turnAt(h: Harness, place: Place, prompt: string): Promise<GenerateOptions> {
  const before = h.adapter.requests.length
  const handle = await h.ctx.agents.create({
    sessionId: SessionId(`scoped-${++serial}`),
    meta: { ...(place.cwd ? { cwd: place.cwd } : {}), ...(place.headerPreset ? { agentPreset: place.headerPreset } : {}) },
    agentOptions: { provider: 'mock', model: 'mock-1' },
    setup: place.joinPreset === undefined ? undefined : (agentCtx) => {
      let key = presetKeys.get(place.joinPreset!)
      if (!key) presetKeys.set(place.joinPreset!, key = { agentPreset: place.joinPreset })
      bindScopeParent(scopeOf(agentCtx)!, key)
    },
  })
  const agent: Agent = handle.agent
  agent.followup(realBatch(prompt)[0]!)
  await agent.whenIdle()
  await handle.dispose()
  return h.adapter.requests[before]!
}

/** The recall message of a request, or ''. */
function recalled(request: GenerateOptions): string {
  return injected(request).map(textOf).join('\n')
}

/** Saves a note through the model's tool call in a session at `place`. */
async function save(h: Harness, place: Place, args: Record<string, unknown>): Promise<string> {
  h.script(toolCall('c1', 'stablemem_commit', args), reply('已记住。'))
  await turnAt(h, place, `记住：${String(args.text)}`)
  const result = h.adapter.requests.at(-1)!.messages.flatMap((m) => m.content).find((b) => b.type === 'tool-result')
  return result?.type === 'tool-result' ? result.content.map((c) => (c.type === 'text' ? c.text : '')).join('') : ''
}

/** Asks in a session at `place`; returns what the plugin recalled for it. */
async function ask(h: Harness, place: Place, question: string): Promise<string> {
  h.script(reply('好的。'))
  return recalled(await turnAt(h, place, question))
}

async function bootAt(config: Partial<Config> = {}, options: BootOptions = {}): Promise<Harness> {
  const h = await boot({ path: tempStorePath(), ...config }, [], options)
  t.teardown(() => h.dispose())
  return h
}

t.test('a fact saved in workspace A is recalled in A, not in B; a global fact in both', async (t) => {
  const h = await bootAt()
  t.match(await save(h, { cwd: A }, { text: WS_FACT }), /Saved to long-term memory/)
  t.match(await save(h, { cwd: A }, { text: GLOBAL_FACT, scope: 'global' }), /Saved to long-term memory/)
  t.match(await ask(h, { cwd: A }, 'billing 服务的端口是多少？'), /> billing 服务端口 8499/, 'recalled in A')
  t.match(await ask(h, { cwd: join(A, 'sub', '..') }, 'billing 服务的端口是多少？'), /> billing 服务端口 8499/, 'a cwd with .. is the same workspace')
  t.match(await ask(h, { cwd: join(root, 'link-to-a') }, 'billing 服务的端口是多少？'), /> billing 服务端口 8499/, 'a cwd through a symbolic link is the same workspace')
  const inB = await ask(h, { cwd: B }, 'billing 服务的端口是多少？')
  t.notMatch(inB, /8499/, 'not recalled in B')
  t.notMatch(await ask(h, {}, 'billing 服务的端口是多少？'), /8499/, 'not recalled in a session without a workspace')
  for (const place of [{ cwd: A }, { cwd: B }, {}]) t.match(await ask(h, place, '我的时区是哪里？'), /> 回复用中文，我的时区是上海/, `global fact recalled at ${place.cwd ?? 'no workspace'}`)
  t.same(h.errors, [])
  t.match((await h.ctx.stablemem.stats()).byScope, [{ scope: 'global', notes: 1 }, { scope: `workspace:${A}`, notes: 1 }])
})

t.test('asking in B about a number only A holds gets the "no record" notice, not A\'s note', async (t) => {
  const h = await bootAt()
  await save(h, { cwd: A }, { text: WS_FACT })
  await save(h, { cwd: B }, { text: 'billing 服务的负责人是王磊' })
  const inB = await ask(h, { cwd: B }, 'billing 服务端口是 8499 吗？')
  t.match(inB, /has no record .*«8499»/, 'B abstains on 8499')
  t.notMatch(inB, /部署在 10\.3\.7\.9/)
})

t.test('a preset fact is recalled only on that preset, in any workspace', async (t) => {
  const h = await bootAt()
  t.match(await save(h, { cwd: A, joinPreset: 'review' }, { text: PRESET_FACT, scope: 'preset' }), /Saved/)
  t.match(await ask(h, { cwd: B, joinPreset: 'review' }, '代码评审要跑测试吗？'), /> reviewer preset/, 'same preset, other workspace')
  t.match(await ask(h, { cwd: B, headerPreset: 'review' }, '代码评审要跑测试吗？'), /> reviewer preset/, 'a session that records the preset in its header')
  t.notMatch(await ask(h, { cwd: A }, '代码评审要跑测试吗？'), /reviewer preset/, 'not without the preset')
  t.notMatch(await ask(h, { cwd: A, joinPreset: 'standard' }, '代码评审要跑测试吗？'), /reviewer preset/, 'not on another preset')
  t.match(await save(h, { cwd: A }, { text: 'x 端口 1', scope: 'preset' }), /not on an agent preset/, 'scope preset off a preset is a tool error the model reads')
  t.match(await save(h, {}, { text: 'y 端口 2', scope: 'workspace' }), /there is no workspace/, 'scope workspace without a workspace too')
  t.equal(await h.ctx.stablemem.get(plugin.blockId('x 端口 1')), undefined, 'nothing stored by a refused commit')
})

t.test('defaultScope and recallGlobal are honoured; aliases map several paths to one workspace', async (t) => {
  const g = await bootAt({ scopes: { defaultScope: 'global', workspaceAliases: {}, recallGlobal: true } })
  await save(g, { cwd: A }, { text: WS_FACT })
  t.match(await ask(g, { cwd: B }, 'billing 服务的端口是多少？'), /8499/, 'defaultScope global: saved without scope, recalled everywhere')

  const noGlobal = await bootAt({ scopes: { defaultScope: 'workspace', workspaceAliases: {}, recallGlobal: false } })
  await save(noGlobal, { cwd: A }, { text: GLOBAL_FACT, scope: 'global' })
  t.notMatch(await ask(noGlobal, { cwd: A }, '我的时区是哪里？'), /上海/, 'recallGlobal false: a workspace session sees no global notes')
  t.match(await ask(noGlobal, {}, '我的时区是哪里？'), /上海/, 'a session without workspace still does')

  const aliased = await bootAt({ scopes: { defaultScope: 'workspace', workspaceAliases: { [B]: A }, recallGlobal: true } })
  await save(aliased, { cwd: A }, { text: WS_FACT })
  t.match(await ask(aliased, { cwd: B }, 'billing 服务的端口是多少？'), /8499/, 'B is an alias of A')
})

t.test('an alias cycle, a relative alias or an unknown scope name fails the load, naming the field', async (t) => {
  for (const [scopes, message] of [
    [{ workspaceAliases: { [A]: B, [B]: A } }, /scopes\.workspaceAliases: alias cycle/],
    [{ workspaceAliases: { 'rel/dir': A } }, /scopes\.workspaceAliases key "rel\/dir".* relative/],
  ] as const) {
    await t.rejects(boot({ path: tempStorePath(), scopes: { defaultScope: 'workspace', recallGlobal: true, ...scopes } }), message)
  }
  t.throws(() => plugin.resolveConfig({ scopes: { defaultScope: 'team' } } as never), /scopes\.defaultScope/)
})

t.test('the service: scope views, bad input refused with the field named', async (t) => {
  const h = await bootAt()
  const sm = h.ctx.stablemem
  const { id } = await sm.commit({ text: WS_FACT, scope: 'workspace', workspace: A })
  t.same(await sm.scopesOf(id), [`workspace:${A}`])
  t.same(await sm.recall('billing 端口'), [], 'default view: global only')
  t.equal((await sm.recall('billing 端口', { scope: { workspace: A } })).length, 1)
  t.equal((await sm.recall('billing 端口', { scope: { workspace: B } })).length, 0)
  t.equal((await sm.recall('billing 端口', { scope: 'all' })).length, 1)
  t.match(await refusal(() => sm.commit({ text: 'a', scope: 'workspace', workspace: 'project-a' })), { code: 'invalid_input', message: /workspace: "project-a" is relative/ })
  t.match(await refusal(() => sm.commit({ text: 'a', scope: 'workspace', workspace: join(root, 'missing') })), { code: 'not_found', message: /does not exist/ })
  t.match(await refusal(() => sm.commit({ text: 'a', scope: 'team' as never })), { code: 'invalid_input', message: /scope: unknown scope "team" \(expected global, workspace, preset\)/ })
  t.match(await refusal(() => sm.recall('a', { scope: { workspace: './x' } })), { code: 'invalid_input', message: /relative/ })
  t.match(await refusal(() => sm.setScope([id], 'team' as never)), { code: 'invalid_input' })
  t.equal((await sm.stats()).blocks, 1, 'refusals stored nothing')

  t.equal(await sm.addScope([id], { workspace: join(root, 'link-to-a', '..', 'project-b') }), 1)
  t.same(await sm.scopesOf(id), [`workspace:${A}`, `workspace:${B}`], '.. and the link resolved')
  t.equal(await sm.removeScope([id], { workspace: A }), 1)
  t.equal((await sm.recall('billing 端口', { scope: { workspace: A } })).length, 0)
  t.equal(await sm.setScope([id], 'global'), 1)
  t.same(await sm.scopesOf(id), ['global'], 'moving to global replaces the workspace memberships')
  t.equal((await sm.recall('billing 端口')).length, 1)
})

t.test('mutation: a pre-step that recalls without the session\'s scope shows A\'s fact in B', async (t) => {
  const m = mutant({ file: 'plugin/pre-step.ts', from: ', scope: placeOf(payload.agent), earlier })', to: ', scope: \'all\', earlier })' })
  t.teardown(() => m.remove())
  const h = await bootAt({}, { module: await m.load<typeof plugin>('index.ts') })
  await save(h, { cwd: A }, { text: WS_FACT })
  t.match(await ask(h, { cwd: B }, 'billing 服务的端口是多少？'), /8499/, 'leaks into B')
})

t.test('mutation: a tool that ignores the session\'s workspace saves workspace facts as global', async (t) => {
  const m = mutant({ file: 'plugin/commit-tool.ts', from: ', ...placeOf(exec.agent),', to: ',' })
  t.teardown(() => m.remove())
  const h = await bootAt({}, { module: await m.load<typeof plugin>('index.ts') })
  await save(h, { cwd: A }, { text: WS_FACT })
  t.match(await ask(h, { cwd: B }, 'billing 服务的端口是多少？'), /8499/, 'leaks into B')
})

t.test('mutation: without the scope chain the preset join goes unseen', async (t) => {
  const m = mutant({ file: 'plugin/session-place.ts', from: 'for (const key of scopeChainOf(scopeOf(agent.ctx))) {', to: 'for (const key of [] as object[]) {' })
  t.teardown(() => m.remove())
  const h = await bootAt({}, { module: await m.load<typeof plugin>('index.ts') })
  t.match(await save(h, { cwd: A, joinPreset: 'review' }, { text: PRESET_FACT, scope: 'preset' }), /not on an agent preset/)
})
