/**
 * Forgetting while other agents work on the same file: two processes commit (one transaction per
 * note) and recall while a third commits and forgets by filter and by id, round after round. No
 * SQLITE_BUSY reaches any caller, every acknowledged note of the committers is still there, every
 * note the forgetter targeted is gone, and the file is sound.
 */
import t from 'tap'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { startFixture } from './child.ts'

const COUNT = 150
const ROUNDS = 12

t.test('forget under concurrent commits and recalls: no busy error, no lost acknowledgement', async (t) => {
  const path = tempStorePath('forget-shared')
  new BlockStore(path).close()
  const a = startFixture('worker', [path, 'alpha', String(COUNT), '5000'])
  const b = startFixture('worker', [path, 'beta', String(COUNT), '5000'])
  await Promise.all([a.waitFor((l) => l === 'attempting'), b.waitFor((l) => l === 'attempting')])
  const f = startFixture('forgetter', [path, String(ROUNDS)])
  const finished = (l: string) => l === 'done' || l.startsWith('error')
  await Promise.all([a.waitFor(finished), b.waitFor(finished), f.waitFor(finished)])
  a.proc.stdin.write(`go beta ${COUNT}\n`)
  b.proc.stdin.write(`go alpha ${COUNT}\n`)
  const exits = await Promise.all([a.exited, b.exited, f.exited])
  const lines = [...a.lines, ...b.lines, ...f.lines]
  t.same(lines.filter((l) => l.startsWith('error')), [], 'no error reached any caller')
  t.same(exits.map((e) => e.code), [0, 0, 0])
  const rounds = f.lines.filter((l) => l.startsWith('round '))
  t.equal(rounds.length, ROUNDS, 'every forget round completed')
  t.ok(rounds.every((l) => / forgot 50 .* unknown 2$/.test(l)), `each round forgot its 50 notes, and reported the ids already gone: ${rounds[0]}`)
  t.ok(a.lines.includes(`seen ${COUNT}`) && b.lines.includes(`seen ${COUNT}`), 'each committer still recalls all the other\'s notes')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const acked = [...a.lines, ...b.lines].filter((l) => l.startsWith('ack ')).map((l) => l.slice(4))
  t.equal(acked.length, 2 * COUNT)
  t.same(acked.filter((id) => !store.get(id)), [], 'every acknowledged note is in the file')
  t.equal(store.count(), 2 * COUNT, 'and nothing of the forgotten scene is')
  t.same(store.integrityCheck(), ['ok'])
})
