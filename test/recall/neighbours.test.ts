import t from 'tap'
import { areNeighbours, liftNeighbours, NEIGHBOUR_GAP_MS, NEIGHBOUR_LIFT, neighbourRowids, type NeighbourScored } from '../../lib/recall/neighbours.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, evidenceOf, gateHits, type GateOptions } from '../../lib/recall/gate.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { computeGolden, GOLDEN_NOTES, readGolden } from './golden-recall.ts'
import { mutant } from '../helpers/mutant.ts'

/**
 * Conversation neighbours (`lib/recall/neighbours.ts`): the answer saved beside a matching
 * question is recalled though it shares no word with the query; a note of another scene, of the
 * same scene on another day, of another workspace, or of a date without a time of day is not;
 * nothing is ever lowered; the gate
 * injects a lifted reply with the hit that lifted it. Each with a mutation check.
 */

/** A save time with a time of day (an exact midnight carries a date only: no neighbours). */
const SAVED = 1_700_000_000_000

type Recall = typeof recallBlocks
type StoreCtor = typeof BlockStore

interface Note { text: string, scene?: string, scope?: string, at?: number }

/** A store with the notes saved in order, `at` ms after a fixed start (default one second apart). */
function storeWith(notes: readonly Note[], Store: StoreCtor = BlockStore): BlockStore {
  let clock = 0
  const start = 1_700_000_000_000
  const store = new Store(':memory:', { now: () => clock })
  notes.forEach((n, i) => {
    clock = start + (n.at ?? i * 1000)
    store.commit({ text: n.text, scene: n.scene ?? '', ...(n.scope ? { scope: n.scope } : {}) })
  })
  return store
}

const QUESTION = 'Which database did you pick for the ledger service?'
const ANSWER = 'We went with Postgres in the end, mostly for its JSON columns.'
const QUERY = 'database for the ledger service'

const CHAT: Note[] = [
  { text: 'Lunch on Friday is at the noodle place near the station.', scene: 'chat-2' },
  { text: QUESTION, scene: 'chat-1' },
  { text: ANSWER, scene: 'chat-1' },
  { text: 'The ledger dashboards are owned by the finance team.', scene: 'chat-3' },
]

const texts = (recall: Recall, store: BlockStore, query: string, options: Parameters<Recall>[2] = {}) => recall(store, query, { topK: 5, ...options }).map((h) => h.text)

t.test('the answer saved beside a matching question is recalled, though it shares no word with the query', async (t) => {
  const store = storeWith(CHAT)
  t.teardown(() => store.close())
  const hits = texts(recallBlocks, store, QUERY)
  t.equal(hits[0], QUESTION)
  t.ok(hits.includes(ANSWER), 'the reply is read as a neighbour of the best hit')
  const full = recallBlocks(store, QUERY, { topK: 5 })
  t.match(full.find((h) => h.text === ANSWER)?.why, `lexical 0.000; beside ${full[0]!.id}`, 'its why names the note it was saved beside')
  // Mutation: without neighbours the reply is no candidate at all.
  t.notOk(texts(recallBlocks, store, QUERY, { neighbours: false }).includes(ANSWER))
})

