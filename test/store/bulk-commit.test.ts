/**
 * The bulk commit path (issue 30, lib/store/fts-bulk.ts): a `commitMany` of at least `BULK_NOTES`
 * notes indexes them under a larger FTS5 pending-terms hash, so the batch lands in the index as
 * one segment instead of one every 1 MiB of terms, which automerge then rewrote. Checked here:
 * every answer is what the same notes committed in batches of 1,000 get (ids, created, duplicateOf,
 * restored, masked credentials, memberships, scenes, what the index finds), the index holds one
 * segment for the batch, and the option is back to its value when the call returns. Mutation
 * checks: without the bulk options the batch is several segments; without the restore the option
 * stays at the bulk value.
 */
import t from 'tap'
import { BULK_NOTES } from '../../lib/store/fts-bulk.ts'
import { BlockStore } from '../../lib/store/store.ts'
import type { CommitInput } from '../../lib/store/types.ts'
import { hashSize, segments } from '../helpers/fts-index.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const TOKEN = `ghp_${'Zq7Xw2Kp9Lm4Nv8Rt3Ys6Bd1Fg5Hj0Ac2Ee'}`
const SIZE = BULK_NOTES + 1_904

/** Notes already in the store before the bulk batch: some the batch repeats, some it near-duplicates, one it supersedes. */
const before: CommitInput[] = Array.from({ length: 50 }, (_, i) => ({ text: `existing note ${i}: queue q${i} drains at ${i * 3} per second`, scope: i % 2 === 0 ? 'global' : 'workspace:/srv/a' }))

/** Distinct note `i`: enough distinct terms that 6,000 of them pass FTS5's default pending-terms hash more than once. */
function text(i: number): string {
  return `note ${i}: host h${i} port ${1024 + i} rack r${i % 17} owner u${(i * 7919) % 30011} tag t${(i * 104729) % 65521} build b${i * 13} 机房${i % 31} 服务${i % 997}`
}

/** The bulk batch: distinct notes, exact repeats (of the store and of itself), near-duplicates (case, punctuation), a credential, scopes and scenes. */
function batch(): CommitInput[] {
  return Array.from({ length: SIZE }, (_, i): CommitInput => {
    if (i % 997 === 5) return { text: before[i % 50]!.text, scene: 'repeats' } // already stored
    if (i % 991 === 7) return { text: `EXISTING NOTE ${i % 50}: Queue q${i % 50} drains at ${(i % 50) * 3} per second!` } // near-duplicate of a stored note
    if (i % 983 === 11) return { text: `${text(i - 1).toUpperCase()}!` } // near-duplicate of an earlier note of the batch
    if (i % 977 === 13) return { text: text(i - 13) } // an exact repeat within the batch
    if (i === 1234) return { text: `deploy token for the registry is ${TOKEN}` }
    return {
      text: text(i),
      ...(i % 5 === 0 ? { scope: 'workspace:/srv/b' } : {}),
      ...(i % 7 === 0 ? { scene: `scene-${i % 3}` } : {}),
      source: 'bulk-test',
    }
  })
}

/** A store holding `before`, its index merged into one segment. */
function seeded(Store: typeof BlockStore): { path: string, store: BlockStore } {
  const path = tempStorePath('bulk')
  const store = new Store(path, { now: () => 1_765_000_000_000 })
  store.commitMany(before)
  store.upkeep()
  return { path, store }
}

t.test('a bulk batch answers exactly as the same notes in batches of 1,000', async (t) => {
  const inputs = batch()
  const bulk = seeded(BlockStore)
  const rowWise = seeded(BlockStore)
  t.teardown(() => { bulk.store.close(); rowWise.store.close() })
  const bulkResults = bulk.store.commitMany(inputs)
  const rowResults = []
  for (let from = 0; from < inputs.length; from += 1_000) rowResults.push(...rowWise.store.commitMany(inputs.slice(from, from + 1_000)))
  t.same(bulkResults, rowResults, 'same ids, created, duplicateOf and masked credentials, note by note')
  t.ok(bulkResults.filter((r) => r.duplicateOf !== undefined).length >= 10, 'the batch holds near-duplicates of stored notes and of its own')
  t.ok(bulkResults.filter((r) => !r.created).length >= 10, 'and repeats')
  t.same(bulkResults[1234]!.redacted, ['github-token'], 'the credential is masked under the default policy')
  t.equal(bulk.store.count(), rowWise.store.count(), 'same count')
  for (const i of [0, 5, 35, 1000, 4095, SIZE - 1]) {
    const id = bulkResults[i]!.id
    t.same(bulk.store.get(id), rowWise.store.get(id), `note ${i} stored the same`)
    t.same(bulk.store.scopes.of(id), rowWise.store.scopes.of(id), `note ${i} in the same scopes`)
  }
  t.same(bulk.store.edgesOf('block', bulkResults[7]!.id), rowWise.store.edgesOf('block', rowResults[7]!.id), 'the same duplicates edges')
  for (const match of ['"rack"', '"h4095"', '"机房"', '"existing"']) t.equal(bulk.store.matchCount(match), rowWise.store.matchCount(match), `the index finds ${match} as often`)
  t.same(bulk.store.integrityCheck(), ['ok'])
})

t.test('a bulk batch is one index segment, and the option is back when the call returns', async (t) => {
  const { path, store } = seeded(BlockStore)
  t.teardown(() => store.close())
  t.equal(segments(path), 1, 'the seeded store is one segment')
  store.commitMany(batch())
  t.equal(segments(path), 2, 'the batch added one segment')
  t.equal(hashSize(path), 1 << 20, 'hashsize is FTS5\'s default again')
  store.commitMany(batch().slice(0, 100).map((n) => ({ text: `${n.text} small` })))
  t.equal(segments(path), 3, 'a small batch after it adds one segment too')
})

t.test('mutation check: without the bulk options the batch is several segments', async (t) => {
  const m = mutant({ file: 'store/commit.ts', from: 'if (indexed.length >= BULK_NOTES) withBulkIndexing', to: 'if (false) withBulkIndexing' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { path, store } = seeded(Mutated)
  t.teardown(() => store.close())
  store.commitMany(batch())
  t.ok(segments(path) > 2, `the mutated batch is ${segments(path) - 1} segments`)
})

t.test('mutation check: without the restore the option stays at the bulk value', async (t) => {
  const m = mutant({ file: 'store/fts-bulk.ts', from: "  option.run('hashsize', BigInt(before))\n", to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const { path, store } = seeded(Mutated)
  t.teardown(() => store.close())
  store.commitMany(batch())
  t.not(hashSize(path), 1 << 20, 'the mutated store keeps the bulk hash size')
})
