/**
 * `dsh-stablemem/compaction` in the real agent loop with dsh's token meter: dsh's basic
 * compaction, plus one line in each checkpoint saying how many messages of the span moved to
 * memory (the number capture actually kept) and which tool searches them. Summaries still
 * shrink: a line that would bring the checkpoint near the size of the span is left out.
 */
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import type { Config } from '../../lib/config.ts'
import { SHRINK_MARGIN, StableMemCompaction, memoryLine } from '../../lib/kernel/compaction.ts'
import { injected, tempStorePath, textOf, userMessage } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { bootWindowed, filler, requestHas, type Windowed } from '../helpers/windowed.ts'

interface SummaryEvent {
  compactionId: string
  summary: Array<{ type: string, text?: string }>
  shadowedTokenCount: number
}

function summaries(w: Windowed): SummaryEvent[] {
  return w.agent.session.events.filter((e) => e.type === 'compaction/summary').map((e) => e.data as unknown as SummaryEvent)
}

function summaryText(event: SummaryEvent): string {
  return event.summary.map((b) => b.text ?? '').join('\n')
}

/** Says the needle, then filler until compaction has run `compactions` times. */
async function converse(w: Windowed, compactions = 2, turns = 60): Promise<void> {
  await w.say('记住：billing 服务端口 13010。')
  for (let i = 0; i < turns && summaries(w).length < compactions; i++) await w.say(filler(i, 600))
}

t.test('with the memory: each checkpoint says how many messages moved to memory (as many as capture kept) and names stablemem_recall', async (t) => {
  const path = tempStorePath('compaction-engine')
  const w = await bootWindowed({ contextWindow: 3_000, engine: StableMemCompaction, plugin: { path } })
  t.teardown(() => w.dispose())
  await converse(w)
  t.same(w.errors, [], 'no agent errors')
  const events = summaries(w)
  t.ok(events.length >= 2, `compaction ran (${events.length}×)`)
  const db = new DatabaseSync(path, { readOnly: true })
  t.teardown(() => db.close())
  for (const event of events) {
    const kept = Number((db.prepare('SELECT count(DISTINCT seq) AS n FROM block_origins WHERE compaction_id = ?').get(event.compactionId) as { n: number }).n)
    t.ok(kept > 0, `capture kept ${kept} messages of compaction ${event.compactionId}`)
    t.ok(summaryText(event).includes(memoryLine(kept, 'stablemem_recall')), 'the checkpoint names that number and the tool')
  }
  const later = w.adapter.conversation().at(-1)!
  t.ok(requestHas(later, memoryLine(Number((db.prepare('SELECT count(DISTINCT seq) AS n FROM block_origins WHERE compaction_id = ?').get(events.at(-1)!.compactionId) as { n: number }).n), 'stablemem_recall')), 'the model sees the line in its checkpoint')
  await w.say('billing 服务端口是多少？')
  t.match(injected(w.adapter.conversation().at(-1)!).map(textOf).at(-1), /13010/, 'and recall still brings the needle back')
})

t.test('a renamed recall tool is the one named', async (t) => {
  const w = await bootWindowed({ contextWindow: 3_000, engine: StableMemCompaction, plugin: { path: tempStorePath('compaction-engine-tool'), toolName: 'memo_commit' } })
  t.teardown(() => w.dispose())
  await converse(w, 1)
  t.match(summaryText(summaries(w)[0]!), /can be searched with the memo_recall tool\.$/)
})

t.test('without the memory (no ctx.stablemem, or capture off) the engine is dsh\'s basic compaction: no line', async (t) => {
  for (const plugin of [false, { path: tempStorePath('compaction-engine-off'), layers: { capture: false } as Config['layers'] }] as Array<false | Partial<Config>>) {
    const w = await bootWindowed({ contextWindow: 3_000, engine: StableMemCompaction, plugin })
    await converse(w, 1)
    const events = summaries(w)
    t.ok(events.length > 0, 'compaction ran')
    t.notMatch(summaryText(events[0]!), /\[stablemem\]/, 'no line')
    t.same(w.errors, [])
    await w.dispose()
  }
})

/** A summary just under the span it replaces: room for dsh's framing, not for the line as well. */
function tightSummary(w: () => Windowed): (request: GenerateOptions) => string {
  return (request) => {
    const meter = w().ctx.tokenMeter
    const span = request.messages.slice(0, -1).reduce((sum, m) => sum + meter.estimateMessage(m), 0)
    const target = span - 100
    let text = 'summary:'
    for (let i = 0; meter.estimateMessage(userMessage(text)) < target; i++) text += ` point ${'abcdefghij'[i % 10]}${'klmnopqrst'[Math.floor(i / 10) % 10]}`
    return text
  }
}

t.test('summaries still shrink: a line that would bring the checkpoint within the margin of the span is left out', async (t) => {
  t.ok(SHRINK_MARGIN > 100, 'the margin exceeds the room this summary leaves')
  let w: Windowed | undefined
  w = await bootWindowed({ contextWindow: 3_000, engine: StableMemCompaction, plugin: { path: tempStorePath('compaction-engine-tight') }, summary: tightSummary(() => w!) })
  t.teardown(() => w!.dispose())
  await converse(w, 1)
  const events = summaries(w)
  t.ok(events.length > 0, 'compaction succeeded')
  t.notMatch(summaryText(events[0]!), /\[stablemem\]/, 'without the line')
  // The margin covers dsh's framing: the checkpoint message minus the summary it frames.
  const events2 = w.agent.session.events
  const at = events2.findIndex((e) => e.type === 'compaction/summary')
  const checkpoint = events2.slice(at).find((e) => e.type === 'user/message')!.data as unknown as Parameters<typeof w.ctx.tokenMeter.estimateMessage>[0]
  const framing = w.ctx.tokenMeter.estimateMessage(checkpoint) - w.ctx.tokenMeter.estimateMessage(userMessage(summaryText(events[0]!)))
  t.ok(framing > 0 && framing < SHRINK_MARGIN, `dsh's framing (${framing} tokens) is within the margin`)
})

t.test('mutation: without the shrink guard the line makes compaction fail', async (t) => {
  const m = mutant({ file: 'kernel/compaction.ts', from: 'if (this.tokensOf(summary) + SHRINK_MARGIN >= ', to: 'if (false && this.tokensOf(summary) + SHRINK_MARGIN >= ' })
  t.teardown(() => m.remove())
  const { StableMemCompaction: Mutant } = await m.load<typeof import('../../lib/kernel/compaction.ts')>('kernel/compaction.ts')
  let w: Windowed | undefined
  w = await bootWindowed({ contextWindow: 3_000, engine: Mutant, plugin: { path: tempStorePath('compaction-engine-mutant') }, summary: tightSummary(() => w!) })
  t.teardown(() => w!.dispose())
  await converse(w, 1, 12)
  t.equal(summaries(w).length, 0, 'red: no checkpoint was accepted')
})
