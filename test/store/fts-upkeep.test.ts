/**
 * Index upkeep (lib/store/fts-upkeep.ts) on real store files: a store committed in many small
 * transactions has many segments, upkeep leaves one, and recall returns byte-identical hits with
 * identical scores before and after (merging changes no bm25 statistic). A slice is bounded, upkeep
 * terminates, never runs inside a caller's transaction, and the host's slice never waits for
 * another connection's lock. A second process committing meanwhile loses nothing.
 */
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { ftsStructure } from '../../lib/store/fts-structure.ts'
import { FULL_MERGE_SEGMENTS, mergeSlice, nextMergeScope, SLICE_PAGES } from '../../lib/store/fts-upkeep.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { startFixture } from '../reliability/child.ts'

const TOPICS = ['billing', 'redis', 'gateway', 'ledger', 'search', 'queue', 'auth', 'backup']
const ZH = ['服务端口', '部署机房', '数据库主库', '缓存集群', '日志归档', '证书轮换']

/** A note of the corpus: English and Chinese terms that repeat across notes (so bm25 has real statistics). */
function note(i: number): string {
  return `${TOPICS[i % TOPICS.length]} note ${i}: service s${i % 97} listens on port ${20000 + (i % 500)}, ${ZH[i % ZH.length]} 在 机房${i % 7} 号 ${i % 13}`
}

/** A store committed in `batches` transactions of `size` notes each: every commit flushes a segment, automerge merges some. */
function committedStore(label: string, batches: number, size: number): { path: string, store: BlockStore } {
  const path = tempStorePath(label)
  const store = new BlockStore(path)
  for (let b = 0; b < batches; b++) store.commitMany(Array.from({ length: size }, (_, i) => ({ text: note(b * size + i), source: 'seed' })))
  return { path, store }
}

const QUERIES = ['billing port 20017', 'redis 服务端口', '缓存集群 机房3', 'service s42', 'gateway 证书轮换', 'ledger note 311', 'absent zyxwv', '端口']

/** Every query's hits, as JSON: ids, text, scores, flags. */
function hitsOf(store: BlockStore): string[] {
  return QUERIES.map((q) => JSON.stringify(recallBlocks(store, q, { topK: 10, recordAccess: false })))
}

t.test('a store committed in many small batches has many segments; upkeep leaves one, and recall is byte-identical', async (t) => {
  const { store } = committedStore('upkeep-identical', 300, 10)
  t.teardown(() => store.close())
  const before = store.ftsSegments()
  t.ok(before >= 5, `commits left ${before} segments`)
  t.equal(store.stats().ftsSegments, before, 'stats() reports the count')
  const hits = hitsOf(store)
  const candidates = store.ftsCandidates('latin : "port"', 50)
  const result = store.upkeep()
  t.equal(result.segmentsBefore, before)
  t.equal(result.segmentsAfter, 1)
  t.equal(store.ftsSegments(), 1)
  t.ok(result.slices >= 1, `${result.slices} slice(s)`)
  t.same(hitsOf(store), hits, 'recall hits (ids, text, scores) byte-identical after the merge')
  t.same(store.ftsCandidates('latin : "port"', 50), candidates, 'bm25 of every candidate unchanged')
  t.same(store.integrityCheck(), ['ok'])
  t.equal(store.count(), 3000)
})

t.test('upkeep terminates: a merged index and an empty one need no slice; a finished merge reports done', async (t) => {
  const { store } = committedStore('upkeep-terminates', 40, 5)
  t.teardown(() => store.close())
  store.upkeep()
  const again = store.upkeep()
  t.same([again.segmentsBefore, again.segmentsAfter, again.slices], [1, 1, 0], 'nothing to merge: no slice, no transaction')
  t.equal(store.upkeepSlice(), 'done', 'a slice on a merged index changes nothing (fewer than 2 rows, FTS5\'s completion signal)')
  const empty = new BlockStore(tempStorePath('upkeep-empty'))
  t.teardown(() => empty.close())
  const none = empty.upkeep()
  t.same([none.segmentsBefore, none.segmentsAfter, none.slices], [0, 0, 0], 'an empty index has no segment and needs no slice')
})

