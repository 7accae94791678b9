/**
 * `BlockStore.forget` on real files: what a target selects, what goes with a note (index entries,
 * vectors, edges in both directions, centroid), supersede chains, near-duplicates, tombstones and
 * import, dry runs, and the refusals of bad targets.
 */
import { DatabaseSync } from 'node:sqlite'
import t, { type Test } from 'tap'
import { vectorIndexFor } from '../../lib/embed/vector-index.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../../lib/store/transfer.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

function open(t: Test, options: ConstructorParameters<typeof BlockStore>[1] = {}): BlockStore {
  const store = new BlockStore(tempStorePath('forget'), options)
  t.teardown(() => store.close())
  return store
}

const ids = (blocks: ReadonlyArray<{ id: string }>) => blocks.map((b) => b.id)

t.test('forgetting one note deletes its row, index entries, vectors, edges both ways and tombstones it', async (t) => {
  const store = open(t)
  const { id } = store.commit({ text: 'billing 服务端口 8499，部署在 10.3.7.9', scene: 'ops' })
  const other = store.commit({ text: 'redis 端口 6380' }).id
  store.link({ sourceKind: 'block', sourceId: id, targetKind: 'scene', targetId: 'ops', type: 'in' })
  store.link({ sourceKind: 'scene', sourceId: 'ops', targetKind: 'block', targetId: id, type: 'contains' })
  store.link({ sourceKind: 'block', sourceId: other, targetKind: 'block', targetId: id, type: 'related' })
  store.vectors.put('m', 2, [{ blockId: id, lang: 'zh', vector: new Uint8Array(8) }, { blockId: other, lang: 'zh', vector: new Uint8Array(8) }])
  store.vectors.putCentroid('m', 2, new Uint8Array(8), 2)
  t.equal(recallBlocks(store, 'billing 端口 8499')[0]?.id, id)

  t.equal(vectorIndexFor(store, 'm', 2).size, 2)
  const result = store.forget(id)
  t.same(ids(result.deleted), [id])
  t.equal(result.deleted[0]!.text, 'billing 服务端口 8499，部署在 10.3.7.9', 'the report carries what was deleted')
  t.same({ unknown: result.unknown, restored: result.restored, edges: result.edges, vectors: result.vectors, dryRun: result.dryRun },
    { unknown: [], restored: [], edges: 3, vectors: 1, dryRun: false })
  t.equal(store.get(id), undefined)
  t.same(store.edgesOf('block', id), [], 'no edge in either direction')
  t.equal(store.edgesOf('scene', 'ops').length, 0)
  t.equal(store.vectors.count('m', 2), 1, 'its vector is gone, the other note\'s stays')
  t.equal(vectorIndexFor(store, 'm', 2).size, 1, 'and out of the in-memory vector index')
  t.equal(store.vectors.centroid('m', 2), undefined, 'the centroid that averaged it is dropped')
  t.equal(store.matchCount('"8499"'), 0, 'the index no longer matches it')
  t.same(recallBlocks(store, 'billing 端口 8499').map((h) => h.id).filter((h) => h === id), [])
  t.equal(store.count(), 1)
  t.ok(store.isForgotten(id))
  t.same(store.integrityCheck(), ['ok'])
  t.equal(store.commit({ text: 'billing 服务端口 8499，部署在 10.3.7.9' }).created, true, 'saving it again later is a new, deliberate note')
  t.notOk(store.isForgotten(id))
})

t.test('a list with unknown ids forgets the rest and reports them; bad targets are refused', async (t) => {
  const store = open(t)
  const a = store.commit({ text: 'note a' }).id
  const b = store.commit({ text: 'note b' }).id
  const missing = blockId('never stored')
  const result = store.forget([a, missing, b, a])
  t.same(ids(result.deleted), [a, b])
  t.same(result.unknown, [missing])
  t.same(store.forget(missing).deleted, [], 'only unknown ids: nothing deleted, no error')
  t.throws(() => store.forget([]), { code: 'invalid_input', message: /empty/ })
  t.throws(() => store.forget('blk_nothex'), { code: 'invalid_input', message: /not a block id/ })
  t.throws(() => store.forget([a, 42 as unknown as string]), { code: 'invalid_input', message: /ids\[1\] must be a string/ })
  t.throws(() => store.forget({}), { code: 'invalid_input', message: /filter is empty.*all: true/ })
  t.throws(() => store.forget({ scene: '' }), { code: 'invalid_input', message: /scene/ })
  t.throws(() => store.forget({ all: false as unknown as true }), { code: 'invalid_input' })
  t.throws(() => store.forget({ all: true, scene: 'x' }), { code: 'invalid_input', message: /combined/ })
  t.throws(() => store.forget({ before: 'yesterday-ish' }), { code: 'invalid_input', message: /before must be a time/ })
  t.throws(() => store.forget({ sceen: 'x' } as never), { code: 'invalid_input', message: /unknown filter field sceen/ })
  t.throws(() => store.forget(null as never), { code: 'invalid_input' })
})

