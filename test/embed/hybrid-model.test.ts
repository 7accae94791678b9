import t from 'tap'
import { backfillVectors } from '../../lib/embed/backfill.ts'
import { HttpEmbedder } from '../../lib/embed/http.ts'
import { vectorIndexFor } from '../../lib/embed/vector-index.ts'
import { abstentionOf } from '../../lib/recall/abstain.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { resolveConfig } from '../../lib/config.ts'
import { boot, injected, realBatch, reply, tempStorePath, toolCall } from '../helpers/harness.ts'
import { startHashServer, startModelServer } from './servers.ts'

const NOTES = [
  'Alice adopted a golden retriever puppy named Biscuit.',
  'The billing service listens on port 8499.',
  'We moved the database to Postgres 16 last week.',
  'My sister lives in Lisbon and teaches chemistry.',
  'The deploy script is at /opt/deploy/run.sh.',
  'I bought a new road bike for the summer races.',
  '服务器的公网地址是 10.3.7.9',
]

t.test('real USE-lite model over HTTP: vectors answer what words cannot, and never outrank an exact symbol', async (t) => {
  const server = await startModelServer()
  t.teardown(() => server.close())
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  store.commitMany(NOTES.map((text) => ({ text })))
  const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'use-lite', languages: ['en'] })
  const progress: Array<{ done: number, total: number }> = []
  const result = await backfillVectors(store, embedder, { batchSize: 3, onProgress: (p) => progress.push(p) })
  t.same(result, { done: NOTES.length, total: NOTES.length })
  t.same(progress.map((p) => p.done), [3, 6, 7], 'progress after every batch')
  t.equal(embedder.dims, 512, 'dims learned from the first answer')
  t.equal(store.vectors.count('use-lite', 512), NOTES.length)
  t.same((await backfillVectors(store, embedder)).done, 0, 'a second backfill has nothing to do')

  const query = 'Which sport equipment did I buy?'
  t.same(recallBlocks(store, query), [], 'lexical recall finds nothing')
  const hybrid = await recallBlocksHybrid(store, embedder, query, { topK: 3, budgetMs: 60_000 })
  t.equal(hybrid.degraded, undefined, 'vectors took part')
  t.equal(hybrid[0]?.text, NOTES[5], 'the bike note comes first')

  const pet = await recallBlocksHybrid(store, embedder, 'What kind of pet does she have?', { topK: 3, budgetMs: 60_000 })
  t.equal(pet[0]?.text, NOTES[0])

  const pinned = await recallBlocksHybrid(store, embedder, 'What kind of pet listens on port 8499?', { topK: 3, budgetMs: 60_000 })
  t.equal(pinned.degraded, undefined)
  t.equal(pinned[0]?.text, NOTES[1], 'the exact-symbol hit stays first')
  t.ok(pinned[0]!.exact && pinned[0]!.score >= 1 && pinned.slice(1).every((h) => h.score < 1), 'pin above every fused score')

  const zh = await recallBlocksHybrid(store, embedder, '服务器的公网地址是多少？', { topK: 3, budgetMs: 60_000 })
  t.equal(zh.degraded, 'language_gated', 'an English model is gated out of a Chinese query')
  t.same(zh, recallBlocks(store, '服务器的公网地址是多少？', { topK: 3 }), 'exactly the lexical result')
  t.notOk(Object.keys(zh).includes('degraded'), 'degraded is not enumerable')
  t.notOk(hybrid.some((h) => h.text === NOTES[6]), 'a Chinese note never enters an English vector search')
})