t.test('a slice is bounded: it writes about its page budget, so a merge takes slices in proportion', async (t) => {
  /** Merges a fresh copy of the same store in slices of `pages`; the rows each slice changed. */
  const slices = (pages: number): number[] => {
    const { path, store } = committedStore(`upkeep-bounded-${pages}`, 300, 10)
    store.close()
    const db = new DatabaseSync(path)
    try {
      const changes = () => Number((db.prepare('SELECT total_changes() AS n').get() as { n: number }).n)
      const deltas: number[] = []
      let outcome = 'merged'
      while (outcome === 'merged') {
        const before = changes()
        outcome = mergeSlice(db, 5000, pages)
        deltas.push(changes() - before)
      }
      t.equal(ftsStructure(db, 'blocks_fts').segments, 1, `slices of ${pages} pages merge into one segment`)
      return deltas.slice(0, -1) // the last one found nothing left
    } finally {
      db.close()
    }
  }
  const small = slices(4)
  const large = slices(16)
  t.ok(small.length >= 2 * large.length, `4-page slices: ${small.length}, 16-page slices: ${large.length}`)
  // A slice writes its leaf pages and their doclist-index rows; the one that finishes also deletes the merged segments' rows.
  t.ok(Math.max(...small.slice(0, -1)) <= 16 * 4, `a 4-page slice changed at most ${Math.max(...small.slice(0, -1))} rows`)
  t.ok(SLICE_PAGES >= 16 && SLICE_PAGES <= 256, 'the default budget is a slice of milliseconds (docs/benchmarks.md)')
})

t.test('which merge is due: one across all levels for comparable segments, within levels for small ones beside a large one', async (t) => {
  const { store } = committedStore('upkeep-due', 300, 10)
  t.teardown(() => store.close())
  t.equal(store.mergeDue(false), 'all', 'segments of comparable size: merge them all')
  store.upkeep()
  t.equal(store.mergeDue(false), undefined, 'one segment: nothing due')
  for (let i = 0; i < 3; i++) store.commit({ text: `single ${i}: port ${40000 + i}` })
  t.equal(store.mergeDue(false), 'levels', 'a few one-note segments beside the large one')
  t.equal(store.mergeDue(true), undefined, 'after merging within levels, fewer than FULL_MERGE_SEGMENTS small ones stay')
  for (let i = 3; store.ftsSegments() < FULL_MERGE_SEGMENTS; i++) store.commit({ text: `single ${i}: port ${40000 + i}` })
  t.equal(store.mergeDue(true), 'all', `${store.ftsSegments()} segments left after merging within levels: merge them all`)
  while (store.upkeepSlice({ scope: 'levels' }) === 'merged');
  t.ok(store.ftsSegments() < FULL_MERGE_SEGMENTS, `merging within levels left ${store.ftsSegments()} segments`)
})

