/**
 * Compaction capture (L1 → L2): what is kept, what never is, and that hostile regions stay
 * bounded and never break the turn. The loop tests run dsh's real compaction; the extraction
 * tests feed `extractPieces` events shaped like dsh's.
 */
import t from 'tap'
import { CallId, createUserMessage } from '@deepseek-ai/dsh-llm'
import { chunkText } from '../../lib/kernel/layers/chunk.ts'
import { extractPieces, looksBinary, type EventLike, type ExtractOptions } from '../../lib/kernel/layers/extract.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { bootWindowed, filler } from '../helpers/windowed.ts'

/** Markers of every kind of injected text a real batch holds (see `realContext`) and of dsh's checkpoint. */
const INJECTED = ['Current runtime context', 'skills are available', 'E2E reminder', '[stablemem]', 'compacted-summary', 'Primary Request', 'Approval policy']

async function longRun(path: string, module?: Parameters<typeof bootWindowed>[0]['module']) {
  const w = await bootWindowed({ contextWindow: 3_000, plugin: { path }, module })
  await w.say('记住：billing 服务端口 13010。')
  for (let i = 0; i < 14; i++) await w.say(filler(i, 600))
  // A question whose recall message (and earlier ones) will itself be compacted later.
  await w.say('billing 服务端口是多少？')
  for (let i = 14; i < 24; i++) await w.say(filler(i, 600))
  return w
}

t.test('never captured: runtime-context snapshots, skill catalogs, other plugins\' notes, our own recall, checkpoints', async (t) => {
  const path = tempStorePath('injected')
  const w = await longRun(path)
  t.ok(w.adapter.compactions() >= 3, `several compactions (${w.adapter.compactions()}), so checkpoints and recall messages were shadowed too`)
  const events = w.agent.session.events
  t.ok(events.some((e) => e.type === 'user/message' && (e.data.source as { plugin?: string }).plugin === 'dsh-stablemem'), 'recall messages were in the history')
  await w.dispose()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const texts = [...store.allBlocks()].map((b) => b.text)
  t.ok(texts.some((x) => x.includes('13010')), 'the needle is captured')
  for (const marker of INJECTED) t.notOk(texts.some((x) => x.includes(marker)), `nothing with «${marker}» is captured`)
})

t.test('mutation: admitting every user-role message captures injected context', async (t) => {
  const m = mutant({ file: 'kernel/layers/extract.ts', from: "!options.humanKinds.has(source.kind) || source.kind === 'plugin'", to: 'false' })
  t.teardown(() => m.remove())
  const path = tempStorePath('injected-mutant')
  const w = await longRun(path, await m.load('index.ts'))
  await w.dispose()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const texts = [...store.allBlocks()].map((b) => b.text)
  t.ok(INJECTED.some((marker) => texts.some((x) => x.includes(marker))), 'red: injected text was captured')
})

t.test('a region seen twice (re-emitted, as after a resume) writes nothing new', async (t) => {
  const path = tempStorePath('twice')
  const w = await longRun(path)
  const summaries = w.agent.session.events.filter((e) => e.type === 'compaction/summary')
  t.ok(summaries.length > 0)
  const counts = () => {
    const store = new BlockStore(path)
    try { return { ...store.layers.stats(), edges: store.stats().edges, blocks: store.stats().blocks } } finally { store.close() }
  }
  const before = counts()
  for (const event of summaries) w.ctx.emit('session/event', w.agent.session, event)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(counts(), before, 'same blocks, same origins')
  const stats = await w.ctx.stablemem.stats()
  t.equal(stats.capture.failures, 0)
  t.ok(stats.capture.regions >= summaries.length * 2, 'every region was processed')
  await w.dispose()
})

t.test('a broken store never breaks the turn that compacts: the failure is counted and logged', async (t) => {
  const m = mutant({ file: 'store/layers.ts', from: "this.host.stmt('layers.origin', `INSERT INTO block_origins", to: "this.host.stmt('layers.origin', `INSERT INTO no_such_table" })
  t.teardown(() => m.remove())
  const w = await bootWindowed({ contextWindow: 3_000, plugin: { path: tempStorePath('broken') }, module: await m.load('index.ts') })
  await w.say('记住：billing 服务端口 13010。')
  for (let i = 0; i < 10; i++) await w.say(filler(i, 600))
  t.ok(w.adapter.compactions() > 0)
  t.same(w.errors, [], 'no agent error')
  const stats = await w.ctx.stablemem.stats()
  t.ok(stats.capture.failures > 0, `failures counted (${stats.capture.failures})`)
  t.equal(w.adapter.conversation().length, 11, 'every turn reached the model')
  await w.dispose()
})

const OPTIONS: ExtractOptions = {
  sessionId: 's1', compactionId: 'c1', humanKinds: new Set(['user']), ownTools: new Set(['stablemem_commit', 'stablemem_recall']),
  toolResultChars: 4_000, maxPieceChars: 1_000,
}

