/**
 * Cooling (L2 → L3) with a fake clock: a cold block idle past the rule becomes field blocks with
 * `derived_from` edges and moves to `stable` under the same id; an undistillable one is kept with
 * one more attempt; a garbage LLM distiller changes nothing the deterministic one would not; two
 * processes never cool the same block twice; the heartbeat never ticks after dispose.
 */
import t from 'tap'
import { coolTick, type CoolingOptions } from '../../lib/kernel/layers/cooling.ts'
import { distillDeterministic, factText, gateFacts } from '../../lib/kernel/layers/distill.ts'
import { registerHeartbeat } from '../../lib/kernel/layers/heartbeat.ts'
import { DERIVED_FROM, type CapturePiece } from '../../lib/store/layers.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { resolveConfig } from '../../lib/config.ts'
import { boot, reply, tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { startFixture } from '../reliability/child.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1, 6, 0)
const RULE: CoolingOptions = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 50 }

function piece(text: string, seq: number): CapturePiece {
  return { text, origin: { sessionId: 's1', seq, eventType: 'user/message', role: 'user', eventTime: T0, compactionId: 'c' } }
}

/** A store whose clock reads T0 while the region is captured. */
function capturedStore(texts: readonly string[]): { store: BlockStore, path: string, ids: string[] } {
  const path = tempStorePath('cooling')
  const store = new BlockStore(path, { now: () => T0 })
  const result = store.layers.capture(texts.map((text, i) => piece(text, i)), () => 'compaction:user')
  store.close()
  return { store: new BlockStore(path), path, ids: result.ids }
}

t.test('+73 h: a cold block becomes field blocks and edges in L3, same id; an undistillable one is kept with one more attempt', async (t) => {
  const { store, ids } = capturedStore(['记一下：billing 服务端口 13010，部署在 10.3.7.9。', '好的，我们继续。'])
  t.teardown(() => store.close())
  const [needle, chat] = ids as [string, string]
  const early = await coolTick(store, T0 + 71 * HOUR, RULE, 'p1')
  t.equal(early.selected, 0, 'not idle long enough at +71 h')
  const before = store.stats()
  const report = await coolTick(store, T0 + 73 * HOUR, RULE, 'p1')
  t.same({ selected: report.selected, cooled: report.cooled, kept: report.kept }, { selected: 2, cooled: 1, kept: 1 })
  const after = store.stats()
  t.equal(after.blocks - before.blocks, 2, 'two field blocks')
  t.equal(after.edges - before.edges, 2, 'two derived_from edges')
  t.equal(store.layers.layerOf(needle), 'stable', 'the original moved to stable')
  t.equal(store.get(needle)?.text, '记一下：billing 服务端口 13010，部署在 10.3.7.9。', 'same id, same text: nothing deleted')
  const derived = store.edgesOf('block', needle).filter((e) => e.type === DERIVED_FROM && e.targetId === needle)
  t.same(derived.map((e) => store.get(e.sourceId)?.text).sort(), ['billing|服务端口=13010', 'billing|部署=10.3.7.9'])
  t.equal(store.layers.layerOf(chat), 'cold', 'the undistillable block stays cold')
  t.equal(store.get(chat)?.text, '好的，我们继续。', 'and is kept')
  t.equal(store.layers.stats().undistilled, 1)
  t.equal((await coolTick(store, T0 + 80 * HOUR, RULE, 'p1')).selected, 0, 'it waits for the retry time')
  const retry = await coolTick(store, T0 + 98 * HOUR, RULE, 'p1')
  t.match(retry.items, [{ id: chat, result: 'kept', why: /attempt 2/ }], 'retried later, one more attempt')
  t.ok(store.layers.lastRun('cooling'), 'each run is logged in kernel_runs')
})

t.test('the rule: recalled more than maxAccess times, or recently, a cold block does not cool', async (t) => {
  const { store, ids } = capturedStore(['kafka broker 在 10.8.0.12:9092'])
  t.teardown(() => store.close())
  store.recordAccess([ids[0]!, ids[0]!])
  store.recordAccess([ids[0]!])
  t.equal((await coolTick(store, Date.now() + 100 * HOUR, RULE, 'p1')).selected, 0, 'three accesses: stays')
  t.equal((await coolTick(store, Date.now() + 100 * HOUR, { ...RULE, maxAccess: 3 }, 'p1')).selected, 1, 'the threshold is configurable')
})

/** Two cold blocks recalled 5 and 20 times at T0, on a store whose clock the test moves. */
function recalledStore(): { store: BlockStore, ids: [string, string], at: (ms: number) => void } {
  const { store: first, path, ids } = capturedStore(['kafka broker 在 10.8.0.12:9092', 'redis 主节点端口 6380'])
  first.close()
  let clock = T0
  const store = new BlockStore(path, { now: () => clock })
  store.recordAccess(Array.from({ length: 5 }, () => ids[0]!))
  store.recordAccess(Array.from({ length: 20 }, () => ids[1]!))
  return { store, ids: ids as [string, string], at: (ms) => { clock = ms } }
}

