/**
 * The two planes in one process (brief §1, P1 and P2): the host row `dsh-stablemem` in the root
 * composition, the kernel row `dsh-stablemem/kernel` in a `stablemem` preset mounted by the real
 * `dsh-agent-presets`. An agent on the preset gets the kernel's surface, a bare agent the host's,
 * and no agent ever gets two tools, two context lines or two recalls, whatever `surface` says.
 */
import { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import { KERNEL_ROWS } from '../../lib/kernel/preset.ts'
import * as kernel from '../../lib/kernel/index.ts'
import { injected, reply, requestTexts, tempStorePath, toolCall } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { presetHarness, type PresetHarness } from '../helpers/presets.ts'

const FACT = 'billing 服务端口 8499，部署在 10.3.7.9'
const QUESTION = 'billing 服务的端口是多少？'
const FAILED = 3

/** Names of the tools one request offered, with repeats. */
function toolNames(request: GenerateOptions): string[] {
  return (request.tools ?? []).map((tool) => tool.name)
}

/** How often the memory's context line appears in one request. */
function contextLines(request: GenerateOptions): number {
  return requestTexts(request).join('\n').split('Long-term memory (dsh-stablemem):').length - 1
}

/** Saves FACT on a preset agent, then asks in a new preset session and in a new bare session. */
async function saveThenAsk(h: PresetHarness): Promise<{ saver: Agent, onPreset: GenerateOptions, bare: GenerateOptions, bareAgent: Agent, presetAgent: Agent }> {
  const saver = await h.agent('s1', 'stablemem')
  await h.turn(saver, `记住：${FACT}`)
  const presetAgent = await h.agent('s2', 'stablemem')
  await h.turn(presetAgent, QUESTION)
  const onPreset = h.adapter.requests.at(-1)!
  const bareAgent = await h.agent('s3', null)
  await h.turn(bareAgent, QUESTION)
  const bare = h.adapter.requests.at(-1)!
  return { saver, onPreset, bare, bareAgent, presetAgent }
}

const SCRIPT = () => [toolCall('c1', 'stablemem_commit', { text: FACT }), reply('已记住。'), reply('8499'), reply('8499')]

t.test('auto: the preset agent has the kernel surface, the bare agent the host surface, each once', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS } }, SCRIPT())
  t.teardown(() => h.dispose())
  const { onPreset, bare, bareAgent, presetAgent } = await saveThenAsk(h)
  t.same(h.errors, [])
  t.same(h.adapter.requests.map((r) => toolNames(r).filter((n) => n.startsWith('stablemem_'))), [['stablemem_commit', 'stablemem_recall'], ['stablemem_commit', 'stablemem_recall'], ['stablemem_commit', 'stablemem_recall'], ['stablemem_commit', 'stablemem_recall']], 'each memory tool once per request')
  t.equal((await h.ctx.stablemem.stats()).blocks, 1, 'the kernel tool wrote into the host store')
  const global = h.ctx.tools.get('stablemem_commit')
  t.ok(global, 'the host row registered its tool globally')
  t.not(h.ctx.tools.get('stablemem_commit', presetAgent), global, 'the preset agent resolves the kernel tool')
  t.equal(h.ctx.tools.get('stablemem_commit', bareAgent), global, 'the bare agent resolves the host tool')
  t.equal(injected(onPreset).length, 1, 'one recall message on the preset')
  t.equal(injected(bare).length, 1, 'one recall message on the bare agent')
  t.match(requestTexts(injected(onPreset)[0] ? { messages: injected(onPreset) } as GenerateOptions : onPreset).join(''), /8499/)
  t.equal(contextLines(onPreset), 1, 'one context line on the preset')
  t.equal(contextLines(bare), 1, 'one context line on the bare agent')
})

t.test('mutation: without the host skipping claimed agents, the preset agent gets two recalls', async (t) => {
  const m = mutant({ file: 'plugin/surface.ts', from: 'return !scopeChainOf(scope).some((key) => claims.has(key))', to: 'return scopeChainOf(scope) !== undefined' })
  t.teardown(() => m.remove())
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS }, lib: `${m.dir}/lib` }, SCRIPT())
  t.teardown(() => h.dispose())
  const { onPreset } = await saveThenAsk(h)
  t.equal(injected(onPreset).length, 2, 'the guard is load-bearing: two recall messages')
})

