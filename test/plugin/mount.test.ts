/**
 * Mounting: config validation at load, two instances side by side, a bare composition, the
 * default path under the dsh home, and a store that cannot be opened (degrades visibly).
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { Context } from '@deepseek-ai/cordis'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { CallId } from '@deepseek-ai/dsh-llm'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { contextName } from '../../lib/plugin/context-line.ts'
import { SCHEMA_VERSION } from '../../lib/store/schema.ts'
import { ScriptedAdapter, boot, injected, reply, requestTexts, tempStorePath, textOf, toolCall, userMessage } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { SessionId } from '@deepseek-ai/dsh-session'
import { tempDir } from '../helpers/temp.ts'

const FAILED = 3
const ACTIVE = 2

/** A context with only the services the testkit mounts (no agent loop). */
async function bare(): Promise<Context> {
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  return ctx
}

t.test('invalid config fails the fiber at load with a message naming the field', async (t) => {
  const cases: Array<[string, object, RegExp]> = [
    ['topK', { topK: 0 }, /topK expected number >= 1 but got 0/],
    ['topK', { topK: 'five' }, /topK expected number but got five/],
    ['querySources', { querySources: ['User Prompt'] }, /querySources\[0\]/],
    ['toolName', { toolName: 'has space' }, /toolName expect string to match/],
    ['injectBudgetChars', { injectBudgetChars: 100 }, /injectBudgetChars expected number >= 500/],
    ['minScore', { minScore: 3 }, /minScore expected number <= 1/],
    ['maxBlockChars', { maxBlockChars: -1 }, /maxBlockChars/],
    ['path', { path: 42 }, /path expected string but got 42/],
  ]
  for (const [field, config, message] of cases) {
    const ctx = await bare()
    const fiber = ctx.plugin(plugin, config as plugin.Config)
    const error = await fiber.await().then(() => undefined, (e: unknown) => e)
    t.equal(fiber.state, FAILED, `${field}: fiber failed`)
    t.match(String((error as Error | undefined)?.message), message, `${field}: ${String((error as Error | undefined)?.message)}`)
    t.equal(ctx.get('stablemem'), undefined, `${field}: no service`)
    await ctx.fiber.dispose()
  }
})

t.test('mounts with only the bare testkit services, and declares no others', async (t) => {
  t.ok(plugin.inject.every((s) => ['tools', 'systemPrompt', 'agents', 'llm', 'sessions'].includes(s)), `inject = ${plugin.inject.join(', ')}`)
  const ctx = await bare()
  t.teardown(() => ctx.fiber.dispose())
  const fiber = await ctx.plugin(plugin, plugin.resolveConfig({ path: tempStorePath() }))
  t.equal(fiber.state, ACTIVE)
  const result = await ctx.tools.execute({ callId: CallId('c1'), name: 'stablemem_commit', arguments: { text: 'bare 9090' }, signal: new AbortController().signal } as never)
  t.match(JSON.stringify(result), /Saved to long-term memory as blk_/)
  t.equal((await ctx.stablemem.stats()).blocks, 1)
})

t.test('the default path is $DSH_HOME/stablemem/memory.db', async (t) => {
  const home = tempDir('stablemem-home')
  const saved = process.env.DSH_HOME
  process.env.DSH_HOME = home
  t.teardown(() => { if (saved === undefined) delete process.env.DSH_HOME; else process.env.DSH_HOME = saved })
  const ctx = await bare()
  t.teardown(() => ctx.fiber.dispose())
  await ctx.plugin(plugin, plugin.resolveConfig({}))
  await ctx.stablemem.commit({ text: 'home 1' })
  t.equal((await ctx.stablemem.stats()).path, join(home, 'stablemem', 'memory.db'))
  t.ok(existsSync(join(home, 'stablemem', 'memory.db')))
})

/** Two instances on two files with two tool names; the model calls B's tool, then A's. */
async function twoInstances(t: Test, mod: typeof plugin = plugin) {
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  await ctx.plugin(AgentLoop, { agents: [] })
  t.teardown(() => ctx.fiber.dispose())
  const pa = tempStorePath('a')
  const pb = tempStorePath('b')
  const fa = await ctx.plugin(mod, mod.resolveConfig({ path: pa, toolName: 'mem_a' }))
  const fb = await ctx.plugin(mod, mod.resolveConfig({ path: pb, toolName: 'mem_b' }))
  const adapter = new ScriptedAdapter([toolCall('c1', 'mem_b', { text: 'only in B 4242' }), toolCall('c2', 'mem_a', { text: 'only in A 1111' }), reply('ok'), reply('ok')])
  ctx.llm.registerAdapter(['mock'], adapter)
  const agent = ctx.agentLoop.create(SessionId('two'), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('save both'))
  await agent.whenIdle()
  agent.followup(userMessage('4242 and 1111?'))
  await agent.whenIdle()
  const texts = (path: string) => {
    if (!existsSync(path)) return ['never created']
    const db = new DatabaseSync(path, { readOnly: true })
    try { return db.prepare('SELECT text FROM blocks ORDER BY rowid').all().map((r) => String(r.text)) } catch (e) { return [`unreadable: ${(e as Error).message}`] } finally { db.close() }
  }
  return { ctx, fa, fb, adapter, a: texts(pa), b: texts(pb), pa, pb }
}

