/**
 * The browse queries (`lib/store/browse.ts`) against a naive reading of the same rows: cursor
 * paging visits every matching note exactly once, newest written first, under every filter; the
 * supersede chain, facts, near-duplicates and origins of a note page.
 */
import { join } from 'node:path'
import t from 'tap'
import { BlockStore } from '../../lib/store/store.ts'
import type { BrowseFilter, BrowseRow } from '../../lib/store/browse.ts'
import { tempDir } from '../helpers/temp.ts'

function fill(): BlockStore {
  let clock = Date.UTC(2026, 10, 1)
  const store = new BlockStore(join(tempDir('stablemem-browse'), 'memory.db'), { now: () => (clock += 3_600_000), duplicates: 'keep' })
  for (let i = 0; i < 300; i++) store.commit({ text: `note ${i} about port ${8000 + i}`, source: ['user', 'ops', 'tool'][i % 3], scene: i % 7 === 0 ? 'deploy' : '' })
  const all = store.browse.page({}, 200).notes
  for (let k = 0; k < 20; k++) store.commit({ text: `note ${k} corrected`, supersedes: all[k]!.id })
  store.layers.capture([0, 1, 2].map((seq) => ({ text: `captured ${seq}`, origin: { sessionId: 's1', seq, eventType: 'user/message', role: 'user', eventTime: clock, compactionId: '' } })), () => 'compaction:user')
  return store
}

function walk(store: BlockStore, filter: BrowseFilter, limit: number): BrowseRow[] {
  const out: BrowseRow[] = []
  let before: number | undefined
  for (let pages = 0; pages < 1000; pages++) {
    const page = store.browse.page(filter, limit, before)
    out.push(...page.notes)
    if (page.next === undefined) return out
    before = page.next
  }
  throw new Error('paging did not end')
}

t.test('cursor paging visits every matching note once, newest first, under each filter', async (t) => {
  const store = fill()
  t.teardown(() => store.close())
  const everything = walk(store, {}, 200)
  t.equal(everything.length, store.count(), 'every note')
  const middle = everything[150]!.createdAt
  const filters: Array<[BrowseFilter, (n: BrowseRow) => boolean]> = [
    [{}, () => true],
    [{ scene: 'deploy' }, (n) => n.scene === 'deploy'],
    [{ source: 'ops' }, (n) => n.source === 'ops'],
    [{ layer: 'cold' }, (n) => n.layer === 'cold'],
    [{ state: 'superseded' }, (n) => n.supersededBy !== null],
    [{ state: 'current' }, (n) => n.supersededBy === null],
    [{ since: middle }, (n) => n.createdAt >= middle],
    [{ until: middle }, (n) => n.createdAt < middle],
    [{ scope: 'global' }, () => true],
    [{ scope: 'workspace:/nowhere' }, () => false],
    [{ scene: 'deploy', source: 'user', state: 'current' }, (n) => n.scene === 'deploy' && n.source === 'user' && n.supersededBy === null],
  ]
  for (const [filter, keep] of filters) {
    const expected = everything.filter(keep).map((n) => n.id)
    for (const limit of [1, 7, 50]) {
      if (limit === 1 && expected.length > 60) continue
      t.same(walk(store, filter, limit).map((n) => n.id), expected, `${JSON.stringify(filter)}, pages of ${limit}`)
    }
    const first = store.browse.page(filter, 10)
    t.equal(first.total, expected.length, `${JSON.stringify(filter)}: total`)
  }
  t.throws(() => store.browse.page({}, 0), /limit/)
  t.throws(() => store.browse.page({ state: 'gone' as never }, 10), /state/)
})

t.test('a note page: supersede chain, facts, near-duplicates, origins, per-day counts', async (t) => {
  const store = fill()
  t.teardown(() => store.close())
  const a = store.commit({ text: 'v1 of the gateway' })
  const b = store.commit({ text: 'v2 of the gateway', supersedes: a.id })
  const c = store.commit({ text: 'v3 of the gateway', supersedes: b.id })
  t.same(store.browse.chain(b.id), { older: [a.id], newer: [c.id] })
  t.same(store.browse.chain(c.id), { older: [a.id, b.id], newer: [] })
  const fact = store.commit({ text: 'gateway|version=v3', semanticType: 'fact', source: 'distill' })
  store.link({ sourceKind: 'block', sourceId: fact.id, targetKind: 'block', targetId: c.id, type: 'derived_from' })
  t.same(store.browse.factsFrom(c.id), [fact.id])
  t.match(store.browse.facts(), [{ id: fact.id, text: 'gateway|version=v3', from: [c.id] }])
  const d1 = store.commit({ text: 'The Gateway, is at 10.0.0.1' })
  const d2 = store.commit({ text: 'the gateway is at 10.0.0.1' })
  t.same(store.browse.nearDuplicates(d1.id), [d2.id])
  const captured = store.browse.page({ layer: 'cold' }, 10).notes[0]!
  t.match(store.browse.origins(captured.id), [{ sessionId: 's1', role: 'user' }])
  const days = store.browse.perDay(400)
  t.equal(days.reduce((sum, d) => sum + d.notes, 0), store.count(), 'per-day counts add up')
  t.ok(days.every((d, i) => i === 0 || d.day > days[i - 1]!.day), 'oldest first')
  t.same(store.browse.values('scene'), [{ value: 'deploy', notes: 43 }])
})
