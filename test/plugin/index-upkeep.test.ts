/**
 * The host's idle index upkeep (lib/plugin/index-upkeep.ts) in the real agent loop with a scripted
 * model: while a turn is in flight no slice runs; once the turns are over and the store quiet, the
 * index is merged into one segment; an index with few segments is left alone until writes push it
 * to the threshold again; one run at a time. Mutation checks: without the "not during a turn" guard
 * a slice runs mid-turn; without the single-flight guard a second run merges beside the first.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { GenerateOptions, StreamChunk } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import type { IndexUpkeep, UpkeepTiming } from '../../lib/plugin/index-upkeep.ts'
import { registerIndexUpkeep } from '../../lib/plugin/index-upkeep.ts'
import { ftsStructure } from '../../lib/store/fts-structure.ts'
import { UPKEEP_DUE_SEGMENTS } from '../../lib/store/fts-upkeep.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, reply, tempStorePath, userMessage, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** A store whose index has at least `UPKEEP_DUE_SEGMENTS` segments: one commit per note. */
function segmentedStore(label: string): string {
  const path = tempStorePath(label)
  const store = new BlockStore(path)
  for (let i = 0; store.ftsSegments() < UPKEEP_DUE_SEGMENTS; i++) store.commit({ text: `deploy note ${i}: service s${i} on port ${30000 + i}, 部署在 机房${i % 5}` })
  store.close()
  return path
}

/** Boots the loop on `path` (the plugin's own timer off) with an upkeep registered by `register`; the model's first reply waits for `release`. */
async function setup(path: string, register: (ctx: Context, service: () => Context['stablemem'], timing: UpkeepTiming) => IndexUpkeep) {
  let upkeep!: IndexUpkeep
  const consumer = { name: 'upkeep-probe', inject: ['stablemem'], apply: (ctx: Context) => { upkeep = register(ctx, () => ctx.stablemem, { pollMs: 3_600_000, quietMs: 0 }) } }
  const h: Harness = await boot({ path, indexUpkeep: false }, [], { extra: [{ plugin: consumer }] })
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  const adapter = h.adapter as unknown as { stream(options: GenerateOptions): AsyncIterable<StreamChunk> }
  const original = adapter.stream.bind(h.adapter)
  let asked = 0
  adapter.stream = async function * (options) {
    asked++
    await gate
    yield * original(options)
  }
  /** Resolves once the model was asked (the turn is in flight, waiting for its answer). */
  const asking = async () => { while (asked === 0) await new Promise((resolve) => setTimeout(resolve, 5)) }
  return { h, upkeep: () => upkeep, release, asking }
}

/** A store of several thousand notes written in batches, then single commits up to the threshold: merging it takes several slices. */
function largeSegmentedStore(label: string): string {
  const path = tempStorePath(label)
  const store = new BlockStore(path)
  for (let b = 0; b < 12; b++) {
    store.commitMany(Array.from({ length: 400 }, (_, i) => ({ text: `batch ${b} note ${i}: host h${b * 400 + i} serves ${['billing', 'search', 'mail', 'queue'][i % 4]} on port ${20000 + b * 400 + i}，部署在机房${i % 7}` })))
  }
  for (let i = 0; store.ftsSegments() < UPKEEP_DUE_SEGMENTS; i++) store.commit({ text: `single note ${i}: cache c${i} evicts after ${i * 7} s` })
  store.close()
  return path
}

const segments = (h: Harness) => h.ctx.stablemem.ftsSegments() ?? -1

t.test('no slice while a turn is in flight; merged to one segment once idle; left alone below the threshold', async (t) => {
  const path = segmentedStore('host-upkeep')
  const { h, upkeep, release, asking } = await setup(path, registerIndexUpkeep)
  t.teardown(() => h.dispose())
  h.script(reply('ok'), reply('ok again'))
  const before = segments(h)
  t.ok(before >= UPKEEP_DUE_SEGMENTS, `${before} segments`)
  const agent = h.ctx.agentLoop.create(SessionId('s-upkeep'), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('what port does s3 listen on?'))
  await asking()
  // The model is answering: the turn is in flight.
  const during = await upkeep().run()
  t.same(during, { slices: 0, stop: 'turn' }, 'no slice during the turn')
  t.equal(segments(h), before, 'the index is untouched mid-turn')
  release()
  await agent.whenIdle()
  t.same(h.errors, [])
  const after = await upkeep().run()
  t.equal(after.stop, 'merged')
  t.ok(after.slices >= 1)
  t.equal(segments(h), 1, 'one segment once idle')
  t.same(await upkeep().run(), { slices: 0, stop: 'not-due' }, 'merged: nothing to do')
  // New writes: a few leave it alone, enough to reach the threshold resume the upkeep.
  for (let i = 0; segments(h) < 3; i++) await h.ctx.stablemem.commit({ text: `later note ${i}: queue q${i} holds ${i * 11} jobs` })
  t.same(await upkeep().run(), { slices: 0, stop: 'not-due' }, `${segments(h)} segments: below the threshold`)
  for (let i = 0; segments(h) < UPKEEP_DUE_SEGMENTS; i++) await h.ctx.stablemem.commit({ text: `more note ${i}: cache c${i} evicts after ${i * 7} s` })
  t.equal((await upkeep().run()).stop, 'merged', 'resumed after new writes')
  t.equal(segments(h), 1)
  agent.followup(userMessage('and s4?'))
  await agent.whenIdle()
  t.same(h.errors, [], 'turns run on after the upkeep')
})