t.test('access counts halve once per cooling period, so a block recalled a while ago cools after all', async (t) => {
  const { store, ids: [a, b], at } = recalledStore()
  t.teardown(() => store.close())
  const count = (id: string) => store.get(id)!.accessCount
  const tick = async (ms: number) => { at(ms); return coolTick(store, ms, RULE, 'p1') }
  t.equal((await tick(T0 + HOUR)).halved, 0, 'the first tick begins the first period')
  const second = await tick(T0 + 74 * HOUR)
  t.same([second.halved, second.selected, count(a), count(b)], [2, 0, 2, 10], 'one period later: both halved (5 → 2, 20 → 10)')
  const third = await tick(T0 + 75 * HOUR)
  t.same([third.halved, count(b)], [0, 10], 'not halved twice in one period')
  t.same([third.cooled, store.layers.layerOf(a)], [1, 'stable'], 'the block now recalled ≤ 2 times cools')
  t.same([(await tick(T0 + 147 * HOUR)).halved, count(b)], [1, 5], 'the next period halves again')
})

t.test('a halving pass is bounded per step and resumes where it stopped', async (t) => {
  const { store, ids: [a, b] } = recalledStore()
  t.teardown(() => store.close())
  t.equal(store.layers.halvingStep(T0, 72 * HOUR, 1), 0, 'the period begins')
  t.equal(store.layers.halvingStep(T0 + 72 * HOUR, 72 * HOUR, 1), 1, 'one block per step')
  t.same([store.get(a)!.accessCount, store.get(b)!.accessCount], [2, 20])
  t.equal(store.layers.halvingStep(T0 + 72 * HOUR, 72 * HOUR, 1), 1, 'the next step goes on after it')
  t.same([store.get(a)!.accessCount, store.get(b)!.accessCount], [2, 10])
  t.equal(store.layers.halvingStep(T0 + 73 * HOUR, 72 * HOUR, 1), 0, 'the pass is complete until the next period')
  t.equal(store.layers.halvingStep(T0 + 1_000 * HOUR, 72 * HOUR, 1), 1, 'a tick with a far future clock starts a pass…')
  t.equal(store.layers.halvingStep(T0 + 146 * HOUR, 72 * HOUR, 1), 1, '…and the real clock later does not wait for that future period')
})