t.test('the gate: a lifted reply passes the falloff of an open turn; its relevance adds nothing to the evidence', async (t) => {
  const store = storeWith(CHAT)
  t.teardown(() => store.close())
  const gate: GateOptions = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
  const hits = recallBlocks(store, QUERY, { topK: 5 })
  const answer = hits.find((h) => h.text === ANSWER)!
  t.equal(answer.beside, hits[0]!.id, 'the hit carries the neighbour that lifted it')
  t.ok(answer.relevance < DEFAULT_FALLOFF * hits[0]!.relevance, 'its own relevance is below the falloff')
  t.ok(gateHits(hits, gate).some((h) => h.text === ANSWER), 'the turn is open: the reply is injected with its question')
  t.equal(evidenceOf(hits), evidenceOf(hits.map(({ beside: _, ...h }) => h)), 'the evidence is the same with or without the lift mark')
  t.same(gateHits(hits.map((h) => ({ ...h, relevance: 0.01, beside: 'x' })), gate), [], 'a closed turn stays closed, lifted notes included')
  // Mutations: the gate reading relevance alone, and recall not marking the lift, drop the reply again.
  const m = mutant({ file: 'recall/gate.ts', from: ' || h.beside !== undefined', to: '' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/recall/gate.ts')>('recall/gate.ts')
  t.notOk(mutated.gateHits(hits, gate).some((h) => h.text === ANSWER), 'the mutant gate drops the reply')
  const unmarked = mutant({ file: 'recall/recall.ts', from: 'if (c.beside !== undefined) hit.beside = c.beside', to: '' })
  t.teardown(() => unmarked.remove())
  const { recallBlocks: mutatedRecall } = await unmarked.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await unmarked.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = storeWith(CHAT, MutatedStore)
  t.teardown(() => store2.close())
  t.notOk(gateHits(mutatedRecall(store2, QUERY, { topK: 5 }), gate).some((h) => h.text === ANSWER), 'unmarked, the reply falls off')
})

t.test('a neighbour is lifted toward a better one, never above it, and nothing is lowered', async (t) => {
  const at = (rowid: number, score: number, scene = 's', exact = false): NeighbourScored => ({ id: `n${rowid}`, rowid, scene, createdAt: SAVED, exact, score })
  const list = [at(10, 1), at(11, 0.1), at(12, 0.05), at(13, 0.9), at(20, 0.3), at(21, 0.8, 'other'), at(30, 0.2, ''), at(31, 1, '')]
  liftNeighbours(list)
  const score = (rowid: number) => list.find((c) => c.rowid === rowid)!.score
  t.equal(score(10), 1, 'the best is not lowered')
  t.equal(score(11), 0.1 + NEIGHBOUR_LIFT * (1 - 0.1), 'lifted toward its best neighbour (two places apart counts too)')
  t.equal(score(12), 0.05 + NEIGHBOUR_LIFT * (1 - 0.05))
  t.equal(score(13), 0.9, 'its neighbours within two places are weaker (the best is three away): untouched')
  t.equal(list.find((c) => c.rowid === 11)!.beside, 'n10', 'the lifting neighbour is named')
  t.equal(list.find((c) => c.rowid === 10)!.beside, undefined)
  t.equal(score(20), 0.3, 'three places from any better note of its scene: untouched')
  t.equal(score(30), 0.2, 'a note without a scene has no neighbours')
  const pinned = [at(1, 0.2, 's', true), at(2, 1)]
  liftNeighbours(pinned)
  t.equal(pinned[0]!.score, 0.2, 'a pinned note keeps its pin score')
  // Mutation: lifting toward any neighbour, better or not, lowers the best note.
  const m = mutant({ file: 'recall/neighbours.ts', from: 'if (near > own) {', to: 'if (near !== own) {' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/recall/neighbours.ts')>('recall/neighbours.ts')
  const again = [at(10, 1), at(11, 0.1)]
  mutated.liftNeighbours(again)
  t.not(again[0]!.score, 1, 'the mutant lowers the best note')
})

t.test('a note of the same scene saved hours later is another conversation', async (t) => {
  const later: Note[] = [
    { text: QUESTION, scene: 'chat-1', at: 0 },
    { text: 'Remind me to water the plants on the balcony.', scene: 'chat-1', at: 2 * NEIGHBOUR_GAP_MS },
    { text: 'Lunch on Friday is at the noodle place near the station.', scene: 'chat-2', at: 2 * NEIGHBOUR_GAP_MS + 1000 },
  ]
  const store = storeWith(later)
  t.teardown(() => store.close())
  t.notOk(texts(recallBlocks, store, QUERY).includes(later[1]!.text), 'not read as a neighbour')
  t.notOk(areNeighbours({ rowid: 1, scene: 's', createdAt: SAVED }, { rowid: 2, scene: 's', createdAt: SAVED + NEIGHBOUR_GAP_MS + 1 }))
  // Mutation: without the time bound the note of another day rides in.
  const m = mutant({ file: 'recall/neighbours.ts', from: ' && Math.abs(a.createdAt - b.createdAt) <= NEIGHBOUR_GAP_MS', to: '' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutated } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = storeWith(later, MutatedStore)
  t.teardown(() => store2.close())
  t.ok(texts(mutated, store2, QUERY).includes(later[1]!.text))
})

t.test('notes that carry a date only (both exactly at midnight) are not neighbours; the same notes saved seconds apart are', async (t) => {
  const midnight = Date.UTC(2023, 10, 15) - 1_700_000_000_000 // `at` is after storeWith's start
  const day = (at: number): Note[] => [
    { text: 'Bart bought a toy robot online and it arrived without its remote.', scene: 'user1', at },
    { text: 'Bart chose a kite as the birthday present for his friend Jimmy.', scene: 'user1', at },
  ]
  const query = 'the toy robot bought online'
  const dated = storeWith(day(midnight))
  t.teardown(() => dated.close())
  t.notOk(texts(recallBlocks, dated, query).includes(day(0)[1]!.text), 'two memories of one day are not one conversation')
  t.notOk(areNeighbours({ rowid: 1, scene: 's', createdAt: Date.UTC(2023, 11, 25) }, { rowid: 2, scene: 's', createdAt: Date.UTC(2023, 11, 25) }))
  t.ok(areNeighbours({ rowid: 1, scene: 's', createdAt: Date.UTC(2023, 11, 25) }, { rowid: 2, scene: 's', createdAt: Date.UTC(2023, 11, 25) + 1000 }),
    'one exact midnight alone is a time like any other')
  const live = storeWith([{ ...day(0)[0]!, at: 0 }, { ...day(0)[1]!, at: 1000 }])
  t.teardown(() => live.close())
  t.ok(texts(recallBlocks, live, query).includes(day(0)[1]!.text), 'saved a second apart, the same notes are neighbours')
  // Mutation: without the date-only rule the other memory of the day rides in.
  const m = mutant({ file: 'recall/neighbours.ts', from: ' &&\n    !dateOnly(a.createdAt, b.createdAt)', to: '' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutated } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = storeWith(day(midnight), MutatedStore)
  t.teardown(() => store2.close())
  t.ok(texts(mutated, store2, query).includes(day(0)[1]!.text))
})

t.test('a note saved beside the hit in another scene is not its neighbour', async (t) => {
  const store = storeWith(CHAT)
  t.teardown(() => store.close())
  t.notOk(texts(recallBlocks, store, QUERY).includes(CHAT[0]!.text), 'the lunch note (chat-2) is saved right before the question')
  // Mutation: without the scene test the note of chat-2 rides in.
  const m = mutant({ file: 'recall/neighbours.ts', from: "a.scene !== '' && a.scene === b.scene && ", to: '' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutated } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = storeWith(CHAT, MutatedStore)
  t.teardown(() => store2.close())
  t.ok(texts(mutated, store2, QUERY).includes(CHAT[0]!.text))
})

t.test('within scopes, a neighbour saved in another workspace is never read', async (t) => {
  const scoped: Note[] = [
    { text: QUESTION, scene: 'chat-1', scope: 'workspace:/a' },
    { text: ANSWER, scene: 'chat-1', scope: 'workspace:/b' },
    { text: 'We also keep a read replica for the reports.', scene: 'chat-1', scope: 'workspace:/a' },
  ]
  const store = storeWith(scoped)
  t.teardown(() => store.close())
  const inA = texts(recallBlocks, store, QUERY, { scopes: ['workspace:/a'] })
  t.notOk(inA.includes(ANSWER), 'the reply lives in workspace b')
  t.ok(inA.includes(scoped[2]!.text), 'the neighbour in the same workspace is read')
  t.ok(texts(recallBlocks, store, QUERY).includes(ANSWER), 'unscoped, it is')
  // Mutation: without the visibility filter the other workspace's note leaks in.
  const m = mutant({ file: 'recall/recall.ts', from: 'near = near.filter(([, b]) => visible.has(b.id))', to: 'void visible' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutated } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = storeWith(scoped, MutatedStore)
  t.teardown(() => store2.close())
  t.ok(texts(mutated, store2, QUERY, { scopes: ['workspace:/a'] }).includes(ANSWER))
})

t.test('only the best candidates\' unmatched places beside them are read', async (t) => {
  const c = (rowid: number, score: number, scene = 's'): NeighbourScored => ({ id: `n${rowid}`, rowid, scene, createdAt: SAVED, exact: false, score })
  t.same(neighbourRowids([c(5, 1), c(6, 0.5), c(1, 0.1, '')]), [3, 4, 7, 8], 'two places each side, candidates and rowid 0 left out')
  const many = Array.from({ length: 8 }, (_, i) => c(100 * (i + 1), 1 - i / 10))
  t.equal(neighbourRowids(many).length, 5 * 4, 'only the five best are sources')
})

t.test('golden fixture: every hit that changed is a conversation neighbour of a hit above it', async (t) => {
  // The fixture was regenerated for the neighbours: its notes of one scene were saved one second
  // apart, so a note ranked below a strong hit of its scene now lists that hit's neighbours, which
  // match no query term (lexical 0) and so were no candidates before. The hits found before keep
  // their order among themselves; a lifted hit's why names the neighbour that lifted it.
  const golden = readGolden()
  const without = computeGolden({ neighbours: false })
  t.same(computeGolden(), golden, 'the fixture is what recall computes')
  const place = new Map(GOLDEN_NOTES.map((n, i) => [n.text, { rowid: i + 1, scene: n.scene ?? '', createdAt: i * 1000 }]))
  let changed = 0
  golden.forEach((g, i) => {
    const before = without[i]!.hits.map((h) => h.text)
    const kept = g.hits.map((h) => h.text).filter((x) => before.includes(x))
    t.same(kept, before.filter((x) => kept.includes(x)), `${g.query}: earlier hits keep their order`)
    for (const [rank, hit] of g.hits.entries()) {
      if (before.includes(hit.text)) continue
      changed++
      const above = g.hits.slice(0, rank).some((h) => areNeighbours(place.get(h.text)!, place.get(hit.text)!))
      t.ok(above, `${g.query}: «${hit.text}» is a neighbour of a hit ranked above it`)
    }
  })
  t.ok(changed > 0, 'the fixture did change')
  const ids = new Map(computeGolden().flatMap((g) => g.hits.map((h): [string, string] => [h.id, h.text])))
  for (const g of golden) {
    for (const hit of g.hits) {
      const beside = /; beside (\S+)$/.exec(hit.why)?.[1]
      // The fixture was regenerated once more when hits began to carry the lift (`Hit.beside`,
      // which the gate reads): the only change is that field, on exactly the hits whose why names it.
      t.equal(hit.beside, beside, `${g.query}: «${hit.text}» carries the neighbour its why names`)
      // And again when hits began to carry their scene (`Hit.scene`, which the gate's scene
      // evidence reads): every hit of a note with a scene carries it, the others none.
      t.equal(hit.scene, place.get(hit.text)!.scene || undefined, `${g.query}: «${hit.text}» carries its scene`)
      if (beside === undefined || !ids.has(beside)) continue
      t.ok(areNeighbours(place.get(hit.text)!, place.get(ids.get(beside)!)!), `${g.query}: «${hit.text}» names a neighbour`)
    }
  }
})

t.test('a team snapshot numbers its rows as fetched: recall reads no neighbours there', async (t) => {
  type Snapshot = typeof import('../../lib/team/snapshot.ts')
  type Terms = typeof import('../../lib/team/terms.ts')
  const rows = (terms: Terms) => [QUESTION, 'The ledger team meets on Mondays.', 'Service owners rotate every quarter.'].map((text, i) => ({
    seq: i + 1, id: `n${i}`, text, tokens: terms.noteTokens(text), member: 'm', createdAt: SAVED, scene: 'chat-1', supersededBy: null,
  }))
  const snapshotOf = (S: Snapshot, terms: Terms) => {
    const list = rows(terms)
    const counts = new Map<string, number>()
    for (const r of list) for (const key of terms.noteTerms(r.tokens)) counts.set(key, (counts.get(key) ?? 0) + 1)
    const snapshot = new S.TeamSnapshot(list.length, list.reduce((n, r) => n + r.tokens.latin.length + r.tokens.cjk.length, 0), counts)
    snapshot.addRows(list)
    return snapshot
  }
  const lifted = (recall: Recall, snapshot: Parameters<Recall>[0]) => recall(snapshot, QUERY, { topK: 5, abstain: false }).filter((h) => h.why.includes('beside')).length
  const snapshot = snapshotOf(await import('../../lib/team/snapshot.ts'), await import('../../lib/team/terms.ts'))
  t.equal(snapshot.rowidsInSaveOrder, false)
  t.equal(lifted(recallBlocks, snapshot), 0, 'rows of one scene fetched side by side are not read as neighbours')
  // Mutation: recall that ignores the source's numbering lifts rows that were merely fetched together.
  const m = mutant({ file: 'recall/recall.ts', from: ' && source.rowidsInSaveOrder !== false', to: '' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutated } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const mutatedSnapshot = snapshotOf(await m.load<Snapshot>('team/snapshot.ts'), await m.load<Terms>('team/terms.ts'))
  t.ok(lifted(mutated, mutatedSnapshot) > 0)
})