t.test('two instances on two files with two tool names work side by side without colliding', async (t) => {
  const { fa, fb, adapter, a, b, pa, pb } = await twoInstances(t)
  t.same([fa.state, fb.state], [ACTIVE, ACTIVE])
  t.same(adapter.requests[0]!.tools?.map((x) => x.name), ['mem_a', 'mem_a_recall', 'mem_b', 'mem_b_recall'])
  t.same(a, ['only in A 1111'], "A's file holds only A's note")
  t.same(b, ['only in B 4242'], "B's file holds only B's note")
  t.not(contextName(pa, 'mem_a'), contextName(pb, 'mem_b'), 'context names differ')
  t.not(contextName(':memory:', 'mem_a'), contextName(':memory:', 'mem_b'), 'two in-memory stores differ by tool name')
  const last = adapter.requests.at(-1)!
  const lines = requestTexts(last).join('\n')
  t.match(lines, /1 note stored; .* with the mem_a tool/)
  t.match(lines, /1 note stored; .* with the mem_b tool/)
  const recalls = injected(last).map(textOf).join('\n')
  t.match(recalls, /> only in A 1111/)
  t.match(recalls, /> only in B 4242/)
})

t.test('mutation: without isolating the service per instance, B\'s tool writes into A\'s file', async (t) => {
  const m = mutant({ file: 'index.ts', from: "const own = ctx.isolate('stablemem')", to: 'const own = ctx' })
  t.teardown(() => m.remove())
  const { a, b } = await twoInstances(t, await m.load<typeof plugin>('index.ts'))
  t.same(a, ['only in B 4242', 'only in A 1111'], 'both notes landed in A')
  t.same(b, ['never created'], 'B\'s store was never opened')
})

t.test('the first instance publishes ctx.stablemem to other plugins; a second one does not steal it', async (t) => {
  const { ctx, pa } = await twoInstances(t)
  let seen: plugin.StableMem | undefined
  await ctx.plugin({ name: 'consumer', inject: ['stablemem'], apply: (c: Context) => { seen = c.stablemem } })
  t.equal((await seen!.stats()).path, pa)
})

t.test('a store that cannot be opened degrades visibly: the agent runs, the tool and the context line say why', async (t) => {
  const path = tempStorePath('newer')
  const db = new DatabaseSync(path)
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 5}`)
  db.close()
  const before = readFileSync(path)
  const h = await boot({ path }, [toolCall('c1', 'stablemem_commit', { text: 'x 1' }), reply('could not save')])
  t.teardown(() => h.dispose())
  t.equal(h.fiber.state, ACTIVE, 'the plugin still mounts')
  const stats = await h.ctx.stablemem.stats()
  t.match(stats, { available: false, error: /newer than this dsh-stablemem supports/ })
  await h.turn('remember x')
  t.same(h.errors, [])
  const texts = requestTexts(h.adapter.requests[1]!).join('\n')
  t.match(texts, /Long-term memory \(dsh-stablemem\) is unavailable: store schema version \d+ is newer/)
  t.match(texts, /long-term memory is unavailable/, 'the tool result says why')
  t.ok(h.logs.some((l) => l.type === 'error' && /memory disabled/.test(l.text)), 'logged as an error')
  t.same(readFileSync(path), before, 'the newer file was not touched')
})

t.test('two instances mounted concurrently both come up with their own tools', async (t) => {
  const ctx = await bare()
  t.teardown(() => ctx.fiber.dispose())
  const pa = tempStorePath('a')
  const fa = ctx.plugin(plugin, plugin.resolveConfig({ path: pa, toolName: 'mem_a' }))
  const fb = ctx.plugin(plugin, plugin.resolveConfig({ path: tempStorePath('b'), toolName: 'mem_b' }))
  await Promise.all([fa.await(), fb.await()])
  t.same([fa.state, fb.state], [ACTIVE, ACTIVE])
  t.ok(ctx.tools.get('mem_a') && ctx.tools.get('mem_b'), 'both tools registered')
  t.equal((await ctx.stablemem.stats()).path, pa, 'the first mounted instance provides ctx.stablemem')
})

t.test('when the publishing instance is unloaded, the other one takes over ctx.stablemem', async (t) => {
  const { ctx, fa, pb } = await twoInstances(t)
  const seen: plugin.StableMem[] = []
  await ctx.plugin({ name: 'consumer', inject: ['stablemem'], apply: (c: Context) => { seen.push(c.stablemem) } })
  await fa.dispose()
  const current = ctx.get('stablemem') as plugin.StableMem | undefined
  t.ok(current, 'ctx.stablemem is still provided')
  t.equal((await current!.stats()).path, pb, "it is B's store now")
  t.equal(seen.length, 2, 'the consumer was reloaded with the new service')
  t.equal((await seen[1]!.stats()).path, pb)
  t.same((await seen[1]!.recall('only in B 4242')).map((h) => h.text), ['only in B 4242'])
})

t.test('mutation: without the takeover listener, ctx.stablemem is gone with the first instance', async (t) => {
  const m = mutant({ file: 'index.ts', from: "if (service === 'stablemem' && publish(ctx, inner.stablemem))", to: 'if (service === undefined)' })
  t.teardown(() => m.remove())
  const { ctx, fa } = await twoInstances(t, await m.load<typeof plugin>('index.ts'))
  await fa.dispose()
  t.equal(ctx.get('stablemem'), undefined)
})
