/**
 * Import in the bulk path's shape (issue 30, lib/store/import-batch.ts): a batch's index rows are
 * written after its block rows, a batch of `BULK_NOTES` new notes or more under the bulk index
 * options. Checked here: an import in one batch leaves the store exactly as the same file imported
 * in batches of 1,000, below the bulk threshold (blocks, layers, scopes, scenes, edges, supersede links, merges into notes
 * already there, what the index finds), the batch is one index segment and the option is back
 * when the call returns, and a line refused after its row was written takes its index row with it.
 * Mutation checks: without the bulk options, with the index rows written beside the block rows,
 * and without dropping a rolled-back line's queued index row.
 */
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { BULK_NOTES } from '../../lib/store/fts-bulk.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../../lib/store/transfer.ts'
import { hashSize, segments } from '../helpers/fts-index.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const SIZE = BULK_NOTES + 1_500
const T0 = 1_765_000_000_000

/** Distinct note `i`: enough distinct terms that the batch passes FTS5's default pending-terms hash more than once. */
function text(i: number): string {
  return `note ${i}: host h${i} port ${1024 + i} rack r${i % 17} owner u${(i * 7919) % 30011} tag t${(i * 104729) % 65521} 机房${i % 31} 服务${i % 997}`
}

/** An export of `SIZE` notes with scopes, scenes, cold blocks with cooling state, edges and a supersede link; some notes are also in `seeded`'s store. */
const lines: string[] = (() => {
  const src = new BlockStore(tempStorePath('import-bulk-src'), { now: () => T0 })
  src.commitMany(Array.from({ length: SIZE }, (_, i) => ({
    text: text(i), source: 'import-bulk',
    ...(i % 5 === 0 ? { scope: 'workspace:/srv/b' } : {}),
    ...(i % 7 === 0 ? { scene: `scene-${i % 3}` } : {}),
  })))
  const old = src.commit({ text: 'the build agent runs on host b7' }).id
  src.commit({ text: 'the build agent runs on host b9', supersedes: old })
  src.link({ sourceKind: 'block', sourceId: blockId(text(1)), targetKind: 'block', targetId: blockId(text(2)), type: 'related' })
  const out = [...exportJsonl(src)].map((line) => {
    const record = JSON.parse(line) as Record<string, unknown>
    if (record.record !== 'block' || typeof record.text !== 'string' || !record.text.startsWith('note 3')) return line
    return JSON.stringify({ ...record, layer: 'cold', coolState: 'undistilled', coolAttempts: 2, coolNextAt: T0 + 86_400_000, accessCount: 3, lastAccessAt: T0 + 5 })
  })
  src.close()
  return out
})()

/** A store already holding some of the file's notes (merged by the import, with other tags and times), its index merged into one segment. */
function seeded(Store: typeof BlockStore): { path: string, store: BlockStore } {
  const path = tempStorePath('import-bulk')
  const store = new Store(path, { now: () => T0 - 1_000 })
  store.commitMany(Array.from({ length: 40 }, (_, i) => ({ text: text(i * 97), source: 'earlier', scope: 'workspace:/srv/a' })))
  store.upkeep()
  return { path, store }
}

/** Everything an import writes, to compare two stores. */
function contents(store: BlockStore): unknown {
  const blocks = [...store.allBlocks()].sort((a, b) => a.id.localeCompare(b.id))
  return {
    blocks,
    states: blocks.map((b) => store.layers.stateOf(b.id)),
    scopes: blocks.map((b) => store.scopes.of(b.id)),
    scenes: blocks.filter((b) => b.scene !== '').length,
    edges: [...store.allEdges()].map((e) => JSON.stringify(e)).sort(),
    count: store.count(),
    found: ['"rack"', '"r5"', '"机房"', '"earlier"', '"agent"', '"h4095"', `"h${SIZE - 1}"`].map((m) => store.matchCount(m)),
  }
}

t.test('one batch leaves the store exactly as the same file imported in batches of 1,000 (below the bulk threshold)', async (t) => {
  const bulk = seeded(BlockStore)
  const small = seeded(BlockStore)
  t.teardown(() => { bulk.store.close(); small.store.close() })
  const a = await importJsonl(bulk.store, lines)
  const b = await importJsonl(small.store, lines, { batchLines: 1_000 })
  t.equal(a.failure, undefined)
  t.same(a, b, 'the same counts')
  t.equal(a.blocksMerged, 40, 'the notes already there are merged')
  t.same(contents(bulk.store), contents(small.store))
  t.same(bulk.store.integrityCheck(), ['ok'])
})

