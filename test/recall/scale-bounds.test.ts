/**
 * The bounds that keep every query kind's cost flat as the store grows (docs/benchmarks.md,
 * "Scale"): typo neighbours of a missing string are found with a few lookups that give the same
 * answer as counting each phrase, and a lone very common term reads only its newest notes.
 */
import t from 'tap'
import { typoVariants } from '../../lib/recall/abstain.ts'
import { matchPhrase } from '../../lib/recall/fts-query.ts'
import { FRAME_ROWS, PHRASE_LOOKUPS, phraseForms, presentNeighbours } from '../../lib/recall/near-symbols.ts'
import { recallBlocks, SEARCH_POSTINGS } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

/** Notes full of the strings typos land on: ports, IPs, versions, paths, some glued to Chinese. */
function symbolStore(): BlockStore {
  const store = new BlockStore(':memory:')
  const notes: string[] = []
  for (let i = 0; i < 300; i++) {
    notes.push(`billing 服务端口 ${8400 + (i % 150)}`)
    notes.push(`网关在 10.3.${i % 12}.${(i * 7) % 40}`)
    notes.push(`deployed v2.${i % 9}.${i % 31} to staging`)
    notes.push(`config at /srv/api/gateway-${1300 + (i % 40)}.conf, owner ops`)
  }
  notes.push('Résumé host 10.3.7.99 and café-8450') // diacritics fold as the index folds them
  store.commitMany(notes.map((text) => ({ text })))
  return store
}

/** What counting each phrase says: the answer `presentNeighbours` must give. */
function truth(store: BlockStore, forms: readonly string[]): Set<string> {
  return new Set(forms.filter((f) => store.matchCount(matchPhrase(f)) > 0))
}

t.test('typo neighbours: the same answer as one phrase count each, for ports, IPs and versions', async (t) => {
  const store = symbolStore()
  t.teardown(() => store.close())
  for (const missing of ['8394', '8560', '10.3.7.9', '10.3.11.28', '10.3.70.9', 'v2.4.13', 'v2.11.3', '2.4.13']) {
    const forms = typoVariants(missing).flatMap(phraseForms)
    t.same([...presentNeighbours(store, missing, forms)].sort(), [...truth(store, forms)].sort(), missing)
  }
})

t.test('typo neighbours with words: never a string no note holds, and at most PHRASE_LOOKUPS phrase lookups', async (t) => {
  const store = symbolStore()
  t.teardown(() => store.close())
  const missing = '/srv/api/gateway-1350.conf'
  const forms = typoVariants(missing).flatMap(phraseForms)
  let phraseLookups = 0
  const ftsRowids = store.ftsRowids.bind(store)
  store.ftsRowids = (match, limit) => {
    if (limit === 1 && match.includes('/')) phraseLookups++
    return ftsRowids(match, limit)
  }
  const present = presentNeighbours(store, missing, forms)
  const expected = truth(store, forms)
  t.ok([...present].every((f) => expected.has(f)), 'only strings some note holds')
  t.ok(present.size > 0, 'a stored neighbour is still found')
  t.ok(phraseLookups <= PHRASE_LOOKUPS, `${phraseLookups} phrase lookups`)

  const m = mutant({ file: 'recall/near-symbols.ts', from: 'if (lookups >= PHRASE_LOOKUPS) return', to: '' })
  t.teardown(() => m.remove())
  const unbounded = await m.load<typeof import('../../lib/recall/near-symbols.ts')>('recall/near-symbols.ts')
  phraseLookups = 0
  unbounded.presentNeighbours(store, missing, forms)
  t.ok(phraseLookups > PHRASE_LOOKUPS, 'mutation: without the budget every neighbour is looked up')
})

t.test('typo neighbours: a frame with more notes than FRAME_ROWS falls back to phrase lookups, still right', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: FRAME_ROWS + 20 }, (_, i) => ({ text: `host 10.3.${i % 200}.9 entry ${i}` })))
  const forms = typoVariants('10.3.7.8').flatMap(phraseForms)
  const present = presentNeighbours(store, '10.3.7.8', forms)
  t.ok(present.has('10.3.7.9'), 'the neighbour in the crowded frame is found')
  t.ok([...present].every((f) => truth(store, forms).has(f)))
})

t.test('a lone term past the postings bound: the newest notes holding it are the candidates', async (t) => {
  let clock = 1_700_000_000_000
  const store = new BlockStore(':memory:', { now: () => (clock += 1000) })
  t.teardown(() => store.close())
  // Old notes are the shortest (best bm25 for the term); the newest are long.
  store.commitMany(Array.from({ length: SEARCH_POSTINGS + 300 }, (_, i) => ({
    text: i < 50 ? `服务 ${i}` : `服务 ${i} 部署在机房，值班的人每周轮换一次，告警规则写在文档里 number ${i}`,
  })))
  const hits = recallBlocks(store, '服务', { topK: 5 })
  t.equal(hits.length, 5)
  t.ok(hits.every((h) => !/^服务 \d+$/.test(h.text)), 'the oldest notes are not read, however short')
  const m = mutant({ file: 'recall/recall.ts', from: 'postings(store, terms) > SEARCH_POSTINGS', to: 'false' })
  t.teardown(() => m.remove())
  const unbounded = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(unbounded.recallBlocks(store, '服务', { topK: 5 }).some((h) => /^服务 \d+$/.test(h.text)), 'mutation: unbounded, every holder is scored')
  const few = new BlockStore(':memory:')
  t.teardown(() => few.close())
  few.commitMany([{ text: '服务 1' }, { text: '服务 2 部署在机房，值班的人每周轮换一次' }])
  t.equal(recallBlocks(few, '服务', { topK: 5 }).length, 2, 'under the bound every holder is ranked as before')
})
