/**
 * Notes per scope are a maintained number up to a rowid mark plus the memberships above it
 * (lib/store/scope-counts.ts). Scoped recall reads them to decide whether a union holds every note
 * and may skip its membership test, so they must stay exact through every way a membership
 * arrives and leaves: commit, a repeated text saved in another scope, scope add / set / remove,
 * forget (one note and in bulk), import, a rolled-back batch, another connection's writes, a freed
 * rowid given out again, and the upgrade of a file that already holds notes.
 */
import { DatabaseSync } from 'node:sqlite'
import t, { type Test } from 'tap'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { MIGRATIONS, migrate } from '../../lib/store/schema.ts'
import { GLOBAL_SCOPE } from '../../lib/store/scope-key.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant, type Edit } from '../helpers/mutant.ts'

const WS_A = 'workspace:/projects/a'
const WS_B = 'workspace:/projects/b'

/** Notes per scope as a walk of the membership table gives them: what the kept counts must equal. */
function walked(path: string): Array<{ scope: string, notes: number }> {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return db.prepare('SELECT scope, count(*) AS n FROM memberships GROUP BY scope ORDER BY n DESC, scope').all()
      .map((r) => ({ scope: String(r.scope), notes: Number(r.n) }))
  } finally {
    db.close()
  }
}

/** A store on a new file, opened with a copy of `lib/` that has `edit` applied; both removed at teardown. */
async function mutatedStore(t: Test, edit: Edit): Promise<{ store: BlockStore, path: string }> {
  const m = mutant(edit)
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const path = tempStorePath()
  const store = new Mutated(path)
  t.teardown(() => store.close())
  return { store, path }
}

type Store = Pick<BlockStore, 'scopes'>

function same(t: { same(found: unknown, wanted: unknown, what: string): unknown }, store: Store, path: string, what: string): void {
  t.same(store.scopes.counts(), walked(path), what)
}

t.test('the counts follow commits, repeats in another scope, scope moves, forget, import and a rollback', async (t) => {
  const path = tempStorePath()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.same(store.scopes.counts(), [])
  const a = store.commit({ text: 'gateway port 8443' }).id
  store.commitMany([{ text: 'the cache host is 10.2.3.4', scope: WS_A }, { text: '服务 部署在 主库', scope: WS_A }, { text: 'billing runs on 8499' }])
  same(t, store, path, 'after commits')
  store.commit({ text: 'gateway port 8443', scope: WS_B }) // an existing (folded) block joins another scope
  same(t, store, path, 'a repeated text saved in another scope')
  store.scopes.add([a, blockId('billing runs on 8499')], WS_A)
  same(t, store, path, 'scope add')
  store.scopes.set([blockId('the cache host is 10.2.3.4')], GLOBAL_SCOPE)
  same(t, store, path, 'scope set')
  store.scopes.remove([a], WS_B)
  same(t, store, path, 'scope remove')
  store.forget(a)
  same(t, store, path, 'forget of one note')
  const many = Array.from({ length: 80 }, (_, i) => ({ text: `bulk note number ${i} for the forget`, scope: i % 2 === 0 ? WS_B : GLOBAL_SCOPE, source: 'bulk' }))
  store.commitMany(many)
  same(t, store, path, 'a batch')
  store.forget({ source: 'bulk' }) // a filter: the bulk path
  same(t, store, path, 'a forget by filter')
  const other = new BlockStore(':memory:')
  t.teardown(() => other.close())
  other.commit({ text: 'imported note about v2.3.1' })
  const imported = [...other.allBlocks()][0]!
  store.transaction(() => store.importBlock(imported, 'refuse', [WS_A, WS_B]))
  store.transaction(() => store.importBlock(imported, 'refuse', [GLOBAL_SCOPE]))
  same(t, store, path, 'an import, then the same note imported into another scope')
  t.throws(() => store.transaction(() => {
    store.commitMany([{ text: 'a note that is rolled back', scope: WS_A }])
    store.scopes.add([imported.id], 'preset:rolled-back')
    throw new Error('abort')
  }), /abort/)
  same(t, store, path, 'a rolled-back batch leaves the counts as they were')
})

t.test("another connection's writes show in the counts and in the plan at once", async (t) => {
  const path = tempStorePath()
  const reader = new BlockStore(path)
  const writer = new BlockStore(path)
  t.teardown(() => { reader.close(); writer.close() })
  writer.commitMany([{ text: 'first note from another process' }, { text: 'second note from another process' }])
  t.ok(reader.scopes.coversAll([GLOBAL_SCOPE, WS_A]), 'every note is global')
  writer.scopes.set([blockId('first note from another process')], WS_B)
  same(t, reader, path, 'a move by another connection')
  t.notOk(reader.scopes.coversAll([GLOBAL_SCOPE, WS_A]), 'a note moved out of global: the union no longer holds every note')
  t.ok(reader.scopes.coversAll([WS_A, GLOBAL_SCOPE, WS_B]) === false, 'no single scope holds both notes')
  writer.forget(blockId('first note from another process'))
  t.ok(reader.scopes.coversAll([GLOBAL_SCOPE]), 'forgetting the moved note makes global whole again')
  same(t, reader, path, 'a forget by another connection')
})

