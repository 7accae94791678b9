/**
 * Two processes (two dsh agents) share one store file: both commit (one transaction per note)
 * and recall (which writes access counts) at the same time. No SQLITE_BUSY reaches a caller,
 * nothing is lost, and each process recalls and counts the other's notes.
 */
import t from 'tap'
import { DatabaseSync } from 'node:sqlite'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { startFixture } from './child.ts'

const COUNT = 120

t.test('two writers at once: no busy error, nothing lost, each sees the other', async (t) => {
  const path = tempStorePath('shared')
  new BlockStore(path).close() // create the file once, so neither child races to create the schema
  const a = startFixture('worker', [path, 'alpha', String(COUNT), '5000'])
  const b = startFixture('worker', [path, 'beta', String(COUNT), '5000'])
  await Promise.all([a.waitFor((l) => l === 'done' || l.startsWith('error')), b.waitFor((l) => l === 'done' || l.startsWith('error'))])
  t.same([...a.lines, ...b.lines].filter((l) => l.startsWith('error')), [], 'no error reached either caller')
  a.proc.stdin.write(`go beta ${COUNT}\n`)
  b.proc.stdin.write(`go alpha ${COUNT}\n`)
  const [ea, eb] = await Promise.all([a.exited, b.exited])
  t.same([ea.code, eb.code], [0, 0], 'both exited cleanly')
  t.ok(a.lines.includes(`seen ${COUNT}`), `alpha recalled every beta note (${a.lines.find((l) => l.startsWith('seen'))})`)
  t.ok(b.lines.includes(`seen ${COUNT}`), `beta recalled every alpha note (${b.lines.find((l) => l.startsWith('seen'))})`)
  t.ok(a.lines.includes(`count ${2 * COUNT}`) && b.lines.includes(`count ${2 * COUNT}`), 'each count includes the other\'s commits (cache invalidated across processes)')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const ids = [...a.lines, ...b.lines].filter((l) => l.startsWith('ack ')).map((l) => l.slice(4))
  t.equal(ids.length, 2 * COUNT)
  t.same(ids.filter((id) => !store.get(id)), [], 'every acknowledged note is in the file')
  t.equal(store.count(), 2 * COUNT)
  t.same(store.integrityCheck(), ['ok'])
})

/**
 * Holds the write lock from this process while a child commits. With `release`, the lock is
 * let go 300 ms after the child started trying (the child must wait for it); without, it is held
 * until the child has finished, so a child that does not wait must fail, however slow it runs.
 */
async function underHeldLock(busyTimeoutMs: number, release: boolean): Promise<string[]> {
  const path = tempStorePath('locked')
  new BlockStore(path).close()
  const holder = new DatabaseSync(path)
  holder.exec('BEGIN IMMEDIATE')
  const child = startFixture('worker', [path, 'gamma', '3', String(busyTimeoutMs)])
  await child.waitFor((l) => l === 'attempting')
  if (release) {
    await new Promise((resolve) => setTimeout(resolve, 300))
    holder.exec('ROLLBACK')
  }
  await child.waitFor((l) => l === 'done' || l.startsWith('error'))
  if (holder.isTransaction) holder.exec('ROLLBACK')
  child.proc.stdin.write('go gamma 3\n')
  await child.exited
  holder.close()
  return child.lines
}

t.test('a writer waits for another process\'s lock instead of failing (busy timeout is the guard)', async (t) => {
  const lines = await underHeldLock(5000, true)
  t.same(lines.filter((l) => l.startsWith('error')), [], 'the commit waited and succeeded')
  t.equal(lines.filter((l) => l.startsWith('ack ')).length, 3)
  const mutant = await underHeldLock(0, false)
  t.ok(mutant.some((l) => l.startsWith('error') && /locked|busy/i.test(l)), `mutation check: without the wait the caller gets ${mutant.find((l) => l.startsWith('error'))}`)
})

t.test('agents starting at once on a new file all get a working store (no migration race)', async (t) => {
  // Before the fix, two of four processes typically failed with "table blocks already exists"
  // or mistook the half-created store for another program's database.
  for (let round = 0; round < 4; round++) {
    const path = tempStorePath(`fresh-${round}`)
    const children = [0, 1, 2, 3].map((i) => startFixture('opener', [path, `agent-${i}`]))
    await Promise.all(children.map((c) => c.exited))
    const lines = children.flatMap((c) => c.lines)
    t.same(lines.filter((l) => !l.startsWith('ok ')), [], `round ${round}: every process opened and committed`)
    const store = new BlockStore(path)
    t.equal(store.count(), 4, `round ${round}: all four notes stored`)
    store.close()
  }
})

t.test('the cached note count follows this connection\'s commits and another connection\'s writes', async (t) => {
  const path = tempStorePath('count')
  const a = new BlockStore(path)
  const b = new BlockStore(path)
  t.teardown(() => { a.close(); b.close() })
  t.same([a.count(), b.count()], [0, 0])
  a.commit({ text: 'one' })
  a.commit({ text: 'one' })
  a.commitMany([{ text: 'two' }, { text: 'three' }, { text: 'two' }])
  t.same([a.count(), b.count()], [3, 3], 'own commits counted once per new note; the other connection recounts')
  b.commit({ text: 'four' })
  t.same([a.count(), b.count()], [4, 4])
  t.throws(() => a.commitMany([{ text: 'five' }, { text: '' }]), { code: 'invalid_input' })
  t.same([a.count(), b.count()], [4, 4], 'a refused batch changes nothing')
})
