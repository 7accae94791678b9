/**
 * The block count the context line shows on every step is a maintained row plus the blocks above
 * its rowid mark (`block_count`, lib/store/schema.ts), not a walk of an index: it must stay exact
 * through every way blocks arrive and leave, in this connection and in others, through a freed
 * rowid given out again, and through an upgrade of a file that already holds blocks.
 */
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { MIGRATIONS, migrate } from '../../lib/store/schema.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** The count as `count(*)` gives it: what the maintained row must always equal. */
function counted(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM blocks').get() as { n: number }).n)
  } finally {
    db.close()
  }
}

t.test('the count follows commits, repeats, imports, forget and a rolled-back batch', async (t) => {
  const path = tempStorePath()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.count(), 0)
  const a = store.commit({ text: 'gateway port 8443' }).id
  store.commitMany([{ text: 'gateway port 8443' }, { text: 'the cache host is 10.2.3.4' }, { text: '服务 部署在 主库' }])
  t.equal(store.count(), 3, 'a repeated text is not counted twice')
  const other = new BlockStore(':memory:')
  t.teardown(() => other.close())
  other.commit({ text: 'imported note about v2.3.1' })
  const imported = [...other.allBlocks()][0]!
  store.transaction(() => store.importBlock(imported))
  store.transaction(() => store.importBlock(imported))
  t.equal(store.count(), 4, 'an import adds once, a repeated import merges')
  store.forget(a)
  t.equal(store.count(), 3, 'forget takes the note out of the count')
  t.throws(() => store.transaction(() => {
    store.commitMany([{ text: 'a note that is rolled back' }])
    throw new Error('abort')
  }), /abort/)
  t.equal(store.count(), 3, 'a rolled-back batch leaves the count as it was')
  t.equal(store.count(), counted(path))
})

t.test('a write by another connection shows in the count at once', async (t) => {
  const path = tempStorePath()
  const reader = new BlockStore(path)
  const writer = new BlockStore(path)
  t.teardown(() => { reader.close(); writer.close() })
  t.equal(reader.count(), 0)
  writer.commitMany([{ text: 'first note from another process' }, { text: 'second note from another process' }])
  t.equal(reader.count(), 2)
  writer.forget(blockId('first note from another process'))
  t.equal(reader.count(), 1)
})

t.test('upgrading a file that already holds blocks starts the count at what it holds', async (t) => {
  const path = tempStorePath()
  const db = new DatabaseSync(path)
  const before = MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE block_count'))
  t.ok(before > 0, 'the count is a migration of its own')
  migrate(db, before)
  for (const text of ['one legacy note', 'two legacy notes', 'three legacy notes']) {
    db.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId(text), text)
  }
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.count(), 3)
  store.commit({ text: 'a fourth note after the upgrade' })
  t.equal(store.count(), 4)
})

t.test('upgrading a file whose count was kept by the insert trigger keeps it exact', async (t) => {
  const path = tempStorePath()
  const db = new DatabaseSync(path)
  const before = MIGRATIONS.findIndex((sql) => sql.includes('block_count_delete_marked'))
  t.ok(before > MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE block_count')), 'the mark is a later migration')
  migrate(db, before)
  for (const text of ['one counted note', 'two counted notes', 'three counted notes']) {
    db.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId(text), text)
  }
  db.prepare('DELETE FROM blocks WHERE id = ?').run(blockId('three counted notes'))
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.count(), 2)
  store.commit({ text: 'a note after the upgrade' })
  t.equal(store.count(), 3)
  t.equal(store.count(), counted(path))
})

t.test('a block written without folding, and a freed rowid given out again, are counted', async (t) => {
  const path = tempStorePath()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commitMany([{ text: 'the oldest note' }, { text: 'the newest note' }])
  store.forget(blockId('the newest note')) // frees the largest rowid, which the next insert is given again
  store.commit({ text: 'a note in the freed rowid' })
  t.equal(store.count(), 2)
  const raw = new DatabaseSync(path)
  raw.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId('written by another program'), 'written by another program')
  raw.close()
  t.equal(store.count(), 3, 'a row no commit folded is counted above the mark')
  t.equal(store.count(), counted(path))
})

t.test('mutation: counting only the folded number misses a block written without folding', async (t) => {
  const m = mutant({ file: 'store/store.ts', from: "'SELECT n + (SELECT count(*) FROM blocks WHERE rowid > mark) AS n FROM block_count'", to: "'SELECT n FROM block_count'" })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const path = tempStorePath()
  const store = new Mutated(path)
  t.teardown(() => store.close())
  store.commit({ text: 'a folded note' })
  const raw = new DatabaseSync(path)
  raw.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId('an unfolded note'), 'an unfolded note')
  raw.close()
  t.not(store.count(), 2, 'the live part is what keeps the count exact')
})

t.test('mutation: a delete that leaves the mark in place loses a note in a freed rowid', async (t) => {
  const m = mutant({ file: 'store/schema.ts', from: ', mark = min(mark, coalesce((SELECT max(rowid) FROM blocks), 0));', to: ';' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath())
  t.teardown(() => store.close())
  store.commitMany([{ text: 'the oldest note' }, { text: 'the newest note' }])
  store.forget(blockId('the newest note'))
  store.commit({ text: 'a note in the freed rowid' })
  t.not(store.count(), 2, 'lowering the mark is what keeps the count exact')
})

t.test('mutation: without the delete trigger, forget leaves the count too high', async (t) => {
  const m = mutant({ file: 'store/schema.ts', from: `CREATE TRIGGER block_count_delete_marked AFTER DELETE ON blocks BEGIN
    UPDATE block_count SET n = n - (old.rowid <= mark), mark = min(mark, coalesce((SELECT max(rowid) FROM blocks), 0));
  END`, to: 'SELECT 1' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath())
  t.teardown(() => store.close())
  const id = store.commit({ text: 'a note to forget' }).id
  store.forget(id)
  t.not(store.count(), 0, 'the guard is what keeps the count exact')
})
