import t from 'tap'
import { embedderFromConfig } from '../../lib/embed/from-config.ts'
import { HttpEmbedder } from '../../lib/embed/http.ts'
import { EmbedError } from '../../lib/embed/types.ts'
import { resolveConfig } from '../../lib/config.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import type { DegradedReason } from '../../lib/recall/types.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, realBatch, reply, tempStorePath, toolCall } from '../helpers/harness.ts'
import { startFaultServer, startHashServer, type Fault } from './servers.ts'

const NOTES = ['The billing service listens on port 8499.', 'Alice adopted a golden retriever named Biscuit.', 'Deploy with /opt/deploy/run.sh on Fridays.']
const QUERY = 'which port does the billing service use'

function storeWithNotes(t: { teardown(fn: () => void): void }): BlockStore {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  store.commitMany(NOTES.map((text) => ({ text })))
  return store
}

const CASES: Array<[Fault, DegradedReason, number]> = [
  // fault, expected reason, expected requests with maxRetries = 1
  ['hang', 'timeout', 1],
  ['status500', 'embed_error', 2],
  ['status400', 'embed_error', 1],
  ['reset', 'embed_error', 2],
  ['malformed', 'embed_error', 1],
  ['wrong_dims', 'embed_error', 1],
  ['nan', 'embed_error', 1],
  ['short_data', 'embed_error', 1],
]

for (const [fault, reason, requests] of CASES) {
  t.test(`fault ${fault}: the lexical result, degraded '${reason}', no exception`, async (t) => {
    const server = await startFaultServer(fault, 8)
    t.teardown(() => server.close())
    const store = storeWithNotes(t)
    const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'm', dims: 8, maxRetries: 1, retryBaseMs: 1, timeoutMs: 60_000 })
    const hits = await recallBlocksHybrid(store, embedder, QUERY, { topK: 3, budgetMs: fault === 'hang' ? 100 : 60_000 })
    t.equal(hits.degraded, reason)
    t.same(hits, recallBlocks(store, QUERY, { topK: 3 }), 'exactly the lexical hits')
    t.ok(hits.length > 0)
    // A hung request may be aborted before the server even sees it, so only an upper bound there.
    if (fault === 'hang') t.ok(server.requests <= requests, 'no retry after the budget ran out')
    else t.equal(server.requests, requests, fault === 'status400' || fault === 'malformed' ? 'not retried (not retryable)' : 'attempts')
  })
}

t.test('the adapter rejects bad vectors with a typed error, never returns them', async (t) => {
  for (const fault of ['wrong_dims', 'nan'] as const) {
    const server = await startFaultServer(fault, 8)
    const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'm', dims: 8, maxRetries: 0 })
    await t.rejects(embedder.embed(['a', 'b']), { name: 'EmbedError', kind: 'bad_vector' }, fault)
    await server.close()
  }
})

t.test('connection refused degrades to embed_error', async (t) => {
  const server = await startHashServer(8)
  const url = server.url
  await server.close()
  const store = storeWithNotes(t)
  const embedder = new HttpEmbedder({ baseUrl: url, model: 'm', dims: 8, maxRetries: 0 })
  const hits = await recallBlocksHybrid(store, embedder, QUERY, { budgetMs: 60_000 })
  t.equal(hits.degraded, 'embed_error')
})

t.test('circuit breaker: after repeated failures the endpoint is not called; a trial after the cooldown', async (t) => {
  const server = await startFaultServer('status500', 8)
  t.teardown(() => server.close())
  const store = storeWithNotes(t)
  let now = 0
  const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'm', dims: 8, maxRetries: 0, breaker: { failureThreshold: 2, cooldownMs: 1000 }, now: () => now })
  const reasons: Array<DegradedReason | undefined> = []
  for (let i = 0; i < 4; i++) reasons.push((await recallBlocksHybrid(store, embedder, QUERY, { budgetMs: 60_000 })).degraded)
  t.same(reasons, ['embed_error', 'embed_error', 'circuit_open', 'circuit_open'])
  t.equal(server.requests, 2, 'no request while open')
  now = 1000
  t.equal(embedder.breaker.state, 'half_open')
  t.equal((await recallBlocksHybrid(store, embedder, QUERY, { budgetMs: 60_000 })).degraded, 'embed_error', 'one trial goes out')
  t.equal(server.requests, 3)
  t.equal(embedder.breaker.state, 'open', 'a failed trial re-opens at once')
})

