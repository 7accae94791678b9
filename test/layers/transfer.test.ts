/**
 * Layers through export and import (`lib/store/transfer.ts`): each block's layer and cooling
 * state, the origin rows of captured blocks and the `derived_from` edges of distilled facts come
 * back exactly; a version-1 export (before layers) still imports, every block a stable note; the
 * import's secrets policy applies to captured text and to the origin labels alike.
 */
import t from 'tap'
import { coolTick, type CoolingOptions } from '../../lib/kernel/layers/cooling.ts'
import { DERIVED_FROM, type CapturePiece } from '../../lib/store/layers.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { EXPORT_VERSION, exportJsonl, importJsonl, type ExportCounts } from '../../lib/store/transfer.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1, 6, 0)
const RULE: CoolingOptions = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 50 }
const TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`

function piece(text: string, seq: number, sessionId = 's1'): CapturePiece {
  return { text, origin: { sessionId, seq, eventType: 'user/message', role: 'user', eventTime: T0 + seq, compactionId: 'c1' } }
}

/** A store with one cooled block (facts, edges), one undistilled (attempt 1), one still cold, and a note. */
async function layered(secrets: 'redact' | 'allow' = 'redact'): Promise<BlockStore> {
  const path = tempStorePath('layers-src')
  const first = new BlockStore(path, { now: () => T0, secrets })
  first.layers.capture([piece('记一下：billing 服务端口 13010。', 1), piece('好的，我们继续。', 2)], () => 'compaction:user')
  first.close()
  const store = new BlockStore(path, { secrets })
  await coolTick(store, T0 + 73 * HOUR, RULE, 'p')
  store.layers.capture([piece('redis 在 10.8.0.12 上', 3, 's2')], () => 'compaction:user')
  store.commit({ text: 'a saved note: grafana 3000' })
  return store
}

interface Snapshot {
  states: Record<string, unknown>
  origins: unknown[]
  derived: string[]
}

function snapshot(store: BlockStore): Snapshot {
  const states: Record<string, unknown> = {}
  for (const block of store.allBlocks()) states[block.id] = store.layers.stateOf(block.id)
  return {
    states,
    origins: [...store.layers.allOrigins()],
    derived: [...store.allEdges()].filter((e) => e.type === DERIVED_FROM).map((e) => `${e.sourceId}→${e.targetId}`).sort(),
  }
}

t.test('layers, cooling state, origins and derived_from edges survive export and import; a second import changes nothing', async (t) => {
  const src = await layered()
  const counts: ExportCounts = { blocks: 0, edges: 0 }
  const lines = [...exportJsonl(src, counts)]
  const before = snapshot(src)
  src.close()
  t.equal(JSON.parse(lines[0]!).version, EXPORT_VERSION)
  t.equal(counts.origins, 3, 'every origin row is exported')
  t.ok(before.derived.length >= 1, 'the source has derived_from edges')
  const kinds = new Set(Object.values(before.states).map((s) => JSON.stringify(s)))
  t.ok(kinds.size >= 3, 'the source has stable, distilled, undistilled and cold blocks')
  const dst = new BlockStore(tempStorePath('layers-dst'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, lines)
  t.equal(result.failure, undefined)
  t.equal(result.originsCreated, 3)
  t.same(snapshot(dst), before, 'the same layers, cooling states, origins and derived_from edges')
  const again = await importJsonl(dst, lines)
  t.same([again.originsCreated, again.originsExisting, again.blocksCreated], [undefined, 3, 0], 'idempotent')
  t.same(snapshot(dst), before)
})

t.test('a version-1 export (before layers) still imports: every block a stable note, no origins', async (t) => {
  const src = await layered()
  const lines = [...exportJsonl(src)]
  src.close()
  const v1 = lines.filter((l) => !l.includes('"record":"origin"')).map((l, i) => {
    const record = JSON.parse(l) as Record<string, unknown>
    if (i === 0) record.version = 1
    for (const key of ['layer', 'coolState', 'coolAttempts', 'coolNextAt']) delete record[key]
    return JSON.stringify(record)
  })
  const dst = new BlockStore(tempStorePath('layers-v1'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, v1)
  t.equal(result.failure, undefined)
  t.same(dst.layers.stats(), { stable: result.blocksCreated, cold: 0, captured: 0, undistilled: 0 })
})

t.test('merging: a block cold here and distilled in the file becomes stable; stable never goes back to cold', async (t) => {
  const src = await layered()
  const lines = [...exportJsonl(src)]
  src.close()
  const dst = new BlockStore(tempStorePath('layers-merge'), { now: () => T0 })
  t.teardown(() => dst.close())
  const { ids: [needle] } = dst.layers.capture([piece('记一下：billing 服务端口 13010。', 1)], () => 'compaction:user')
  const cold = new BlockStore(dst.path) // a stable copy of the other cold block, to see it is not made cold again
  cold.commit({ text: 'redis 在 10.8.0.12 上' })
  const redis = cold.commit({ text: 'redis 在 10.8.0.12 上' }).id
  cold.close()
  await importJsonl(dst, lines)
  t.equal(dst.layers.layerOf(needle!), 'stable', 'distilled in the file: stable here too')
  t.equal(dst.layers.layerOf(redis), 'stable', 'a note here stays a note although the file has it cold')
})

t.test('bad layer fields and orphan origins are refused with their line', async (t) => {
  const src = await layered()
  const lines = [...exportJsonl(src)]
  src.close()
  const at = lines.findIndex((l) => l.includes('"record":"block"'))
  const origin = lines.find((l) => l.includes('"record":"origin"'))!
  for (const [label, line, message] of [
    ['layer', lines[at]!.replace(/"layer":"\w+"/, '"layer":"warm"'), /block field layer must be "stable" or "cold", not "warm"/],
    ['seq', origin.replace(/"seq":\d+/, '"seq":-1'), /origin field seq must be a non-negative integer/],
    ['orphan', origin.replace(/"blockId":"blk_[0-9a-f]+"/, '"blockId":"blk_000000000000000000000000"'), /no block blk_000000000000000000000000/],
    ['label', origin.replace(/"role":"user"/, '"role":"us\\ner"'), /origin field role contains a line break/],
  ] as const) {
    const dst = new BlockStore(tempStorePath(`layers-bad-${label}`))
    const result = await importJsonl(dst, [...lines.slice(0, at), ...(label === 'layer' ? [line] : lines.slice(at).filter((l) => !l.includes('"record":"origin"'))), ...(label === 'layer' ? [] : [line])])
    t.match(result.failure?.message, message, label)
    dst.close()
  }
})

t.test('the import\'s secrets policy: captured text and origin labels are refused, masked or kept', async (t) => {
  const src = new BlockStore(tempStorePath('layers-secret'), { secrets: 'allow', now: () => T0 })
  src.layers.capture([piece(`deploy token ${TOKEN} for billing`, 1), piece('billing 服务端口 13010', 2, `session ${TOKEN}`)], () => 'compaction:user')
  const lines = [...exportJsonl(src)]
  src.close()
  const refuse = new BlockStore(tempStorePath('layers-secret-refuse'))
  const refused = await importJsonl(refuse, lines)
  t.match(refused.failure?.message, /credentials/, 'refuse: stops at the first credential')
  refuse.close()
  const redact = new BlockStore(tempStorePath('layers-secret-redact'))
  t.teardown(() => redact.close())
  const masked = await importJsonl(redact, lines, { secrets: 'redact' })
  t.equal(masked.failure, undefined)
  const origins = [...redact.layers.allOrigins()]
  t.equal(origins.length, 2)
  t.notOk(JSON.stringify(origins).includes(TOKEN), 'no origin label keeps the token')
  for (const o of origins) t.equal(redact.layers.layerOf(o.blockId), 'cold', 'each origin names a stored block (a masked block under its new id)')
  t.ok(masked.redacted?.length === 1, 'the captured text was masked and renamed')
  const allow = new BlockStore(tempStorePath('layers-secret-allow'), { secrets: 'allow' })
  t.teardown(() => allow.close())
  await importJsonl(allow, lines, { secrets: 'allow' })
  t.ok(JSON.stringify([...allow.layers.allOrigins()]).includes(TOKEN), 'allow keeps the export as it was')
})

t.test('mutation: without restoring the layer an imported cold block arrives as a note', async (t) => {
  const m = mutant({ file: 'store/transfer.ts', from: 'state.secrets, record.scopes, record.state)', to: 'state.secrets, record.scopes)' })
  t.teardown(() => m.remove())
  const mod = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  const { BlockStore: MutantStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const src = await layered()
  const lines = [...exportJsonl(src)]
  const before = snapshot(src)
  src.close()
  const dst = new MutantStore(tempStorePath('layers-mutant'))
  t.teardown(() => dst.close())
  await mod.importJsonl(dst as never, lines)
  t.notSame(snapshot(dst as never).states, before.states, 'red: the layers are lost')
})

t.test('mutation: without following a masked block\'s new id its origin is refused', async (t) => {
  const m = mutant({ file: 'store/transfer.ts', from: 'blockId: renamed(state, record.origin.blockId)', to: 'blockId: record.origin.blockId' })
  t.teardown(() => m.remove())
  const mod = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  const { BlockStore: MutantStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const src = new BlockStore(tempStorePath('layers-secret-m'), { secrets: 'allow', now: () => T0 })
  src.layers.capture([piece(`deploy token ${TOKEN} for billing`, 1)], () => 'compaction:user')
  const lines = [...exportJsonl(src)]
  src.close()
  const dst = new MutantStore(tempStorePath('layers-secret-mdst'))
  t.teardown(() => dst.close())
  const result = await mod.importJsonl(dst as never, lines, { secrets: 'redact' })
  t.match(result.failure?.message, /no block/, 'red: the origin points at the unmasked id')
})
