/**
 * A batch's full-text index rows are written after its block rows (lib/store/commit.ts,
 * `commitMany`). FTS5 flushes its pending terms to a new segment at every statement savepoint.
 * Every block insert opened one while the block count had an insert trigger, and a note's other
 * writes still do (tagging it with a scene), so rows written beside their blocks made one segment
 * per note, which merges then rewrote: a batched commit ran at a third of the raw floor. What is
 * checked here is the structure, not a time: one batch, one segment.
 */
import t from 'tap'
import { BlockStore } from '../../lib/store/store.ts'
import { segments } from '../helpers/fts-index.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const notes = Array.from({ length: 120 }, (_, i) => ({ text: `note ${i}: the service on host-${i} listens on port ${8000 + i}, 服务 编号 ${i}`, scene: 'deploy' }))

/** Commits one batch into a fresh file with the given store class and returns the file. */
function commitBatch(Store: typeof BlockStore): { path: string, store: BlockStore } {
  const path = tempStorePath()
  const store = new Store(path)
  store.commitMany(notes)
  return { path, store }
}

t.test('one batch adds one index segment, and every note is found', async (t) => {
  const { path, store } = commitBatch(BlockStore)
  t.teardown(() => store.close())
  t.equal(segments(path), 1)
  for (const i of [0, 57, 119]) t.equal(store.ftsRowids(`"host" "${i}"`, 5).length > 0, true, `note ${i} is indexed`)
  t.equal(store.matchCount('"listens"'), notes.length)
  store.commitMany(notes) // a repeat adds no index rows
  t.equal(store.matchCount('"listens"'), notes.length)
})

t.test('mutation: index rows written beside each block make a segment per note', async (t) => {
  const m = mutant(
    { file: 'store/commit.ts', from: 'indexed.push([inserted.lastInsertRowid, row.text])', to: 'index.run(inserted.lastInsertRowid, ...indexColumns(row.text))' },
    { file: 'store/commit.ts', from: 'for (const [rowid, text] of indexed) index.run(rowid, ...indexColumns(text))', to: '' },
  )
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { path, store } = commitBatch(Mutated)
  t.teardown(() => store.close())
  t.ok(segments(path) > 1, `the order is what keeps a batch in one segment (${segments(path)} segments)`)
})