t.test('mutation: a kernel row that does not claim its scope doubles the recall', async (t) => {
  const m = mutant({ file: 'kernel/index.ts', from: "ctx.effect(() => host.claim(scope), 'stablemem.kernel-claim')", to: '' })
  t.teardown(() => m.remove())
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS }, lib: `${m.dir}/lib` }, SCRIPT())
  t.teardown(() => h.dispose())
  const { onPreset } = await saveThenAsk(h)
  t.equal(injected(onPreset).length, 2)
})

t.test('surface: service — only preset agents get the tool, the line and the recall', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath(), surface: 'service' }, presets: { stablemem: KERNEL_ROWS } }, SCRIPT())
  t.teardown(() => h.dispose())
  const { onPreset, bare, bareAgent } = await saveThenAsk(h)
  t.same(h.errors, [])
  t.same(toolNames(onPreset).filter((n) => n.startsWith('stablemem_')), ['stablemem_commit', 'stablemem_recall'])
  t.equal(injected(onPreset).length, 1)
  t.equal(contextLines(onPreset), 1)
  t.same(toolNames(bare).filter((n) => n.startsWith('stablemem_')), [], 'no tool outside the preset')
  t.equal(h.ctx.tools.get('stablemem_commit', bareAgent), undefined)
  t.equal(injected(bare).length, 0, 'no recall outside the preset')
  t.equal(contextLines(bare), 0, 'no context line outside the preset')
})

t.test('surface: global — the host serves every agent, the kernel row stands down', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath(), surface: 'global' }, presets: { stablemem: KERNEL_ROWS } }, SCRIPT())
  t.teardown(() => h.dispose())
  const { onPreset, bare, presetAgent } = await saveThenAsk(h)
  t.same(h.errors, [])
  t.equal(h.ctx.tools.get('stablemem_commit', presetAgent), h.ctx.tools.get('stablemem_commit'), 'the preset agent resolves the host tool')
  t.same(toolNames(onPreset).filter((n) => n.startsWith('stablemem_')), ['stablemem_commit', 'stablemem_recall'])
  t.equal(injected(onPreset).length, 1)
  t.equal(contextLines(onPreset), 1)
  t.equal(injected(bare).length, 1)
})

t.test('the kernel row outside a preset fails at load with a message saying where it belongs', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: {} })
  t.teardown(() => h.dispose())
  const fiber = h.ctx.plugin(kernel, {})
  const error = await fiber.await().then(() => undefined, (e: unknown) => e)
  t.equal(fiber.state, FAILED)
  t.match(String((error as Error | undefined)?.message), /dsh-stablemem\/kernel is a row of an agent preset/)
  t.equal(h.ctx.tools.get('stablemem_commit') !== undefined, true, 'the host surface is untouched')
})

t.test('P2: the host row as a preset row is rejected by the preset mount (it publishes ctx.stablemem)', async (t) => {
  const h = await presetHarness({ host: {}, mountHost: false, presets: { unsplit: `- id: stablemem\n  name: dsh-stablemem\n  config:\n    path: ':memory:'\n` } })
  t.teardown(() => h.dispose())
  const error = await h.agent('u1', 'unsplit').then(() => undefined, (e: unknown) => e)
  t.match(String((error as Error | undefined)?.message), /process-global service\(s\) \[stablemem\]/)
})

t.test('the kernel row without the host row: the preset cannot mount, and says it waits for stablemem', async (t) => {
  const h = await presetHarness({ host: {}, presets: { stablemem: KERNEL_ROWS }, mountHost: false })
  t.teardown(() => h.dispose())
  const error = await h.agent('n1', 'stablemem').then(() => undefined, (e: unknown) => e)
  t.match(String((error as Error | undefined)?.message), /stablemem/)
  t.equal(new Context().get('stablemem'), undefined)
})
