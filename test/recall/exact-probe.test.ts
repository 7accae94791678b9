/**
 * The exact-symbol probe (docs/benchmarks.md, "Scale: the query side"): each spelling of an exact
 * symbol is read once unranked, an absent one leaves the OR search, and one whose notes the OR
 * search already ranked is not searched again — with hits, scores and abstentions exactly those
 * of searching every spelling. The probe's row count is the phrase's match count when it is short.
 */
import t from 'tap'
import { DatabaseSync } from 'node:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { abstentionOf } from '../../lib/recall/abstain.ts'
import { matchPhrase } from '../../lib/recall/fts-query.ts'
import { typoVariants } from '../../lib/recall/abstain.ts'
import { FRAME_ROWS, phraseForms, presentNeighbours } from '../../lib/recall/near-symbols.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

type Recall = typeof recallBlocks

function portStore(): BlockStore {
  const store = new BlockStore(':memory:')
  const notes: string[] = []
  for (let i = 0; i < 120; i++) notes.push(`服务 svc-${i} 的端口是 ${8000 + i}，部署在 10.3.${i % 7}.${i % 50}`)
  notes.push('billing 服务的端口是 8443', 'the gateway version is v2.4.13 since March', 'gateway 升级到 2.4.13 了')
  store.commitMany(notes.map((text) => ({ text })))
  return store
}

/** The MATCH expressions `ftsCandidates` is asked while `fn` runs. */
function searched(store: BlockStore, fn: () => void): string[] {
  const seen: string[] = []
  const original = store.ftsCandidates
  store.ftsCandidates = (match, ...rest) => { seen.push(match); return original.call(store, match, ...rest) }
  try { fn() } finally { store.ftsCandidates = original }
  return seen
}

/** Hits with their abstention, as one comparable value. */
function outcome(recall: Recall, store: BlockStore, query: string): unknown {
  const hits = recall(store, query, { topK: 5 })
  return { hits, abstained: abstentionOf(hits) ?? null }
}

const QUERIES = ['8443 和 9999 是哪个服务的？', '8443 是哪个服务的？', 'what is 8007 used for?', '10.3.2.9 是哪台机器', 'gateway v2.4.13', '2.4.13 升级', '9999 是哪个服务的？',
  '10.9.9.9 在哪', 'v7.7.7 changes', '端口 8443 和 8010']

t.test('a present symbol whose notes the OR search ranked is not searched again; an absent one is never searched', async (t) => {
  const store = portStore()
  t.teardown(() => store.close())
  const present = searched(store, () => recallBlocks(store, '8443 是哪个服务的？', { topK: 5 }))
  t.notOk(present.includes(matchPhrase('8443')), 'no ranked search of its own')
  t.ok(present.some((m) => m.includes('"8443"')), 'still part of the OR search')
  const absent = searched(store, () => recallBlocks(store, '9999 是哪个服务的？', { topK: 5 }))
  t.ok(absent.every((m) => !m.includes('"9999"')), 'an absent symbol reaches no ranked search')
  t.ok(isAbstained(recallBlocks(store, '9999 是哪个服务的？', { topK: 5 })), 'and recall still abstains')

  const again = mutant({ file: 'recall/recall.ts', from: 'probe.every((rowid) => bm25.has(rowid))', to: 'false' })
  const inOr = mutant({ file: 'recall/recall.ts', from: 'terms.exact.filter((s) => probes.get(matchPhrase(s))!.length > 0)', to: 'terms.exact' })
  t.teardown(() => { again.remove(); inOr.remove() })
  const searchAgain = (await again.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).recallBlocks
  const keepAbsent = (await inOr.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).recallBlocks
  t.ok(searched(store, () => searchAgain(store, '8443 是哪个服务的？', { topK: 5 })).includes(matchPhrase('8443')), 'mutation: without the skip it is searched again')
  // (A query whose every asked string is absent abstains before any search: one present string keeps it searching.)
  t.ok(searched(store, () => recallBlocks(store, '8443 和 9999 是哪个服务的？', { topK: 5 })).every((m) => !m.includes('"9999"')), 'beside a present one, an absent symbol is not searched')
  t.ok(searched(store, () => keepAbsent(store, '8443 和 9999 是哪个服务的？', { topK: 5 })).some((m) => m.includes('"9999"')), 'mutation: the absent symbol stays in the OR search')

  // Neither shortcut changes a hit, a score, an order or an abstention.
  for (const query of QUERIES) {
    const expected = outcome(recallBlocks, store, query)
    t.strictSame(outcome(searchAgain, store, query), expected, `same as searching again: ${query}`)
    t.strictSame(outcome(keepAbsent, store, query), expected, `same as keeping absent symbols: ${query}`)
  }
})

t.test('within scopes the probe reads the whole store and the scoped search still decides', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务的端口是 8443', scope: 'workspace:/a' })
  store.commit({ text: 'gateway 服务的端口是 8444', scope: 'workspace:/b' })
  const inA = recallBlocks(store, '8443 是哪个服务的？', { topK: 5, scopes: ['global', 'workspace:/a'] })
  t.equal(inA[0]?.text, 'billing 服务的端口是 8443')
  const inB = recallBlocks(store, '8443 是哪个服务的？', { topK: 5, scopes: ['global', 'workspace:/b'] })
  t.ok(isAbstained(inB), 'held only in another workspace: abstains here')
})