t.test('mutation: a pass that does not remember where it stopped halves every tick', async (t) => {
  const m = mutant({ file: 'store/layers.ts', from: 'cursor = step.next', to: 'cursor = 0' })
  t.teardown(() => m.remove())
  const { BlockStore: MutantStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { store: first, ids } = recalledStore()
  const path = first.path
  first.close()
  const store = new MutantStore(path)
  t.teardown(() => store.close())
  store.layers.halvingStep(T0, 72 * HOUR, 10)
  store.layers.halvingStep(T0 + 72 * HOUR, 72 * HOUR, 10)
  store.layers.halvingStep(T0 + 73 * HOUR, 72 * HOUR, 10)
  t.not(store.get(ids[1])!.accessCount, 10, 'red: halved twice in one period')
})

t.test('dry run lists what would cool and why, and writes nothing', async (t) => {
  const { store } = capturedStore(['The staging database host is 172.16.40.8.', 'ok'])
  t.teardown(() => store.close())
  const before = store.stats()
  const report = await coolTick(store, T0 + 73 * HOUR, { ...RULE, dryRun: true }, 'p1')
  t.match(report.items, [{ result: 'would-cool', facts: ['staging database|host=172.16.40.8'], why: /accessed 0×, idle 73 h/ }, { result: 'would-keep' }])
  t.same(store.stats().blocks, before.blocks)
  t.equal(store.layers.stats().cold, 2)
})

t.test('an LLM distiller returning garbage changes nothing the deterministic one would not', async (t) => {
  const text = '前端现在用的 React 版本是 18.3.1。'
  const garbage = [
    () => { throw new Error('network down') },
    () => [{ subject: 'React', dimension: 'version', value: '19.0.0' }], // not in the source: hallucinated
    () => [{ subject: '', dimension: 'x', value: '18.3.1' }], // no subject
    () => [{ subject: 'React', dimension: 'a very long dimension name', value: '18.3.1' }],
    () => [{ subject: '18.3.1', dimension: 'v', value: '18.3.1' }], // self-loop
    () => 'not a list' as never,
  ]
  for (const distiller of garbage) {
    const { store } = capturedStore([text])
    const report = await coolTick(store, T0 + 73 * HOUR, { ...RULE, distiller }, 'p1')
    t.equal(report.fallbacks, 1)
    t.same(report.items[0]!.facts.map((id) => store.get(id)?.text), distillDeterministic(text).map(factText), 'the deterministic facts, nothing else')
    store.close()
  }
  t.same(gateFacts(text, [{ subject: 'React', dimension: '版本', value: '18.3.1' }]).map(factText), ['React|版本=18.3.1'], 'a well-formed fact passes')
})

t.test('the LLM distiller through ctx.llm: a non-JSON answer falls back; a tool answer is used', async (t) => {
  const path = tempStorePath('llm')
  const seeded = new BlockStore(path, { now: () => T0 })
  seeded.layers.capture([piece('The metrics exporter listens on port 9464.', 1), piece('Deploys go out on 2027-01-31 from the ops team.', 2)], () => 'compaction:user')
  seeded.close()
  const h = await boot({ path, layers: { ...resolveConfig().layers, distiller: 'llm', distillerProvider: 'mock', distillerModel: 'mock-1', heartbeatMinutes: 0 } }, [
    reply('sure! here are facts: port 9464'),
    [
      { type: 'block-start', index: 0, blockType: 'tool-call' },
      { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'x' as never, name: 'record_facts', arguments: JSON.stringify({ fields: [{ subject: 'ops team', dimension: 'deploy date', value: '2027-01-31' }] }) } },
      { type: 'finish', reason: { kind: 'tool-calls' } },
    ],
  ])
  t.teardown(() => h.dispose())
  const report = await h.ctx.stablemem.cool({ now: T0 + 73 * HOUR })
  t.equal(report.fallbacks, 1, 'the text answer fell back')
  const facts = await Promise.all(report.items.flatMap((i) => i.facts).map((id) => h.ctx.stablemem.get(id)))
  t.same(facts.map((b) => b?.text).sort(), ['metrics exporter|port=9464', 'ops team|deploy date=2027-01-31'])
  t.equal(h.adapter.requests.length, 2, 'one request per block')
  t.ok(h.adapter.requests[0]!.tools?.some((tool) => tool.name === 'record_facts'), 'the schema travels as a tool')
})

t.test('two connections: a block cooled by one is skipped by the other, and the lease keeps ticks apart', async (t) => {
  const { store: a, path } = capturedStore(['billing 服务端口 13010'])
  const b = new BlockStore(path)
  t.teardown(() => { a.close(); b.close() })
  const [candidate] = b.layers.coldCandidates(T0 + 73 * HOUR, RULE.idleMs, RULE.maxAccess, 10)
  t.ok(candidate)
  t.equal(a.layers.cool(candidate!.id, [{ text: 'billing|服务端口=13010' }], T0 + 73 * HOUR, RULE.retryMs).result, 'cooled')
  const late = b.layers.cool(candidate!.id, [{ text: 'billing|服务端口=13010' }], T0 + 73 * HOUR, RULE.retryMs)
  t.equal(late.result, 'skipped', 'the second sees it is no longer cold')
  t.equal(b.edgesOf('block', candidate!.id).filter((e) => e.type === DERIVED_FROM).length, 1, 'one derived_from edge, written once')
  t.ok(a.layers.acquire('cooling', 'A', 60_000))
  t.notOk(b.layers.acquire('cooling', 'B', 60_000), 'B cannot take a running lease')
  t.equal((await coolTick(b, T0 + 73 * HOUR, RULE, 'B')).status, 'busy')
  a.layers.release('cooling', 'A', 'done')
  t.ok(b.layers.acquire('cooling', 'B', 60_000), 'released: B may run')
})