t.test('filters: scene, source, before (AND), all; a filter that matches nothing is not an error', async (t) => {
  let clock = 1_000
  const store = open(t, { now: () => clock })
  const old = store.commit({ text: 'old ops note', scene: 'ops', source: 'cli' }).id
  clock = 2_000
  const ops = store.commit({ text: 'new ops note', scene: 'ops', source: 'model' }).id
  const chat = store.commit({ text: 'chat note', scene: 'chat', source: 'model' }).id
  const loose = store.commit({ text: 'no scene note', source: 'user' }).id
  t.same(ids(store.forget({ scene: 'nope' }).deleted), [], 'no match: nothing deleted')
  t.same(ids(store.forget({ scene: 'ops', before: 1_500 }, { dryRun: true }).deleted), [old], 'AND of fields')
  t.same(ids(store.forget({ before: new Date(1_500).toISOString() }, { dryRun: true }).deleted), [old], 'ISO time')
  t.same(ids(store.forget({ source: 'model' }).deleted), [ops, chat])
  t.same(ids(store.forget({ scene: 'ops' }).deleted), [old])
  t.same(ids(store.forget({ all: true }).deleted), [loose])
  t.equal(store.count(), 0)
})

/** Notes saved in scene `ops`, and notes attached to it only by a scene ref; what `forget({scene})` selects. */
function sceneSelection(t: Test, Store: typeof BlockStore): { saved: string, attached: string, both: string, other: string, picked: string[], narrowed: string[] } {
  const store = new Store(tempStorePath('forget-scene'))
  t.teardown(() => store.close())
  const saved = store.commit({ text: 'saved in the ops scene', scene: 'ops', source: 'cli' }).id
  const attached = store.commit({ text: 'attached to the ops scene only', source: 'model' }).id
  const both = store.commit({ text: 'saved in ops and attached to it', scene: 'ops', source: 'model' }).id
  const other = store.commit({ text: 'in another scene', scene: 'chat', source: 'model' }).id
  store.transaction(() => {
    store.scenes.tag('ops', attached, 1)
    store.scenes.tag('ops', both, 1)
  })
  const picked = ids(store.forget({ scene: 'ops' }, { dryRun: true }).deleted)
  const narrowed = ids(store.forget({ scene: 'ops', source: 'model' }, { dryRun: true }).deleted)
  return { saved, attached, both, other, picked, narrowed }
}

t.test('a scene filter selects the notes saved in the scene and those attached to it, each once', async (t) => {
  const { saved, attached, both, picked, narrowed } = sceneSelection(t, BlockStore)
  t.same(picked, [saved, attached, both], 'saved, attached only, and both (once)')
  t.same(narrowed, [attached, both], 'the other fields narrow both ways of belonging')
})

t.test('mutation check: without reading the scene refs, a note attached to the scene is not forgotten', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: 'for (const { sql, params } of filterSql(selection.filter))', to: 'for (const { sql, params } of filterSql(selection.filter).slice(0, 1))' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { attached, picked } = sceneSelection(t, Mutated)
  t.notOk(picked.includes(attached))
})

t.test('a dry run reports exactly what forget would do and changes nothing', async (t) => {
  const store = open(t)
  const a = store.commit({ text: 'port 1111', scene: 's' }).id
  const b = store.commit({ text: 'port 2222', scene: 's', supersedes: a }).id
  const dry = store.forget({ scene: 's' }, { dryRun: true })
  t.same({ ...dry, deleted: ids(dry.deleted) }, { deleted: [a, b], unknown: [], restored: [], derived: [], edges: 1, vectors: 0, dryRun: true, walCleared: false, bytesPending: false })
  t.equal(store.count(), 2)
  t.equal(store.get(b)!.supersededBy, null)
  t.equal(store.get(a)!.supersededBy, b)
  t.notOk(store.isForgotten(a))
  const dryOne = store.forget(b, { dryRun: true })
  t.same(dryOne.restored, [a], 'the dry run names the note that would come back')
  t.equal(store.get(a)!.supersededBy, b, '…without bringing it back')
})