t.test('a short unranked read caches the match count, and a write clears it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-probe-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'memory.db')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 6 }, (_, i) => ({ text: `node ${i} listens on 7070` })))
  const match = matchPhrase('7070')
  t.equal(store.ftsRowids(match, 5).length, 5, 'cut at the limit')
  t.equal(store.matchCount(match), 6, 'a cut read says nothing about the count')
  t.equal(store.ftsRowids(match, 10).length, 6)
  t.equal(store.matchCount(match), 6)
  store.commit({ text: 'node 6 listens on 7070' })
  t.equal(store.matchCount(match), 7, 'our own write clears it')
  store.ftsRowids(match, 10)
  const other = new DatabaseSync(path)
  other.exec("INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (9999, 'listens on 7070', '')")
  other.close()
  t.equal(store.matchCount(match), 8, "another connection's write clears it")

  const m = mutant({ file: 'store/fts-reads.ts', from: 'if (rowids.length < limit) this.rememberCount', to: 'if (rowids.length <= limit) this.rememberCount' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const mutated = new Mutated(':memory:')
  t.teardown(() => mutated.close())
  mutated.commitMany(Array.from({ length: 6 }, (_, i) => ({ text: `node ${i} listens on 7070` })))
  mutated.matchCount(matchPhrase('node')) // the cache is in use (a first read starts it empty)
  mutated.ftsRowids(match, 5)
  t.equal(mutated.matchCount(match), 5, 'mutation: a cut read taken for the count is wrong')
})

t.test('typo neighbours checked in memory cost no token lookups', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 200 }, (_, i) => ({ text: `网关在 10.3.${i % 12}.${(i * 7) % 40}` })))
  const forms = typoVariants('10.3.7.9').flatMap(phraseForms)
  const count = (fn: typeof presentNeighbours) => {
    let lookups = 0
    const original = store.ftsRowids
    store.ftsRowids = (match, limit) => { if (limit === 1) lookups++; return original.call(store, match, limit) }
    try { return { present: [...fn(store, '10.3.7.9', forms)].sort(), lookups } } finally { store.ftsRowids = original }
  }
  const ours = count(presentNeighbours)
  t.equal(ours.lookups, 0, 'every frame of an IP is read in memory')
  t.same(ours.present, forms.filter((f) => store.matchCount(matchPhrase(f)) > 0).sort(), 'the same answer as counting each phrase')
  const m = mutant({ file: 'recall/near-symbols.ts', from: 'for (const [order, form] of forms.entries()) {', to: 'for (const [order, form] of forms.entries()) {\n    if (!held(form)) continue' })
  t.teardown(() => m.remove())
  const eager = (await m.load<typeof import('../../lib/recall/near-symbols.ts')>('recall/near-symbols.ts')).presentNeighbours
  const theirs = count(eager)
  t.ok(theirs.lookups > 10, `mutation: checking every token first costs ${theirs.lookups} lookups`)
  t.same(theirs.present, ours.present, 'for the same answer')
})

t.test('the one-token neighbours of a port are read together, and looked up one by one only past FRAME_ROWS notes', async (t) => {
  const count = (store: BlockStore, fn: typeof presentNeighbours, original: string) => {
    const forms = typoVariants(original).flatMap(phraseForms)
    let lookups = 0
    const read = store.ftsRowids
    store.ftsRowids = (match, limit) => { if (limit === 1) lookups++; return read.call(store, match, limit) }
    try { return { present: [...fn(store, original, forms)].sort(), lookups, expected: forms.filter((f) => store.matchCount(matchPhrase(f)) > 0).sort() } } finally { store.ftsRowids = read }
  }
  const few = new BlockStore(':memory:')
  t.teardown(() => few.close())
  few.commitMany(['billing 服务端口 8499', 'the cache listens on 8449', 'v8494x is a tag, not a port', '网关 8480'].map((text) => ({ text })))
  const ours = count(few, presentNeighbours, '8494')
  t.same(ours.present, ['8449', '8499'])
  t.same(ours.present, ours.expected, 'the same answer as counting each phrase')
  t.equal(ours.lookups, 0, 'no token looked up')

  // Past FRAME_ROWS notes the read is cut, so its texts cannot say which tokens are held.
  const crowded = new BlockStore(':memory:')
  t.teardown(() => crowded.close())
  crowded.commitMany(Array.from({ length: FRAME_ROWS + 20 }, (_, i) => ({ text: `worker ${i} listens on 8490` })))
  crowded.commit({ text: 'billing 服务端口 8499' })
  const cut = count(crowded, presentNeighbours, '8494')
  t.same(cut.present, ['8490', '8499'])
  t.same(cut.present, cut.expected)
  const m = mutant({ file: 'recall/near-symbols.ts', from: 'if (rowids.length <= FRAME_ROWS) {', to: 'if (true) {' })
  t.teardown(() => m.remove())
  const trusting = (await m.load<typeof import('../../lib/recall/near-symbols.ts')>('recall/near-symbols.ts')).presentNeighbours
  t.same(count(crowded, trusting, '8494').present, ['8490'], 'mutation: trusting a cut read misses a held neighbour')
})

function isAbstained(hits: ReturnType<Recall>): boolean {
  return abstentionOf(hits) !== undefined
}
