/**
 * The browser's API against the plugin itself: the search's injected message equals what the real
 * pre-step injects, turn after turn, over a generated corpus and every query kind (questions,
 * statements, exact symbols, absent symbols); the prefix property the search relies on to recall
 * once; and the three changes (edit as supersede keeping scopes, duplicate edge, forget).
 */
import { join } from 'node:path'
import t from 'tap'
import { QUERY_KINDS, corpus, type QueryKind } from '../../bench/corpus.ts'
import { resolveConfig } from '../../lib/config.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { CHANGES, READS, type ApiContext } from '../../lib/serve/api.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, injected, reply, textOf } from '../helpers/harness.ts'
import { tempDir } from '../helpers/temp.ts'

const gen = corpus(20261201)
const N = 2000

function queries(count: number): string[] {
  const out: string[] = []
  for (let q = 0; q < count; q++) out.push(gen.query(QUERY_KINDS[q % QUERY_KINDS.length] as QueryKind, (q * 7_654_321) % N))
  return out
}

function filled(): string {
  const db = join(tempDir('stablemem-serve-api'), 'memory.db')
  const store = new BlockStore(db, { duplicates: 'keep' })
  for (let from = 0; from < N; from += 500) store.commitMany(Array.from({ length: 500 }, (_, i) => ({ text: gen.block(from + i).text })))
  store.close()
  return db
}

t.test('the injected message equals the pre-step\'s, for every query kind', async (t) => {
  const db = filled()
  const asked = [...queries(25), 'billing 服务的端口是多少？', 'what is on port 65123?', '记住：周五发布']
  const h = await boot({ path: db }, asked.map(() => reply('ok')))
  t.teardown(() => h.dispose())
  const store = new BlockStore(db, { readOnly: true })
  t.teardown(() => store.close())
  const api: ApiContext = { store, readOnly: true, config: resolveConfig({ path: db }), csrf: '' }
  let injectedTurns = 0
  for (const [i, q] of asked.entries()) {
    await h.turn(q)
    const preStep = injected(h.adapter.requests[i]!).map(textOf)
    const page = await READS['/api/search']!(api, { query: new URLSearchParams({ q, scope: 'global' }), body: undefined }) as { message: string }
    t.equal(page.message, preStep[0] ?? '', `query ${i}: ${q.slice(0, 40)}`)
    if (preStep.length > 0) injectedTurns++
  }
  t.ok(injectedTurns >= asked.length / 2, `most turns injected something (${injectedTurns} of ${asked.length})`)
})

t.test('the best topK of a longer recall are the topK recall (the search recalls once)', async (t) => {
  const db = filled()
  const store = new BlockStore(db, { readOnly: true })
  t.teardown(() => store.close())
  for (const q of queries(150)) {
    const short = recallBlocks(store, q, { topK: 5 })
    const long = recallBlocks(store, q, { topK: 10 }).slice(0, 5)
    t.same(long, short, q.slice(0, 40))
  }
})

t.test('edit, duplicate and forget', async (t) => {
  const db = join(tempDir('stablemem-serve-api'), 'memory.db')
  const store = new BlockStore(db)
  t.teardown(() => store.close())
  const api: ApiContext = { store, readOnly: false, config: resolveConfig(), csrf: '' }
  const old = store.commit({ text: 'deploys run on Tuesday', source: 'ops', scene: 'release', scope: 'global' })
  store.scopes.add([old.id], 'preset:ops')
  const edited = CHANGES['/api/edit']!(api, { query: new URLSearchParams(), body: { id: old.id, text: 'deploys run on Wednesday' } }) as { id: string }
  const now = store.get(edited.id)!
  t.match(now, { text: 'deploys run on Wednesday', source: 'ops', scene: 'release', supersededBy: null })
  t.equal(store.get(old.id)!.supersededBy, edited.id, 'the old note is kept and superseded')
  t.same(store.scopes.of(edited.id).sort(), ['global', 'preset:ops'], 'the new note keeps every scope')
  t.throws(() => CHANGES['/api/edit']!(api, { query: new URLSearchParams(), body: { id: old.id, text: 'again' } }), /already replaced/)
  t.throws(() => CHANGES['/api/edit']!(api, { query: new URLSearchParams(), body: { id: edited.id, text: 'deploys run on Wednesday' } }), /unchanged/)
  const dup = store.commit({ text: 'Deploys happen each Wednesday' })
  t.same(CHANGES['/api/duplicate']!(api, { query: new URLSearchParams(), body: { id: dup.id, of: edited.id } }), { created: true })
  t.match(store.edgesOf('block', dup.id), [{ type: 'duplicates', targetId: edited.id }])
  const gone = CHANGES['/api/forget']!(api, { query: new URLSearchParams(), body: { ids: [edited.id] } }) as { deleted: string[], restored: string[] }
  t.same(gone.deleted, [edited.id], 'only the selected note')
  t.same(gone.restored, [old.id], 'the note it had replaced is current again')
  t.ok(store.get(dup.id), 'the marked duplicate stays')
  t.throws(() => CHANGES['/api/forget']!(api, { query: new URLSearchParams(), body: { ids: [] } }), /1 to 1000/)
})

t.test('the scenes view reads the store\'s scenes, and says when there are none', async (t) => {
  const db = join(tempDir('stablemem-serve-api'), 'memory.db')
  const store = new BlockStore(db)
  t.teardown(() => store.close())
  const api: ApiContext = { store, readOnly: true, config: resolveConfig(), csrf: '' }
  const read = () => READS['/api/scenes']!(api, { query: new URLSearchParams(), body: undefined })
  t.same(read(), { available: false }, 'a store without scenes has none to show')
  store.commit({ text: '回这个群的消息不要用 Markdown', scene: 'chan:qq/group:group_1' })
  store.commit({ text: 'billing runs on port 8499', scene: 'billing' })
  const view = read() as { available: true, scenes: Array<{ key: string, notes: number, origin: string }> }
  t.equal(view.available, true)
  t.same(view.scenes.map((s) => [s.key, s.notes, s.origin]).sort(), [['billing', 1, 'declared'], ['chan:qq/group:group_1', 1, 'declared']],
    'each scene a note was saved in, with its attached note')
})