t.test('changing the model never mixes vectors of two models', async (t) => {
  const server = await startHashServer(32)
  t.teardown(() => server.close())
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  store.commitMany(NOTES.slice(0, 4).map((text) => ({ text })))
  const a = new HttpEmbedder({ baseUrl: server.url, model: 'model-a', dims: 32 })
  const b = new HttpEmbedder({ baseUrl: server.url, model: 'model-b', dims: 32 })
  await backfillVectors(store, a)
  const before = await recallBlocksHybrid(store, b, 'golden puppy', { budgetMs: 60_000 })
  t.equal(before.degraded, 'no_vectors', 'model-b sees none of model-a\'s vectors')
  const progress = await backfillVectors(store, b)
  t.equal(progress.done, 4, 'the backfill embeds every block again for the new model')
  t.equal(store.vectors.count('model-a', 32), 4)
  t.equal(store.vectors.count('model-b', 32), 4)
  const after = await recallBlocksHybrid(store, b, 'golden puppy', { budgetMs: 60_000 })
  t.equal(after.degraded, undefined)
})

t.test('the plugin with a real embedder: the tool commits at once, the vector follows, and a paraphrased question gets the note injected', async (t) => {
  const server = await startModelServer()
  t.teardown(() => server.close())
  const embed = { ...resolveConfig().embed, baseUrl: server.url, model: 'use-lite', recallBudgetMs: 10_000 }
  const h = await boot({ path: tempStorePath(), embed }, [
    toolCall('c1', 'stablemem_commit', { text: 'I bought a new road bike for the summer races.' }),
    reply('saved'),
    toolCall('c2', 'stablemem_commit', { text: 'Alice adopted a golden retriever puppy named Biscuit.' }),
    reply('saved'),
    reply('a road bike'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('remember that I bought a road bike')
  await h.turn('remember Alice\'s puppy')
  await h.ctx.stablemem.vectorsIdle()
  t.equal((await h.ctx.stablemem.stats()).vectors?.stored, 2, 'both notes have vectors after commit')
  await h.turn(realBatch('Which sport equipment did I buy?')[0]!)
  t.same(h.errors, [])
  const ours = injected(h.adapter.requests[4]!)
  t.equal(ours.length, 1, 'one recall message')
  const text = ours[0]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  t.match(text, /road bike/)
  t.notMatch(text, /retriever/, 'the unrelated note stays out (below minCosine)')
  const stats = await h.ctx.stablemem.stats()
  t.ok(stats.hybridRecalls >= 1, 'vectors took part in the pre-step recall')
  t.equal(stats.vectors?.failures, 0)
})

t.test('vectors respect abstention and supersede (and would break both without the guards)', async (t) => {
  const server = await startHashServer(64)
  t.teardown(() => server.close())
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const old = store.commit({ text: 'The billing service listens on port 8499.' })
  const fresh = store.commit({ text: 'The billing service now listens on port 8500.', supersedes: old.id })
  store.commit({ text: 'Alice adopted a golden retriever puppy named Biscuit.' })
  const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'hash', dims: 64 })
  await backfillVectors(store, embedder)

  const query = 'The billing service listens on which port?'
  const hits = await recallBlocksHybrid(store, embedder, query, { budgetMs: 60_000 })
  t.equal(hits.degraded, undefined)
  t.ok(hits.some((h) => h.id === fresh.id), 'the successor is recalled')
  t.notOk(hits.some((h) => h.id === old.id), 'the superseded note is not')
  const nearest = vectorIndexFor(store, 'hash', 64).search((await embedder.embed([query]))[0]!, 3, () => true)
  t.ok(nearest.some((h) => h.id === old.id), 'mutation: the raw vector search does return the superseded note')

  const absent = await recallBlocksHybrid(store, embedder, 'what runs on port 9999?', { budgetMs: 60_000 })
  t.same(absent, [], 'a named number the store lacks: abstain, vectors add nothing')
  t.ok(abstentionOf(absent), 'marked as an abstention')
  const unguarded = vectorIndexFor(store, 'hash', 64).search((await embedder.embed(['what runs on port 9999?']))[0]!, 3, () => true)
  t.ok(unguarded.length > 0, 'mutation: vectors alone would have answered with unrelated notes')
})
