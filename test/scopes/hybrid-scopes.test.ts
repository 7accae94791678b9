/**
 * Scopes on the vector path: with a real embedding model served over HTTP, a note another
 * workspace saved is never recalled on vector similarity alone, while the same query finds it in
 * its own workspace.
 */
import t from 'tap'
import { backfillVectors } from '../../lib/embed/backfill.ts'
import { HttpEmbedder } from '../../lib/embed/http.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { startModelServer } from '../embed/servers.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const BIKE = 'I bought a new road bike for the summer races.'
const A = 'workspace:/projects/a'
const B = 'workspace:/projects/b'

t.test('vector candidates stay inside the union', async (t) => {
  const server = await startModelServer()
  t.teardown(() => server.close())
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  store.commit({ text: BIKE, scope: A })
  store.commitMany(['The billing service listens on port 8499.', 'My sister lives in Lisbon and teaches chemistry.'].map((text) => ({ text })))
  const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'use-lite', languages: ['en'] })
  await backfillVectors(store, embedder)
  const query = 'Which sport equipment did I buy?'
  const inA = await recallBlocksHybrid(store, embedder, query, { topK: 3, budgetMs: 60_000, scopes: ['global', A] })
  t.equal(inA.degraded, undefined, 'vectors took part')
  t.equal(inA[0]?.text, BIKE, 'found in its own workspace')
  const inB = await recallBlocksHybrid(store, embedder, query, { topK: 3, budgetMs: 60_000, scopes: ['global', B] })
  t.notOk(inB.some((h) => h.text === BIKE), 'never in another workspace')

  const m = mutant({ file: 'recall/hybrid.ts', from: '(lang, id) => allowLang(lang) && member(id)', to: '(lang) => allowLang(lang)' })
  t.teardown(() => m.remove())
  const { recallBlocksHybrid: mutated } = await m.load<typeof import('../../lib/recall/hybrid.ts')>('recall/hybrid.ts')
  const leaked = await mutated(store, embedder, query, { topK: 3, budgetMs: 60_000, scopes: ['global', B] })
  t.ok(leaked.some((h) => h.text === BIKE), 'mutation: without the membership test the vector path leaks it')
})