t.test('mutation check: without the within-levels step, small segments beside a large one would rewrite it', async (t) => {
  const m = mutant({ file: 'store/fts-upkeep.ts', from: "if (!levelsDone) return 'levels'", to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath('upkeep-due-mutant'))
  t.teardown(() => store.close())
  for (let b = 0; b < 300; b++) store.commitMany(Array.from({ length: 10 }, (_, i) => ({ text: note(b * 10 + i) })))
  store.upkeep()
  for (let i = 0; i < 3; i++) store.commit({ text: `single ${i}: port ${40000 + i}` })
  t.not(store.mergeDue(false), 'levels', 'the mutant picks no merge within levels')
})

t.test('the merge order the host runs and bench:perf times (nextMergeScope): levels, then all only when due; nothing after all', async (t) => {
  const asked: boolean[] = []
  const due = (answer: 'levels' | 'all' | undefined) => (levelsDone: boolean) => { asked.push(levelsDone); return answer }
  t.equal(nextMergeScope('levels', due('all')), 'all', 'after the levels, the full merge when it is worth it')
  t.equal(nextMergeScope('levels', due(undefined)), undefined, 'after the levels, none when the rest is not worth it')
  t.equal(nextMergeScope('levels', due('levels')), undefined, 'never the levels twice')
  t.same(asked, [true, true, true], 'asked with the levels done')
  t.equal(nextMergeScope('all', due('all')), undefined, 'nothing after a full merge')
  t.same(asked, [true, true, true], 'and not asked then')
})

t.test('mutation check: an order that stops after the levels never reaches the full merge', async (t) => {
  const m = mutant({ file: 'store/fts-upkeep.ts', from: "return done === 'levels' && due(true) === 'all' ? 'all' : undefined", to: 'return undefined' })
  t.teardown(() => m.remove())
  const mutated = await m.load<{ nextMergeScope: typeof nextMergeScope }>('store/fts-upkeep.ts')
  t.equal(mutated.nextMergeScope('levels', () => 'all'), undefined, 'the assertion above goes red')
})

t.test('upkeep never runs inside a caller\'s transaction; bad budgets are refused naming the field', async (t) => {
  const { store } = committedStore('upkeep-nested', 30, 5)
  t.teardown(() => store.close())
  t.throws(() => store.transaction(() => store.upkeepSlice()), { code: 'invalid_input', message: /transactions of its own/ })
  t.throws(() => store.transaction(() => store.upkeep()), { code: 'invalid_input' })
  t.throws(() => store.upkeepSlice({ pages: 0 }), { code: 'invalid_input', message: /pages must be a positive integer/ })
  t.ok(store.ftsSegments() > 1, 'nothing was merged')
  store.commit({ text: 'still writable after the refusals' })
})

t.test('the host\'s slice (wait: false) reports busy at once while another connection writes; a waiting slice waits', async (t) => {
  const { path, store } = committedStore('upkeep-busy', 30, 5)
  t.teardown(() => store.close())
  const other = new DatabaseSync(path)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const t0 = performance.now()
  t.equal(store.upkeepSlice({ wait: false }), 'busy')
  t.ok(performance.now() - t0 < 1000, 'did not wait for the lock')
  other.exec('COMMIT')
  t.equal(store.upkeepSlice({ wait: false }), 'merged', 'the lock is free again: the slice runs')
  store.commit({ text: 'busy timeout restored: commits still wait for locks' })
})

t.test('mutation check: without the zero busy timeout the host\'s slice waits for the lock', async (t) => {
  const m = mutant({ file: 'store/fts-upkeep.ts', from: 'return withoutWaiting(db, busyTimeoutMs, slice)', to: 'return slice()' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const path = tempStorePath('upkeep-busy-mutant')
  const store = new Mutated(path, { busyTimeoutMs: 1500 })
  t.teardown(() => store.close())
  for (let b = 0; b < 30; b++) store.commitMany([{ text: note(b) }])
  const other = new DatabaseSync(path)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const t0 = performance.now()
  t.equal(store.upkeepSlice({ wait: false }), 'busy')
  t.ok(performance.now() - t0 >= 1000, 'the mutant waited the whole busy timeout (the guard above is what keeps it at once)')
  other.exec('COMMIT')
})

t.test('mutation check: without the transaction guard a nested upkeep is not refused with a clear error', async (t) => {
  const m = mutant({ file: 'store/fts-upkeep.ts', from: "if (db.isTransaction) throw new StableMemError('invalid_input', 'index upkeep runs in transactions of its own, not inside an open one')", to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath('upkeep-nested-mutant'))
  t.teardown(() => store.close())
  for (let b = 0; b < 30; b++) store.commitMany([{ text: note(b) }])
  let code: unknown
  try { store.transaction(() => store.upkeepSlice()) } catch (error) { code = (error as { code?: unknown }).code }
  t.not(code, 'invalid_input', 'the mutant fails some other way (SQLite\'s nested BEGIN), so the guard is what names it')
})

t.test('a second process committing while upkeep runs loses nothing', async (t) => {
  const { path, store } = committedStore('upkeep-concurrent', 200, 10)
  t.teardown(() => store.close())
  const count = 150
  const child = startFixture('worker', [path, 'gamma', String(count), '5000'])
  let runs = 0
  let done = false
  void child.waitFor((l) => l === 'done' || l.startsWith('error')).then(() => { done = true }, () => { done = true })
  // Upkeep over and over while the child commits (each of its commits adds a segment to merge).
  while (!done) {
    store.upkeep()
    runs++
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  t.same(child.lines.filter((l) => l.startsWith('error')), [], 'no error reached the other process')
  child.proc.stdin.write(`go gamma ${count}\n`)
  const exit = await child.exited
  t.equal(exit.code, 0)
  t.ok(child.lines.includes(`seen ${count}`), `the other process recalls every one of its notes (${child.lines.find((l) => l.startsWith('seen'))})`)
  t.ok(runs >= 2, `${runs} upkeep runs overlapped its commits`)
  store.upkeep()
  t.equal(store.ftsSegments(), 1)
  const ids = child.lines.filter((l) => l.startsWith('ack ')).map((l) => l.slice(4))
  t.equal(ids.length, count)
  t.same(ids.filter((id) => !store.get(id)), [], 'every acknowledged note is stored')
  t.equal(store.count(), 2000 + count)
  const indexed = Number((new DatabaseSync(path, { readOnly: true }).prepare('SELECT count(*) AS n FROM blocks_fts').get() as { n: number }).n)
  t.equal(indexed, 2000 + count, 'and indexed')
  for (let i = 0; i < count; i += 10) {
    const hits = recallBlocks(store, `gamma-${i} port ${20000 + i}`, { topK: 3, recordAccess: false })
    t.ok(hits.some((h) => h.text === `gamma note ${i}: service gamma-${i} listens on port ${20000 + i}`), `gamma note ${i} recalled after the merge`)
  }
  t.same(store.integrityCheck(), ['ok'])
})