t.test('a freed rowid given out again, and a membership written without folding, are counted', async (t) => {
  const path = tempStorePath()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commitMany([{ text: 'the oldest note' }, { text: 'the newest note', scope: WS_A }])
  store.forget(blockId('the newest note')) // frees the largest rowid, which the next insert is given again
  store.commit({ text: 'a note in the freed rowid', scope: WS_A })
  same(t, store, path, 'the note in the freed rowid')
  const raw = new DatabaseSync(path)
  const rowid = raw.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId('written by another program'), 'written by another program').lastInsertRowid
  raw.prepare(`INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, ?, 1)`).run(rowid, WS_B)
  raw.close()
  same(t, store, path, 'a membership no commit folded is counted above the mark')
})

t.test('scoped recall skips the membership test only when one scope of the union holds every note', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany([{ text: 'the billing service listens on port 8499' }, { text: 'the billing service moved to port 9100', scope: WS_B }])
  const ids = (scopes: string[]) => recallBlocks(store, 'billing service port', { scopes }).map((h) => h.id).sort()
  t.same(ids([GLOBAL_SCOPE, WS_A]), [blockId('the billing service listens on port 8499')], 'the note of another workspace stays out')
  store.scopes.add([blockId('the billing service moved to port 9100')], GLOBAL_SCOPE)
  t.ok(store.scopes.coversAll([GLOBAL_SCOPE, WS_A]))
  t.same(ids([GLOBAL_SCOPE, WS_A]), recallBlocks(store, 'billing service port').map((h) => h.id).sort(), 'covered: the whole store')
  t.equal(ids([GLOBAL_SCOPE, WS_A]).length, 2)
  t.same(ids([WS_A]), [], 'an empty scope holds nothing')
})

t.test('upgrading a file that already holds notes starts the counts at what it holds', async (t) => {
  const path = tempStorePath()
  const db = new DatabaseSync(path)
  const before = MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE scope_counts'))
  t.ok(before > MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE memberships')), 'the counts are a later migration')
  migrate(db, before)
  for (const [text, scope] of [['one legacy note', GLOBAL_SCOPE], ['two legacy notes', WS_A], ['three legacy notes', WS_A]]) {
    const rowid = db.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId(text!), text!).lastInsertRowid
    db.prepare(`INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, ?, 1)`).run(rowid, scope!)
  }
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.same(store.scopes.counts(), [{ scope: WS_A, notes: 2 }, { scope: GLOBAL_SCOPE, notes: 1 }])
  store.commit({ text: 'one legacy note', scope: WS_A })
  store.commit({ text: 'a fourth note after the upgrade' })
  same(t, store, path, 'after writes on the upgraded file')
})

t.test('mutation: an existing block joining a scope without being counted leaves the count too low', async (t) => {
  const { store, path } = await mutatedStore(t, { file: 'store/scopes.ts', from: '    if (joined) countJoined(this.deps, scope, id)', to: '    if (joined && Math.random() < 0) countJoined(this.deps, scope, id)' })
  const id = store.commit({ text: 'a folded note' }).id
  store.scopes.add([id], WS_A)
  t.notSame(store.scopes.counts(), walked(path), 'counting the join is what keeps the count exact')
})

t.test('mutation: without the decrement, a scope move leaves the count too high', async (t) => {
  const { store, path } = await mutatedStore(t, { file: 'store/scope-counts.ts', from: 'UPDATE scope_counts SET n = n - 1 WHERE', to: 'UPDATE scope_counts SET n = n WHERE' })
  const id = store.commit({ text: 'a note to move' }).id
  store.commit({ text: 'a note that stays' })
  store.scopes.set([id], WS_A)
  t.notSame(store.scopes.counts(), walked(path), 'the delete trigger is what keeps the count exact')
  t.ok(store.scopes.coversAll([GLOBAL_SCOPE]), 'and the plan would wrongly read global as the whole store')
})

t.test('mutation: a delete that leaves the mark in place loses a membership in a freed rowid', async (t) => {
  const { store, path } = await mutatedStore(t, { file: 'store/scope-counts.ts', from: ' WHERE old.block_rowid >= mark;', to: ' WHERE false;' })
  store.commitMany([{ text: 'the oldest note' }, { text: 'the newest note', scope: WS_A }])
  store.forget(blockId('the newest note'))
  const raw = new DatabaseSync(path) // a write that does not fold, into the freed rowid
  const rowid = raw.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId('in the freed rowid'), 'in the freed rowid').lastInsertRowid
  raw.prepare(`INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, ?, 1)`).run(rowid, WS_B)
  raw.close()
  t.notSame(store.scopes.counts(), walked(path), 'lowering the mark is what keeps the count exact')
})

