/**
 * The connection settings a piece of work may change for itself (lib/store/pragmas.ts) are put back
 * after it, also when it throws, and what uses them leaves the store's connection as it was: commits
 * after an index merge slice or the per-turn access counts are fsynced again, and wait for a lock
 * again. Mutation checks: without either restore, the connection keeps the changed setting.
 */
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { withoutFsync, withoutWaiting } from '../../lib/store/pragmas.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** The connection's `synchronous` (2: FULL) and `busy_timeout`. */
function settings(db: DatabaseSync): { synchronous: number, busyTimeout: number } {
  const synchronous = Number((db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous)
  const busyTimeout = Number((db.prepare('PRAGMA busy_timeout').get() as { timeout: number }).timeout)
  return { synchronous, busyTimeout }
}

/** The store's own connection (private: read here only to check what it was left with). */
const connection = (store: BlockStore) => (store as unknown as { db: DatabaseSync }).db

t.test('the settings hold during the work and are put back after it, also when it throws', async (t) => {
  const db = new DatabaseSync(tempStorePath('pragmas'))
  t.teardown(() => db.close())
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 1234')
  t.same(withoutFsync(db, () => settings(db)), { synchronous: 1, busyTimeout: 1234 }, 'NORMAL during the work')
  t.same(withoutWaiting(db, 1234, () => settings(db)), { synchronous: 2, busyTimeout: 0 }, 'no wait during the work')
  t.throws(() => withoutFsync(db, () => { throw new Error('boom') }), /boom/)
  t.throws(() => withoutWaiting(db, 1234, () => { throw new Error('boom') }), /boom/)
  t.same(settings(db), { synchronous: 2, busyTimeout: 1234 }, 'FULL and the busy timeout again')
})

t.test('a merge slice that does not wait, and the access counts, leave the store\'s connection as it was', async (t) => {
  const store = new BlockStore(tempStorePath('pragmas-store'), { busyTimeoutMs: 4321 })
  t.teardown(() => store.close())
  const ids: string[] = []
  for (let i = 0; i < 12; i++) ids.push(store.commit({ text: `note ${i}: port ${30000 + i}` }).id)
  const before = settings(connection(store))
  t.same(before, { synchronous: 2, busyTimeout: 4321 })
  t.equal(store.upkeepSlice({ wait: false }), 'merged')
  store.recordAccess(ids.slice(0, 3))
  t.ok(store.tryWriteAccess(new Map([[ids[3]!, { count: 1, at: 1 }]])))
  t.same(settings(connection(store)), before, 'FULL and the configured busy timeout after them')
})

for (const [name, from, to] of [
  ['fsync', "  } finally {\n    db.exec('PRAGMA synchronous = FULL')\n  }", '  } finally {}'],
  ['busy timeout', "  } finally {\n    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)\n  }", '  } finally {}'],
] as const) {
  t.test(`mutation check: without the ${name} restore the connection keeps the changed setting`, async (t) => {
    const m = mutant({ file: 'store/pragmas.ts', from, to })
    t.teardown(() => m.remove())
    const mutated = await m.load<typeof import('../../lib/store/pragmas.ts')>('store/pragmas.ts')
    const db = new DatabaseSync(tempStorePath(`pragmas-mutant-${name.replace(' ', '-')}`))
    t.teardown(() => db.close())
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 1234')
    mutated.withoutFsync(db, () => {})
    mutated.withoutWaiting(db, 1234, () => {})
    t.not(JSON.stringify(settings(db)), JSON.stringify({ synchronous: 2, busyTimeout: 1234 }), `the mutant leaves ${JSON.stringify(settings(db))}`)
  })
}