t.test('small segments beside a large one merge with each other; the large one is not rewritten', async (t) => {
  const path = tempStorePath('host-upkeep-levels')
  const store = new BlockStore(path)
  for (let b = 0; b < 30; b++) store.commitMany(Array.from({ length: 200 }, (_, i) => ({ text: `bulk note ${b}-${i}: host h${i % 89} serves ${b * 200 + i} users from 机房${i % 9}` })))
  store.upkeep()
  const largest = () => {
    const db = new DatabaseSync(path, { readOnly: true })
    try { return ftsStructure(db, 'blocks_fts').levels.at(-1)! } finally { db.close() }
  }
  const big = largest()
  for (let i = 0; store.ftsSegments() < UPKEEP_DUE_SEGMENTS; i++) store.commit({ text: `single note ${i}: job j${i} ran ${i * 3} min` })
  t.equal(store.mergeDue(false), 'levels', 'only small segments beside the large one')
  store.close()
  const { h, upkeep } = await setup(path, registerIndexUpkeep)
  t.teardown(() => h.dispose())
  const run = await upkeep().run()
  t.equal(run.stop, 'merged')
  const left = segments(h)
  t.ok(left >= 2 && left < UPKEEP_DUE_SEGMENTS, `${left} segments left: the small ones merged with each other`)
  t.same(largest(), big, 'the large segment is where it was, with the same pages: not rewritten')
})

t.test('a quiet period after a turn: no slice right after it ends; none after dispose', async (t) => {
  const path = segmentedStore('host-upkeep-quiet')
  let upkeep!: IndexUpkeep
  const consumer = { name: 'upkeep-quiet', inject: ['stablemem'], apply: (ctx: Context) => { upkeep = registerIndexUpkeep(ctx, () => ctx.stablemem, { pollMs: 3_600_000, quietMs: 60_000 }) } }
  const h = await boot({ path, indexUpkeep: false }, [reply('ok')], { extra: [{ plugin: consumer }] })
  await h.turn('hello')
  t.same(await upkeep.run(), { slices: 0, stop: 'quiet' })
  await h.dispose()
  t.same(await upkeep.run(), { slices: 0, stop: 'disposed' }, 'a tick after dispose does nothing')
})

t.test('mutation check: without the turn guard a slice runs mid-turn', async (t) => {
  const m = mutant({ file: 'plugin/index-upkeep.ts', from: "if (inFlight.size > 0) return 'turn'", to: '' })
  t.teardown(() => m.remove())
  const { registerIndexUpkeep: mutated } = await m.load<typeof import('../../lib/plugin/index-upkeep.ts')>('plugin/index-upkeep.ts')
  const path = segmentedStore('host-upkeep-mutant')
  const { h, upkeep, release, asking } = await setup(path, mutated)
  t.teardown(() => h.dispose())
  h.script(reply('ok'))
  const agent = h.ctx.agentLoop.create(SessionId('s-mutant'), { provider: 'mock', model: 'mock-1' })
  agent.followup(userMessage('what port does s3 listen on?'))
  await asking()
  const during = await upkeep().run()
  t.not(during.stop, 'turn', 'the mutant does not see the turn')
  t.ok(during.slices > 0, `and ran ${during.slices} slice(s) during it`)
  release()
  await agent.whenIdle()
})

t.test('one run at a time: a second run while the first yields between slices does nothing. Mutation: without the guard both merge', async (t) => {
  /** Two runs started together on a store due for upkeep: what each did. */
  const twoRuns = async (register: typeof registerIndexUpkeep, label: string) => {
    const { h, upkeep } = await setup(largeSegmentedStore(label), register)
    t.teardown(() => h.dispose())
    const [first, second] = await Promise.all([upkeep().run(), upkeep().run()])
    return { first, second, segments: segments(h) }
  }
  const real = await twoRuns(registerIndexUpkeep, 'host-upkeep-once')
  t.equal(real.first.stop, 'merged')
  t.ok(real.first.slices > 1, `the first run yielded between ${real.first.slices} slices`)
  t.same(real.second, { slices: 0, stop: 'running' }, 'the second run saw the first one running')
  t.equal(real.segments, 1)
  const m = mutant({ file: 'plugin/index-upkeep.ts', from: "if (running) return { slices: 0, stop: 'running' }", to: '' })
  t.teardown(() => m.remove())
  const { registerIndexUpkeep: mutated } = await m.load<typeof import('../../lib/plugin/index-upkeep.ts')>('plugin/index-upkeep.ts')
  const both = await twoRuns(mutated, 'host-upkeep-twice')
  t.not(both.second.stop, 'running', 'without the guard the second run does not wait its turn')
})