t.test('forgetting a correction restores what it replaced, unless restoreSuperseded is false; chains are spliced', async (t) => {
  const store = open(t)
  const v1 = store.commit({ text: 'gateway port 8001' }).id
  const v2 = store.commit({ text: 'gateway port 8002', supersedes: v1 }).id
  t.same(recallBlocks(store, 'gateway port').map((h) => h.id), [v2])
  t.same(store.forget(v2).restored, [v1])
  t.equal(store.get(v1)!.supersededBy, null)
  t.same(recallBlocks(store, 'gateway port').map((h) => h.id), [v1], 'the older value is recalled again')

  const w1 = store.commit({ text: 'proxy port 9001' }).id
  const w2 = store.commit({ text: 'proxy port 9002', supersedes: w1 }).id
  t.same(store.forget(w2, { restoreSuperseded: false }).restored, [])
  t.equal(store.get(w1)!.supersededBy, w2, 'stays retired, naming the forgotten successor')
  t.notOk(recallBlocks(store, 'proxy port 9001').some((h) => h.id === w1), 'and out of recall')

  const x1 = store.commit({ text: 'cache port 7001' }).id
  const x2 = store.commit({ text: 'cache port 7002', supersedes: x1 }).id
  const x3 = store.commit({ text: 'cache port 7003', supersedes: x2 }).id
  t.same(store.forget(x2).restored, [], 'the middle of a chain: nothing becomes current')
  t.equal(store.get(x1)!.supersededBy, x3, 'the oldest now points at the newest')
  t.ok(store.edgesOf('block', x1).some((e) => e.sourceId === x3 && e.type === 'supersedes'), 'with a supersedes edge')
  t.same(store.forget([x3]).restored, [x1])
})

t.test('forgetting a note by id takes its near-duplicates with it, unless withDuplicates is false', async (t) => {
  const store = open(t, { duplicates: 'keep' })
  const a = store.commit({ text: 'The VPN port is 1194.' }).id
  const b = store.commit({ text: 'the vpn port is 1194' })
  t.equal(b.duplicateOf, a)
  const c = store.commit({ text: 'the vpn port is 1195' })
  t.equal(c.duplicateOf, undefined, 'another value is another note')
  t.same(ids(store.forget(a, { withDuplicates: false, dryRun: true }).deleted), [a])
  t.same(ids(store.forget(a).deleted), [a, b.id])
  t.ok(store.get(c.id))
})

t.test('import skips forgotten notes and their edges unless includeForgotten', async (t) => {
  const store = open(t)
  const keep = store.commit({ text: 'keep me 1' }).id
  const gone = store.commit({ text: 'forget me 2' }).id
  store.link({ sourceKind: 'block', sourceId: keep, targetKind: 'block', targetId: gone, type: 'related' })
  const backup = [...exportJsonl(store)]
  store.forget(gone)
  t.notOk([...exportJsonl(store)].some((line) => line.includes(gone) || line.includes('forget me')), 'the export no longer has it')
  const result = await importJsonl(store, backup)
  t.match(result, { blocksCreated: 0, blocksMerged: 1, blocksForgotten: 1, edgesForgotten: 1, edgesCreated: 0 })
  t.equal(result.failure, undefined)
  t.equal(store.get(gone), undefined, 'an older export does not bring it back')
  const again = await importJsonl(store, backup, { includeForgotten: true })
  t.match(again, { blocksCreated: 1, edgesCreated: 1 })
  t.equal(again.blocksForgotten, undefined)
  t.ok(store.get(gone), 'asked for explicitly, it comes back')
})

/** A note's id and rowid (memberships refer to the rowid). */
interface NoteKey { id: string, rowid: number }

/** Rows that refer to the given notes, per dependent table, read through a second connection. */
function referring(path: string, notes: readonly NoteKey[]): { memberships: number, scene_refs: number, block_origins: number, vectors: number, orphans: number } {
  const db = new DatabaseSync(path)
  try {
    const list = JSON.stringify(notes.map((n) => n.id))
    const count = (sql: string, values = list) => Number((db.prepare(sql).get(values) as { n: number }).n)
    return {
      memberships: count('SELECT count(*) AS n FROM memberships WHERE block_rowid IN (SELECT value FROM json_each(?))', JSON.stringify(notes.map((n) => n.rowid))),
      scene_refs: count('SELECT count(*) AS n FROM scene_refs WHERE block_id IN (SELECT value FROM json_each(?))'),
      block_origins: count('SELECT count(*) AS n FROM block_origins WHERE block_id IN (SELECT value FROM json_each(?))'),
      vectors: count('SELECT count(*) AS n FROM vectors WHERE block_id IN (SELECT value FROM json_each(?))'),
      orphans: db.prepare('PRAGMA foreign_key_check').all().length,
    }
  } finally {
    db.close()
  }
}

