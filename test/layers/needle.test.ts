/**
 * Acceptance: a needle past the window, in the real agent loop with dsh's token meter and basic
 * compaction (3,000-token window, threshold .5). The needle is said once, filler follows until
 * compaction has taken it out of every request, then a question: with the plugin the recall
 * message carries it back (from the cold layer, labelled with its origin); without the plugin
 * nothing does.
 */
import t from 'tap'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import { BlockStore } from '../../lib/store/store.ts'
import { injected, tempStorePath, textOf } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { bootWindowed, filler, requestHas, type WindowedOptions } from '../helpers/windowed.ts'

const NEEDLE = 'billing 服务端口 13010'
const QUESTION = 'billing 服务端口是多少？'

interface Run {
  /** The last conversation request before the question: the needle must be gone from it. */
  beforeQuestion: GenerateOptions
  question: GenerateOptions
  compactions: number
  errors: unknown[]
  path: string | undefined
}

async function needleRun(options: Omit<WindowedOptions, 'contextWindow'>): Promise<Run> {
  const w = await bootWindowed({ contextWindow: 3_000, ...options })
  try {
    await w.say(`记住：${NEEDLE}。`)
    for (let i = 0; i < 40; i++) {
      await w.say(filler(i, 600))
      const last = w.adapter.conversation().at(-1)!
      if (w.adapter.compactions() > 0 && !requestHas(last, '13010')) break
    }
    const beforeQuestion = w.adapter.conversation().at(-1)!
    await w.say(QUESTION)
    return { beforeQuestion, question: w.adapter.conversation().at(-1)!, compactions: w.adapter.compactions(), errors: w.errors, path: (options.plugin || undefined)?.path }
  } finally {
    await w.dispose()
  }
}

t.test('with the plugin: the compacted needle comes back in the recall message, labelled as a turn of this session', async (t) => {
  const path = tempStorePath('needle')
  const run = await needleRun({ plugin: { path } })
  t.same(run.errors, [], 'no agent errors')
  t.ok(run.compactions > 0, `compaction ran (${run.compactions}×)`)
  t.notOk(requestHas(run.beforeQuestion, '13010'), 'the needle was out of the request before the question')
  // Earlier turns' recall messages stay in the history; the question's own is the last one.
  const recall = injected(run.question).map(textOf).at(-1)
  t.match(recall, /13010/, 'the recall message of the question holds the needle')
  t.match(recall, /\[\d{4}-\d\d-\d\d \d\d:\d\d · this session · user\]\n> 记住：billing 服务端口 13010/, 'labelled with its origin')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const stats = store.layers.stats()
  t.ok(stats.cold > 0 && stats.captured === stats.cold, `captured blocks are cold (${JSON.stringify(stats)})`)
})

t.test('without the plugin: the same run never shows the needle again', async (t) => {
  const run = await needleRun({ plugin: false })
  t.ok(run.compactions > 0)
  t.notOk(requestHas(run.question, '13010'), 'the question request does not contain the needle')
})

t.test('mutation: without the capture listener the needle is lost with the plugin too', async (t) => {
  const m = mutant({ file: 'kernel/layers/capture.ts', from: 'if (memory.unavailableReason() !== undefined) return', to: 'return' })
  t.teardown(() => m.remove())
  const run = await needleRun({ plugin: { path: tempStorePath('needle-mutant') }, module: await m.load('index.ts') })
  t.notOk(requestHas(run.question, '13010'), 'red without capture')
})

t.test('mutation: the session/event listener is the one capture path (without it the needle is lost)', async (t) => {
  const m = mutant({ file: 'kernel/layers/capture.ts', from: 'if (REGION_EVENTS.has(event.type)) capture(session as unknown as SessionLike, event)', to: '' })
  t.teardown(() => m.remove())
  const run = await needleRun({ plugin: { path: tempStorePath('needle-listener') }, module: await m.load('index.ts') })
  t.ok(run.compactions > 0)
  t.notOk(requestHas(run.question, '13010'), 'red without the listener')
})
