import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { blockId } from '../lib/store/block-id.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../lib/store/transfer.ts'
import { tempStorePath } from './helpers/harness.ts'

function filled(n: number): BlockStore {
  let clock = 1_700_000_000_000
  const store = new BlockStore(tempStorePath('src'), { now: () => ++clock })
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `service-${i} 端口 ${10_000 + i}` })))
  return store
}

t.test('a large import crosses batches, reports progress and keeps every line before a bad one', async (t) => {
  const src = filled(1_234)
  const lines = [...exportJsonl(src)]
  src.close()
  const broken = [...lines.slice(0, 1_101), 'not json', ...lines.slice(1_101)]
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const progress: number[] = []
  const result = await importJsonl(dst, broken, { onProgress: (p) => progress.push(p.lines), progressEvery: 250 })
  t.same(result.failure, { line: 1_102, message: 'not valid JSON' })
  t.equal(result.lines, 1_101)
  t.equal(result.blocksCreated, 1_100, 'two full batches and the partial third one are stored')
  t.equal(dst.count(), 1_100)
  t.same(progress, [250, 500, 750, 1_000])
  const rest = await importJsonl(dst, lines)
  t.equal(rest.failure, undefined)
  t.equal(rest.blocksCreated, 134)
  t.equal(rest.blocksMerged, 1_100)
})

t.test('a line the store refuses mid-batch keeps the batch lines before it', async (t) => {
  const src = filled(10)
  const lines = [...exportJsonl(src)]
  src.close()
  const tampered = lines[6]!.replace('端口', '端 口')
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, [...lines.slice(0, 6), tampered, ...lines.slice(7)])
  t.equal(result.failure?.line, 7)
  t.match(result.failure?.message, /is not the content address of its text/)
  t.equal(dst.count(), 5)
})

/** Every stored block's id is the hash of its text: the property the import guard protects. */
function contentAddressed(store: BlockStore): boolean {
  return [...store.allBlocks()].every((b) => b.id === blockId(b.text))
}

t.test('the content-address guard: refusing tampered blocks keeps the store consistent; without it the check goes red', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const good = store.commit({ text: 'gateway 10.0.0.1' })
  const block = store.get(good.id)!
  const tampered = { ...block, text: 'gateway 10.0.0.2' }
  t.throws(() => store.importBlock(tampered), /is not the content address of its text/)
  t.throws(() => store.importBlock({ ...block, id: blockId(' x'), text: ' x' }), /canonical form/)
  t.ok(contentAddressed(store), 'guarded import leaves the store content-addressed')
  // Mutation check: the same tampered record written without the guard (a plain insert, which
  // is what an unguarded import does) makes the property fail, so the assertion above has teeth.
  const path = tempStorePath()
  new BlockStore(path).close()
  const raw = new DatabaseSync(path)
  raw.prepare('INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, ?, ?)').run(tampered.id, tampered.text, 1, 1)
  raw.close()
  const unguarded = new BlockStore(path)
  t.teardown(() => unguarded.close())
  t.notOk(contentAddressed(unguarded), 'without the id check a wrong id gets stored')
})

t.test('merging an existing block is idempotent and keeps the widest times', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const base = { id: blockId('a note'), text: 'a note', source: 'old', scene: '', semanticType: '', createdAt: 100, updatedAt: 200, accessCount: 2, lastAccessAt: 150, supersededBy: null }
  store.transaction(() => store.importBlock(base))
  const newer = { ...base, source: 'new', createdAt: 300, updatedAt: 400, accessCount: 1, lastAccessAt: null }
  for (let i = 0; i < 2; i++) t.same(store.transaction(() => store.importBlock(newer)), { created: false, id: base.id })
  t.same(store.get(base.id), { ...base, source: 'new', updatedAt: 400 })
  const older = { ...base, source: 'older', createdAt: 50, updatedAt: 60, accessCount: 9, lastAccessAt: 900 }
  store.transaction(() => store.importBlock(older))
  t.same(store.get(base.id), { ...base, source: 'new', createdAt: 50, updatedAt: 400, accessCount: 9, lastAccessAt: 900 })
})

t.test('a superseded note keeps its supersede mark and edge through export and import, and stays out of recall', async (t) => {
  const src = new BlockStore(tempStorePath('src'))
  const old = src.commit({ text: '值班室分机号 4324' })
  const current = src.commit({ text: '值班室分机号 4379', supersedes: old.id })
  const lines = [...exportJsonl(src)]
  src.close()
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, lines)
  t.equal(result.failure, undefined)
  t.equal(dst.get(old.id)?.supersededBy, current.id, 'the mark survives the round trip')
  t.same(dst.edgesOf('block', old.id).map((e) => [e.sourceId, e.type, e.targetId]), [[current.id, 'supersedes', old.id]])
  const { recallBlocks } = await import('../lib/recall/recall.ts')
  t.same(recallBlocks(dst, '值班室分机号').map((h) => h.id), [current.id], 'the imported old value is not recalled')
})

t.test('an imported edge is checked and stored in its normalised spelling, like link', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const a = store.commit({ text: 'note a' }).id
  const missing = blockId('never stored')
  t.throws(() => store.importEdge({ sourceKind: ' block', sourceId: missing, targetKind: 'block', targetId: a, type: 'related', createdAt: 5 }),
    { code: 'not_found' }, "' block' cannot slip past the endpoint check")
  t.same(store.importEdge({ sourceKind: ' block ', sourceId: a, targetKind: 'block', targetId: a, type: ' related', createdAt: 5 }), { created: true })
  t.same(store.importEdge({ sourceKind: 'block', sourceId: a, targetKind: 'block', targetId: a, type: 'related', createdAt: 9 }), { created: false }, 'the same edge, spelled plainly, is a duplicate')
  t.same(store.edgesOf('block', a).map((e) => [e.sourceKind, e.type, e.createdAt]), [['block', 'related', 5]])
})