t.test('mutation: without the breaker, a failing endpoint is called on every recall', async (t) => {
  const server = await startFaultServer('status500', 8)
  t.teardown(() => server.close())
  const store = storeWithNotes(t)
  const embedder = new HttpEmbedder({ baseUrl: server.url, model: 'm', dims: 8, maxRetries: 0, breaker: { failureThreshold: Number.MAX_SAFE_INTEGER, cooldownMs: 1000 } })
  for (let i = 0; i < 4; i++) await recallBlocksHybrid(store, embedder, QUERY, { budgetMs: 60_000 })
  t.equal(server.requests, 4, 'the breaker is what keeps requests at 2 above')
})

t.test('the API key comes from config or from the named environment variable', async (t) => {
  const server = await startHashServer(8)
  t.teardown(() => server.close())
  const base = resolveConfig().embed
  const fromEnv = embedderFromConfig({ ...base, baseUrl: server.url, model: 'm', apiKeyEnv: 'STABLEMEM_TEST_KEY' }, { STABLEMEM_TEST_KEY: 'k-env' })!
  await fromEnv.embed(['x'])
  t.equal(server.lastHeaders?.authorization, 'Bearer k-env')
  const direct = embedderFromConfig({ ...base, baseUrl: server.url, model: 'm', apiKey: 'k-direct', apiKeyEnv: 'STABLEMEM_TEST_KEY' }, {})!
  await direct.embed(['x'])
  t.equal(server.lastHeaders?.authorization, 'Bearer k-direct')
  const none = embedderFromConfig({ ...base, baseUrl: server.url, model: 'm' }, {})!
  await none.embed(['x'])
  t.equal(server.lastHeaders?.authorization, undefined, 'no key, no header')
  t.throws(() => embedderFromConfig({ ...base, baseUrl: server.url, model: 'm', apiKeyEnv: 'UNSET_VAR' }, {}), /UNSET_VAR/)
  t.throws(() => embedderFromConfig({ ...base, baseUrl: server.url }, {}), /embed\.model/)
  t.equal(embedderFromConfig(base, {}), null, 'off by default')
  t.ok(new EmbedError('http', 'x', { status: 503 }).retryable && !new EmbedError('http', 'x', { status: 404 }).retryable)
})

t.test('plugin with a failing embedder: commit and the tool never wait or fail, recall is lexical and the degradation is visible', async (t) => {
  const server = await startFaultServer('hang', 8)
  t.teardown(() => server.close())
  const path = tempStorePath()
  const embed = { ...resolveConfig().embed, baseUrl: server.url, model: 'm', dims: 8, recallBudgetMs: 50 }
  const h = await boot({ path, embed }, [
    toolCall('c1', 'stablemem_commit', { text: 'billing 服务端口 8499，部署在 10.3.7.9' }),
    reply('ok'),
    reply('8499'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('please remember the billing port')
  const saved = await h.ctx.stablemem.commit({ text: 'The billing service listens on port 8499.' })
  t.equal(saved.created, true, 'commit returns while the embedder hangs')
  const stats = await h.ctx.stablemem.stats()
  t.equal(stats.vectors?.stored, 0, 'no vector yet, nothing waited for it')
  await h.turn(realBatch('which port does the billing service listen on')[0]!)
  t.same(h.errors, [])
  const after = await h.ctx.stablemem.stats()
  t.equal(after.recallDegraded.timeout, 2, 'both turns\' pre-step recalls timed out on the vector side')
  t.equal(after.injections, 1, 'and the second still injected the lexical notes')
  const last = h.adapter.requests[2]!
  const texts = last.messages.flatMap((m) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])))
  t.ok(texts.some((x) => x.includes('> The billing service listens on port 8499.')), 'lexical notes injected (the relevant one: the gate leaves out the note holding only "billing")')
  const direct = await h.ctx.stablemem.recall('which port does the billing service listen on')
  t.ok(direct.length > 0)
  const line = (await h.ctx.stablemem.stats()).recallDegraded
  t.equal(line.timeout, 3)
  t.match(h.ctx.stablemem.vectorHealthLine(), /Vector recall is degraded \(timeout 3\)/)
  t.ok(texts.some((x) => x.includes('Vector recall is degraded (timeout 1)')), 'the prompt context line of the second turn shows the degradation')
})