/** A store with `n` notes in scene `bulk` and 20 in `kept`, each with a vector and a capture origin. */
function withDependents(t: Test, n: number): { store: BlockStore, path: string, bulk: NoteKey[], kept: NoteKey[] } {
  const path = tempStorePath('forget-dependents')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const bulkIds = store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `bulk note ${i} on port ${30000 + i}`, scene: 'bulk' }))).map((r) => r.id)
  const keptIds = store.commitMany(Array.from({ length: 20 }, (_, i) => ({ text: `kept note ${i}`, scene: 'kept' }))).map((r) => r.id)
  store.vectors.put('m', 2, [...bulkIds, ...keptIds].map((blockId) => ({ blockId, lang: 'en', vector: new Uint8Array(8) })))
  const db = new DatabaseSync(path)
  const origin = db.prepare(`INSERT INTO block_origins (block_id, session_id, seq, event_type, role, event_time, captured_at)
    VALUES (?, 's1', ?, 'message', 'user', 1, 1)`)
  ;[...bulkIds, ...keptIds].forEach((id, i) => origin.run(id, i))
  const rowid = db.prepare('SELECT rowid FROM blocks WHERE id = ?')
  const key = (id: string): NoteKey => ({ id, rowid: Number((rowid.get(id) as { rowid: number }).rowid) })
  const [bulk, kept] = [bulkIds.map(key), keptIds.map(key)]
  db.close()
  const all = referring(path, [...bulk, ...kept])
  t.same(all, { memberships: n + 20, scene_refs: n + 20, block_origins: n + 20, vectors: n + 20, orphans: 0 }, 'every note has one row in each dependent table')
  return { store, path, bulk, kept }
}