t.test('mutation: counting only the folded number misses a membership written without folding', async (t) => {
  const { store, path } = await mutatedStore(t, { file: 'store/scope-counts.ts', from: `0)
    + (SELECT count(*) FROM memberships WHERE block_rowid > (SELECT mark FROM scope_count_mark) AND scope = ?1) AS n`, to: '0) AS n' })
  store.commit({ text: 'a folded note' })
  const raw = new DatabaseSync(path)
  const rowid = raw.prepare(`INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, 1, 1)`).run(blockId('an unfolded note'), 'an unfolded note').lastInsertRowid
  raw.prepare(`INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, ?, 1)`).run(rowid, GLOBAL_SCOPE)
  raw.close()
  t.notOk(store.scopes.coversAll([GLOBAL_SCOPE]), 'the live part is what makes global whole')
})

t.test('mutation: reading every union as the whole store shows another workspace\'s note', async (t) => {
  const m = mutant({ file: 'store/scopes.ts', from: 'scopeCount(this.deps, scope) === total', to: 'scopeCount(this.deps, scope) >= 0' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { recallBlocks: mutatedRecall } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const store = new Mutated(':memory:')
  t.teardown(() => store.close())
  store.commitMany([{ text: 'the billing service listens on port 8499' }, { text: 'the billing service moved to port 9100', scope: WS_B }])
  const ids = mutatedRecall(store, 'billing service port', { scopes: [GLOBAL_SCOPE, WS_A] }).map((h) => h.id)
  t.ok(ids.includes(blockId('the billing service moved to port 9100')), 'the equality is what keeps the union closed')
})

/** The delete trigger's SQL, through a second connection. */
function scopeTriggerSql(path: string): string | undefined {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return (db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'scope_count_delete'").get() as { sql: string } | undefined)?.sql
  } finally {
    db.close()
  }
}

/**
 * Large forgets (the bulk path moves the counts once instead of the delete trigger): bulk notes
 * in two scopes under newer kept notes, then bulk notes that are the newest (the mark falls),
 * then a new note (it gets a freed rowid) and a small forget (the trigger is back). The kept
 * counts and the walk after each step, the notes each forget deleted, and the trigger's SQL
 * before and after.
 */
function acrossLargeForgets(store: BlockStore, path: string): { steps: Array<{ counted: unknown, walked: unknown }>, deleted: number[], triggers: Array<string | undefined> } {
  const bulk = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ text: `large forget note ${from + i}`, scope: i % 3 === 0 ? WS_B : WS_A, source: 'bulk' }))
  const steps: Array<{ counted: unknown, walked: unknown }> = []
  const step = () => steps.push({ counted: store.scopes.counts(), walked: walked(path) })
  const triggers = [scopeTriggerSql(path)]
  store.commitMany(bulk(0, 100))
  const kept = store.commitMany(Array.from({ length: 10 }, (_, i) => ({ text: `kept note ${i}`, scope: WS_A }))).map((r) => r.id)
  const deleted = [store.forget({ source: 'bulk' }).deleted.length]
  step()
  store.commitMany(bulk(100, 70))
  deleted.push(store.forget({ source: 'bulk' }).deleted.length)
  step()
  store.commit({ text: 'a note after the large forgets', scope: WS_B })
  step()
  deleted.push(store.forget(kept[0]!).deleted.length)
  step()
  triggers.push(scopeTriggerSql(path))
  return { steps, deleted, triggers }
}

t.test('a large forget moves the scope counts once and leaves their delete trigger as it was', async (t) => {
  const path = tempStorePath()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const { steps, deleted, triggers } = acrossLargeForgets(store, path)
  t.same(deleted, [100, 70, 1])
  for (const [i, s] of steps.entries()) t.same(s.counted, s.walked, `step ${i + 1}`)
  t.ok(triggers[0]?.startsWith('CREATE TRIGGER scope_count_delete'))
  t.equal(triggers[1], triggers[0], 'the trigger is back, unchanged')
})

for (const [what, edit] of [
  ['without moving the counts, a large forget leaves them too high',
    { file: 'store/forget.ts', from: 'scopeTrigger !== undefined && moveScopeCounts(host)', to: 'scopeTrigger !== undefined' }],
  ['without lowering the mark, a note given a freed rowid is not counted',
    { file: 'store/forget.ts', from: 'if (lowerScopeMark) run(', to: 'if (!lowerScopeMark) run(' }],
  ['without creating the trigger again, later deletes are not counted',
    { file: 'store/forget.ts', from: '    host.db.exec(scopeTrigger)\n', to: '' }],
] as const) {
  t.test(`mutation: ${what}`, async (t) => {
    const { store, path } = await mutatedStore(t, edit)
    const { steps } = acrossLargeForgets(store, path)
    t.ok(steps.some((s) => JSON.stringify(s.counted) !== JSON.stringify(s.walked)), 'a kept count differs from the walk')
  })
}