t.test('a bulk batch is one index segment, and the option is back when the call returns', async (t) => {
  const { path, store } = seeded(BlockStore)
  t.teardown(() => store.close())
  t.equal(segments(path), 1, 'the seeded store is one segment')
  await importJsonl(store, lines)
  t.equal(segments(path), 2, 'the batch added one segment')
  t.equal(hashSize(path), 1 << 20, "hashsize is FTS5's default again")
})

t.test('mutation check: without the bulk options the batch is several segments', async (t) => {
  const m = mutant({ file: 'store/import-batch.ts', from: 'if (queued.length >= BULK_NOTES) withBulkIndexing', to: 'if (false) withBulkIndexing' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { importJsonl: mutatedImport } = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  const { path, store } = seeded(Mutated)
  t.teardown(() => store.close())
  await mutatedImport(store as never, lines)
  t.ok(segments(path) > 2, `the mutated batch is ${segments(path) - 1} segments`)
})

t.test('mutation check: index rows written beside their block rows make many segments (each scene tag flushes the pending terms)', async (t) => {
  const m = mutant({ file: 'store/import-batch.ts', from: 'else this.queued.push([rowid, text])', to: 'else this.write(rowid, text)' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { importJsonl: mutatedImport } = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  const { path, store } = seeded(Mutated)
  t.teardown(() => store.close())
  await mutatedImport(store as never, lines)
  t.ok(segments(path) > 10, `the mutated batch is ${segments(path) - 1} segments`)
})

/**
 * A file whose third line is refused after its block row was written: S waits for X (later in the
 * file), and X names S as its successor, so adopting X as S's successor would close a loop.
 */
function loopingFile(): string[] {
  const s = 'the lease on host q1 renews hourly'
  const x = 'the lease on host q1 renews daily, wrote quokkaword'
  const block = (text: string, supersededBy: string) => JSON.stringify({
    record: 'block', id: blockId(text), text, source: '', scene: '', semanticType: '', createdAt: T0, updatedAt: T0, accessCount: 0, lastAccessAt: null, supersededBy,
  })
  return [block(s, blockId(x)), block(x, blockId(s))]
}

/** Imports the looping file, then one more note, into a fresh store of `Store`; what the index says of the refused line's words. */
async function refusedRow(Store: typeof BlockStore, importer: typeof importJsonl): Promise<{ failure?: number, refused: number, indexed: number, count: number }> {
  const store = new Store(tempStorePath('import-bulk-loop'))
  try {
    const result = await importer(store, loopingFile())
    await importer(store, [JSON.stringify({ record: 'block', id: blockId('probe note'), text: 'probe note', source: '', scene: '', semanticType: '', createdAt: T0, updatedAt: T0, accessCount: 0, lastAccessAt: null })])
    return { failure: result.failure?.line, refused: store.matchCount('"quokkaword"'), indexed: store.matchCount('"the" OR "probe"'), count: store.count() }
  } finally {
    store.close()
  }
}

t.test('a line refused after its row was written leaves no index row behind, even when its rowid is taken again', async (t) => {
  t.same(await refusedRow(BlockStore, importJsonl), { failure: 2, refused: 0, indexed: 2, count: 2 })
  const m = mutant({ file: 'store/import-batch.ts', from: '      if (this.queued !== undefined) this.queued.length = mark\n', to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { importJsonl: mutatedImport } = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  const mutated = await refusedRow(Mutated, mutatedImport as never)
  t.ok(mutated.refused > 0, `mutation check: the refused line's words are still found (${mutated.refused}), under the next note's rowid`)
})

/** The transactions an import of `lines` into a fresh store opens with this `import` and a batch bound of a quarter of the file's characters. */
async function transactions(importWith: typeof importJsonl, Store: typeof BlockStore): Promise<number> {
  const store = new Store(tempStorePath('import-chars'))
  try {
    let opened = 0
    const open = store.importTransaction.bind(store)
    store.importTransaction = (fn) => { opened++; return open(fn) }
    const chars = lines.reduce((n, line) => n + line.length, 0)
    const result = await importWith(store, lines, { batchChars: Math.ceil(chars / 4) })
    if (result.failure !== undefined) throw new Error(result.failure.message)
    return opened
  } finally {
    store.close()
  }
}

t.test('a batch holds at most the character bound of line text (the import keeps one batch in memory)', async (t) => {
  t.equal(await transactions(importJsonl, BlockStore), 4, 'a quarter of the characters a batch: four transactions')
  const m = mutant({ file: 'store/transfer.ts', from: ' || batchChars >= maxBatchChars', to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { importJsonl: mutatedImport } = await m.load<typeof import('../../lib/store/transfer.ts')>('store/transfer.ts')
  t.equal(await transactions(mutatedImport, Mutated), 1, 'without the bound the whole file is one batch')
})