t.test('a large forget deletes the rows of every table that refers to its notes, and foreign keys stay on', async (t) => {
  for (const [label, target] of [['filter', { scene: 'bulk' }], ['id list', undefined]] as const) {
    const { store, path, bulk, kept } = withDependents(t, 150)
    const result = store.forget(target ?? bulk.map((n) => n.id))
    t.equal(result.deleted.length, 150, label)
    t.equal(result.vectors, 150)
    t.same(referring(path, bulk), { memberships: 0, scene_refs: 0, block_origins: 0, vectors: 0, orphans: 0 }, `${label}: nothing refers to a forgotten note`)
    t.same(referring(path, kept), { memberships: 20, scene_refs: 20, block_origins: 20, vectors: 20, orphans: 0 }, `${label}: the kept notes keep theirs`)
    const db = (store as unknown as { db: DatabaseSync }).db
    t.equal(Number((db.prepare('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys), 1, `${label}: foreign keys are on again`)
    t.same(store.integrityCheck(), ['ok'])
  }
  // A forget that fails inside its transaction (another process holds the write lock past the
  // busy timeout) switches them back on too.
  const path = tempStorePath('forget-busy')
  const store = new BlockStore(path, { busyTimeoutMs: 50 })
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 100 }, (_, i) => ({ text: `busy note ${i}`, scene: 'bulk' })))
  const other = new DatabaseSync(path)
  other.exec('BEGIN IMMEDIATE')
  t.throws(() => store.forget({ scene: 'bulk' }), /database is locked/)
  other.exec('ROLLBACK')
  other.close()
  const db = (store as unknown as { db: DatabaseSync }).db
  t.equal(Number((db.prepare('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys), 1, 'on again after a failed forget')
  t.equal(store.forget({ scene: 'bulk' }).deleted.length, 100, 'and the forget succeeds once the lock is free')
})

t.test('mutation check: without the set-based deletes of dependent rows, a large forget leaves them behind', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: "if (d.table === 'vectors') continue", to: 'continue' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const path = tempStorePath('forget-dependents-mutant')
  const store = new Mutated(path)
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 100 }, (_, i) => ({ text: `bulk note ${i}`, scene: 'bulk' })))
  store.forget({ scene: 'bulk' })
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.ok(db.prepare('PRAGMA foreign_key_check').all().length >= 200, 'memberships and scene refs of the forgotten notes are left')
})

t.test('mutation check: without switching foreign keys back on, the store runs on without them', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: "if (cascadeOff) db.exec('PRAGMA foreign_keys = ON')", to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const store = new Mutated(tempStorePath('forget-fk-mutant'))
  t.teardown(() => store.close())
  store.commit({ text: 'one note', scene: 'bulk' })
  store.forget({ scene: 'bulk' })
  const db = (store as unknown as { db: DatabaseSync }).db
  t.equal(Number((db.prepare('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys), 0)
})

/** A large forget (the rewrite way) on a store whose index has its own `automerge`; the index settings after it. */
async function settingsAcrossRewrite(t: Test, Store: typeof BlockStore): Promise<Record<string, number>> {
  const store = new Store(tempStorePath('forget-settings'))
  t.teardown(() => store.close())
  const db = (store as unknown as { db: DatabaseSync }).db
  db.prepare("INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('automerge', ?)").run(8n)
  store.commitMany(Array.from({ length: 100 }, (_, i) => ({ text: `rewritten note ${i}`, scene: 'bulk' })))
  store.commit({ text: 'a kept note' })
  t.equal(store.forget({ scene: 'bulk' }).deleted.length, 100)
  const rows = db.prepare("SELECT k, v FROM blocks_fts_config WHERE k IN ('automerge', 'hashsize', 'secure-delete')").all() as Array<{ k: string, v: number }>
  return Object.fromEntries(rows.map((r) => [String(r.k), Number(r.v)]))
}

t.test('a large forget leaves the index settings it changes for the rewrite as they were', async (t) => {
  t.same(await settingsAcrossRewrite(t, BlockStore), { automerge: 8, hashsize: 1 << 20, 'secure-delete': 1 })
})

t.test('mutation check: without setting automerge back, the index stops merging its segments after a large forget', async (t) => {
  const m = mutant({ file: 'store/forget-index.ts', from: "\n    option('automerge', automerge)", to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  t.equal((await settingsAcrossRewrite(t, Mutated)).automerge, 0)
})

/** The maintained block count, the real number of rows, and the count trigger's SQL, through a second connection. */
function countState(path: string): { counted: number, rows: number, trigger: string | undefined } {
  const db = new DatabaseSync(path)
  try {
    return {
      counted: Number((db.prepare('SELECT n + (SELECT count(*) FROM blocks WHERE rowid > mark) AS n FROM block_count').get() as { n: number }).n),
      rows: Number((db.prepare('SELECT count(*) AS n FROM blocks').get() as { n: number }).n),
      trigger: (db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'block_count_delete_marked'").get() as { sql: string } | undefined)?.sql,
    }
  } finally {
    db.close()
  }
}

/** A large forget, then a new note and a small forget: the count after each step. */
async function countAcrossForgets(t: Test, Store: typeof BlockStore): Promise<Array<{ counted: number, rows: number, trigger: string | undefined }>> {
  const path = tempStorePath('forget-count')
  const store = new Store(path)
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 100 }, (_, i) => ({ text: `counted note ${i}`, scene: 'bulk' })))
  const kept = store.commitMany(Array.from({ length: 10 }, (_, i) => ({ text: `kept note ${i}` }))).map((r) => r.id)
  const states = [countState(path)]
  t.equal(store.forget({ scene: 'bulk' }).deleted.length, 100)
  states.push(countState(path))
  store.commit({ text: 'a note after the large forget' })
  store.forget(kept[0]!)
  states.push(countState(path))
  return states
}

t.test('a large forget moves the block count once and leaves its trigger as it was', async (t) => {
  const [before, afterLarge, afterSmall] = await countAcrossForgets(t, BlockStore)
  t.same([before!.counted, before!.rows], [110, 110])
  t.same([afterLarge!.counted, afterLarge!.rows], [10, 10], 'the count is right after the large forget')
  t.equal(afterLarge!.trigger, before!.trigger, 'the trigger is back, unchanged')
  t.same([afterSmall!.counted, afterSmall!.rows], [10, 10], 'and it counts the next insert and delete')
})

t.test('mutation check: without moving the count once, the large forget leaves it wrong', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: "run('forget.count', `UPDATE block_count SET n = n - (SELECT count(*) FROM temp.stablemem_forget WHERE rid <= mark),", to: "(`" })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const [, afterLarge] = await countAcrossForgets(t, Mutated)
  t.equal(afterLarge!.counted, 110)
})

t.test('mutation check: without creating the trigger again, later deletes are not counted', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: '    host.db.exec(countTrigger)\n', to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const [, afterLarge, afterSmall] = await countAcrossForgets(t, Mutated)
  t.equal(afterLarge!.trigger, undefined)
  t.same([afterSmall!.counted, afterSmall!.rows], [11, 10])
})
