import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { migrate, SCHEMA_VERSION } from '../../lib/store/schema.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, injected, reply, tempStorePath, toolCall } from '../helpers/harness.ts'

const OLD = 'billing 服务端口 8499'
const NEW = 'billing 服务端口 8510（迁移后）'

t.test('supersedes: the old block leaves recall, stays reachable by id, and the edge is recorded', async (t) => {
  let clock = 1_000
  const store = new BlockStore(tempStorePath(), { now: () => (clock += 1000) })
  t.teardown(() => store.close())
  const old = store.commit({ text: OLD })
  t.same(recallBlocks(store, 'billing 端口', { topK: 5 }).map((h) => h.text), [OLD])
  const next = store.commit({ text: NEW, supersedes: old.id })
  t.same(recallBlocks(store, 'billing 端口', { topK: 5 }).map((h) => h.text), [NEW], 'only the new note is recalled')
  t.same(recallBlocks(store, '8499', { topK: 5 }).map((h) => h.text), [], 'not even by its own exact number')
  t.equal(store.get(old.id)?.text, OLD, 'still stored')
  t.equal(store.get(old.id)?.supersededBy, next.id)
  t.equal(store.get(next.id)?.supersededBy, null)
  t.same(store.edgesOf('block', old.id).map((e) => [e.sourceId, e.targetId, e.type]), [[next.id, old.id, 'supersedes']])
  // Mutation check: the filter is what hides it — the block is still an FTS candidate.
  t.ok(store.ftsCandidates('latin : "8499"', 5).length === 1, 'the index still holds the old block')
})

t.test('supersedes: an unknown or self id is refused and nothing is written', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  t.throws(() => store.commit({ text: NEW, supersedes: 'blk_000000000000000000000000' }), { code: 'not_found' })
  t.equal(store.count(), 0, 'the whole commit rolled back')
  const first = store.commit({ text: OLD })
  t.throws(() => store.commit({ text: OLD, supersedes: first.id }), { code: 'invalid_input' })
  t.equal(store.get(first.id)?.supersededBy, null)
  t.throws(() => store.commit({ text: NEW, supersedes: 42 as unknown as string }), { code: 'invalid_input' })
})

t.test('a version-1 store file is migrated and keeps its blocks current', async (t) => {
  const path = tempStorePath('v1')
  const db = new DatabaseSync(path)
  migrate(db, 1)
  db.prepare('INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)').run('blk_aaaaaaaaaaaaaaaaaaaaaaaa', OLD)
  db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (1, ?, ?)').run('billing  8499', '服务 务端 端口')
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
  t.equal(store.get('blk_aaaaaaaaaaaaaaaaaaaaaaaa')?.supersededBy, null)
  t.same(recallBlocks(store, '8499', { topK: 1 }).map((h) => h.text), [OLD])
})

t.test('recalled blocks count as accesses (count and time); recall without recordAccess does not', async (t) => {
  let clock = 5_000
  const store = new BlockStore(':memory:', { now: () => clock })
  t.teardown(() => store.close())
  const { id } = store.commit({ text: OLD })
  store.commit({ text: '无关的笔记' })
  recallBlocks(store, 'billing', { topK: 5 })
  t.equal(store.get(id)?.accessCount, 0, 'off by default')
  clock = 9_000
  recallBlocks(store, 'billing', { topK: 5, recordAccess: true })
  recallBlocks(store, 'billing', { topK: 5, recordAccess: true })
  t.equal(store.get(id)?.accessCount, 2)
  t.equal(store.get(id)?.lastAccessAt, 9_000)
  t.equal(store.get(blockOf(store, '无关的笔记'))?.accessCount, 0, 'blocks not returned are not touched')
})

function blockOf(store: BlockStore, text: string): string {
  return recallBlocks(store, text, { topK: 1 })[0]!.id
}

t.test('the tool and the service: supersedes through a real turn; service recall records accesses', async (t) => {
  const path = tempStorePath()
  const h = await boot({ path }, [
    toolCall('c1', 'stablemem_commit', { text: OLD }),
    reply('ok'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('记住 billing 端口')
  const oldId = (await h.ctx.stablemem.recall('billing 端口'))[0]!.id
  h.script(toolCall('c2', 'stablemem_commit', { text: NEW, supersedes: oldId }), reply('ok'), reply('8510'))
  await h.turn('billing 端口改成 8510 了')
  await h.turn('billing 端口是多少')
  t.same(h.errors, [])
  const last = h.adapter.requests.at(-1)!
  const text = injected(last).flatMap((m) => m.content.map((b) => (b.type === 'text' ? b.text : ''))).join('')
  t.match(text, /8510/)
  t.notMatch(text, /8499/, 'the superseded note is not injected')
  const old = await h.ctx.stablemem.get(oldId)
  t.ok(old?.supersededBy, 'old note marked')
  t.ok(old!.accessCount >= 1, 'service recall counted the access')
})