t.test('mutation: without the re-check inside the write, the late connection cools the block again', async (t) => {
  const m = mutant({ file: 'store/layers.ts', from: "const live = items.filter((item) => cold.has(item.id))", to: 'const live = items' })
  t.teardown(() => m.remove())
  const { BlockStore: MutantStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { path } = capturedStore(['billing 服务端口 13010'])
  const a = new MutantStore(path)
  const b = new MutantStore(path)
  t.teardown(() => { a.close(); b.close() })
  const [candidate] = b.layers.coldCandidates(T0 + 73 * HOUR, RULE.idleMs, RULE.maxAccess, 10)
  a.layers.cool(candidate!.id, [{ text: 'billing|服务端口=13010' }], T0 + 73 * HOUR, RULE.retryMs)
  t.not(b.layers.cool(candidate!.id, [{ text: 'billing|服务端口=13010' }], T0 + 73 * HOUR, RULE.retryMs).result, 'skipped', 'red: cooled a stable block')
})

t.test('two processes on one store never cool the same block twice', async (t) => {
  const texts = Array.from({ length: 60 }, (_, i) => `service-${i} 的端口是 ${20_000 + i}`)
  const { store, path } = capturedStore(texts)
  store.close()
  const now = String(T0 + 73 * HOUR)
  const children = ['A', 'B'].map((holder) => startFixture('../../layers/fixtures/cool-child', [path, now, holder]))
  await Promise.all(children.map((c) => c.waitFor((l) => l === 'ready')))
  for (const c of children) c.proc.stdin.end('go\n')
  const results = await Promise.all(children.map(async (c) => JSON.parse(await c.waitFor((l) => l.startsWith('{'))) as { cooled: string[], busy: number }))
  await Promise.all(children.map((c) => c.exited))
  const all = results.flatMap((r) => r.cooled)
  t.equal(new Set(all).size, all.length, 'no block cooled by both')
  t.equal(all.length, 60, 'every block cooled once')
  const check = new BlockStore(path)
  t.teardown(() => check.close())
  t.same(check.layers.stats().cold, 0)
  t.equal(check.stats().edges, 60, 'one derived_from edge per block')
})

t.test('heartbeat: single-flight, and a tick after dispose never runs', async (t) => {
  let calls = 0
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  let scrubs = 0
  const fake = { unavailableReason: () => undefined, scrubLater: () => { scrubs++ }, cool: async () => { calls++; await gate; return { cooled: 0, kept: 0 } } }
  const config = resolveConfig({ layers: { ...resolveConfig().layers, heartbeatMinutes: 1 } })
  const h = await boot({ path: tempStorePath() })
  t.teardown(() => h.dispose())
  let beat: ReturnType<typeof registerHeartbeat>
  const fiber = await h.ctx.plugin({ name: 'beat', apply: (ctx) => { beat = registerHeartbeat(ctx, () => fake as never, config) } })
  const first = beat!.tick()
  const second = beat!.tick()
  t.equal(beat!.running, true)
  release()
  await Promise.all([first, second])
  t.equal(calls, 1, 'the second tick did not join the running one')
  t.equal(scrubs, 1, 'the tick also finishes a pending scrub (lib/store/scrub.ts)')
  await fiber.dispose()
  await beat!.tick()
  t.equal(calls, 1, 'no tick after dispose')
  t.equal(registerHeartbeat(h.ctx, () => fake as never, resolveConfig({ layers: { ...config.layers, heartbeatMinutes: 0 } })), undefined, 'heartbeatMinutes 0: no timer')
})

t.test('mutation: without the dispose guard a late tick runs', async (t) => {
  const m = mutant({ file: 'kernel/layers/heartbeat.ts', from: 'if (running || disposed) return', to: 'if (running) return' })
  t.teardown(() => m.remove())
  const { registerHeartbeat: mutantBeat } = await m.load<typeof import('../../lib/kernel/layers/heartbeat.ts')>('kernel/layers/heartbeat.ts')
  let calls = 0
  const fake = { unavailableReason: () => undefined, scrubLater: () => undefined, cool: async () => { calls++; return { cooled: 0, kept: 0 } } }
  const h = await boot({ path: tempStorePath() })
  t.teardown(() => h.dispose())
  let beat: ReturnType<typeof registerHeartbeat>
  const fiber = await h.ctx.plugin({ name: 'beat', apply: (ctx) => { beat = mutantBeat(ctx, () => fake as never, resolveConfig({ layers: { ...resolveConfig().layers, heartbeatMinutes: 1 } })) } })
  await fiber.dispose()
  await beat!.tick()
  t.equal(calls, 1, 'red: it ran after dispose')
})

t.test('arbitration over L3 facts (spec §7.7): a later fact wins only where it names the old value', async (t) => {
  const { recallBlocks } = await import('../../lib/recall/recall.ts')
  let clock = T0
  const store = new BlockStore(tempStorePath('arbitration'), { now: () => (clock += 1_000) })
  t.teardown(() => store.close())
  store.commit({ text: 'billing|服务端口=13010', source: 'distill', semanticType: 'fact' })
  store.commit({ text: 'billing|服务端口=13011', source: 'distill', semanticType: 'fact' })
  const both = recallBlocks(store, 'billing 服务端口').map((h) => h.text)
  t.ok(both.includes('billing|服务端口=13010') && both.includes('billing|服务端口=13011'), 'a newer value alone voids nothing')
  store.commit({ text: 'billing 服务端口从 13011 改为 13012' })
  const after = recallBlocks(store, 'billing 服务端口').map((h) => h.text)
  t.notOk(after.includes('billing|服务端口=13011'), 'the fact whose value was explicitly changed leaves recall')
  t.ok(after.includes('billing|服务端口=13010'), 'the one not named stays')
})