let seq = 0
function user(text: string, source: object | null = { kind: 'user' }): EventLike {
  const data = source === null ? { id: 'u', role: 'user', content: [{ type: 'text', text }] } : createUserMessage({ content: [{ type: 'text', text }], source: source as never })
  return { type: 'user/message', seq: seq++, time: 1_000 + seq, data }
}
function assistant(blocks: object[]): EventLike {
  return { type: 'assistant/message', seq: seq++, time: 1_000 + seq, data: { turn: 1, step: 1, message: { id: 'm', role: 'assistant', content: blocks, source: { kind: 'model' } } } }
}
function toolResult(callId: string, text: string): EventLike {
  return { type: 'tool/result', seq: seq++, time: 1_000 + seq, data: { turn: 1, step: 1, message: { id: 't', role: 'user', source: { kind: 'tool', callId }, content: [{ type: 'tool-result', toolCallId: CallId(callId), content: [{ type: 'text', text }] }] } } }
}

t.test('extraction: person, assistant text and tool results are kept; reasoning, tool arguments, our tools and binary are not', async (t) => {
  const events = [
    user('billing 服务端口 13010'),
    user('snapshot 8080', { kind: 'plugin', plugin: '@deepseek-ai/dsh-system-prompt', form: 'snapshot' }),
    user('catalog', { kind: 'skill-catalog' }),
    user('no source at all', null),
    assistant([{ type: 'reasoning', text: 'SECRET THOUGHT' }, { type: 'text', text: '好的，已记下。' }, { type: 'tool-call', id: 'c1', name: 'read_file', arguments: '{"path":"/etc/ARGS"}' }]),
    toolResult('c1', 'listen 10.3.7.9:8443'),
    assistant([{ type: 'tool-call', id: 'c2', name: 'stablemem_recall', arguments: '{}' }]),
    toolResult('c2', '[1] blk_x > recalled note'),
    toolResult('c3', '\u0000\u0001\u0002\ufffd'.repeat(100) + 'PNG'),
  ]
  const pieces = extractPieces(events, OPTIONS)
  t.same(pieces.map((p) => [p.origin.role, p.text]), [
    ['user', 'billing 服务端口 13010'],
    ['assistant', '好的，已记下。'],
    ['tool', 'read_file: listen 10.3.7.9:8443'],
  ])
  t.same(pieces[0]!.origin, { sessionId: 's1', seq: events[0]!.seq, eventType: 'user/message', role: 'user', eventTime: events[0]!.time, compactionId: 'c1' })
})

t.test('hostile regions are bounded: 10 MB of tool output, many-line text, a long message', async (t) => {
  const huge = 'x'.repeat(10 * 1024 * 1024)
  const pieces = extractPieces([toolResult('c9', huge)], OPTIONS)
  t.ok(pieces.length <= Math.ceil(OPTIONS.toolResultChars / OPTIONS.maxPieceChars), `${pieces.length} pieces`)
  t.ok(pieces.every((p) => p.text.length <= OPTIONS.maxPieceChars))
  const long = extractPieces([user('端口 13010。'.repeat(2_000))], OPTIONS)
  t.ok(long.every((p) => p.text.length <= OPTIONS.maxPieceChars && p.text.endsWith('。')), 'a long message is cut at sentence ends')
  t.ok(looksBinary('\u0000'.repeat(20) + 'abc'))
  t.notOk(looksBinary('普通的中文文本 with tabs\tand\nnewlines'))
})

t.test('chunkText: never more than max, never splits a surrogate pair, keeps every character', async (t) => {
  const text = '😀'.repeat(300) + ' billing 13010. ' + 'a'.repeat(700)
  for (const max of [2, 3, 17, 100, 999]) {
    const chunks = chunkText(text, max)
    t.ok(chunks.every((c) => c.length <= max && !/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(c)), `max ${max}`)
    t.equal(chunks.join('').replace(/\s/g, ''), text.replace(/\s/g, ''), `max ${max}: nothing lost`)
  }
})

t.test('capture through the store: secrets policy, dedupe with an existing note, origins once', async (t) => {
  const store = new BlockStore(tempStorePath('policy'), { secrets: 'refuse' })
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务端口 13010', source: 'user' })
  const origin = { sessionId: 's', seq: 1, eventType: 'user/message', role: 'user', eventTime: 5, compactionId: 'c' }
  const pieces = [
    { text: 'billing 服务端口 13010', origin },
    { text: 'my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN', origin: { ...origin, seq: 2 } },
    { text: 'nginx 配置 /etc/nginx/nginx.conf', origin: { ...origin, seq: 3 } },
  ]
  const first = store.layers.capture(pieces, () => 'compaction:user')
  t.equal(first.created, 1, 'one new block')
  t.equal(first.existing, 1, 'the saved note is reused')
  t.equal(first.refused.length, 1, 'the credential is refused under secrets: refuse')
  t.equal(first.origins, 2)
  t.equal(store.layers.layerOf(first.ids[0]!), 'cold')
  t.equal(store.get(first.ids[0]!)!.source, 'compaction:user', 'written with the source capture gives')
  const note = [...store.allBlocks()].find((b) => b.text === 'billing 服务端口 13010')!
  t.equal(note.source, 'user', 'the note keeps its provenance')
  t.equal(store.layers.layerOf(note.id), 'stable', 'and its layer: one holder layer per block')
  const again = store.layers.capture(pieces, () => 'compaction:user')
  t.same({ created: again.created, origins: again.origins }, { created: 0, origins: 0 }, 'idempotent')
})
