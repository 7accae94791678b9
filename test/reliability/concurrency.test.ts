/**
 * Two processes (two dsh agents) share one store file: both commit (one transaction per note)
 * and recall (which writes access counts) at the same time. No SQLITE_BUSY reaches a caller,
 * nothing is lost, and each process recalls and counts the other's notes.
 */
import t from 'tap'
import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
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

/** Edit that makes the WAL switch wait at the start line (fixtures/start-line.ts); instrumentation, not a mutation. */
const AT_START_LINE = { file: 'store/open-file.ts', from: 'const deadline = Date.now() + busyTimeoutMs', to: '(globalThis as { beforeWalSwitch?: () => void }).beforeWalSwitch?.(); const deadline = Date.now() + busyTimeoutMs' }

/**
 * Runs `rounds` first opens of a new file by `agents` threads that reach the WAL switch together
 * (see fixtures/start-line.ts), with the copy of `lib/` in `libDir`; returns every error reported,
 * the rounds whose file did not end with one note per agent, and how many rounds ran (with
 * `untilError`, the run ends at the first round that reported one).
 */
async function startLineRace(libDir: string, rounds: number, agents: number, untilError = false): Promise<{ errors: string[], short: number[], ran: number }> {
  const start = new SharedArrayBuffer(4)
  const line = new Int32Array(start)
  const storeModule = pathToFileURL(join(libDir, 'lib/store/store.ts')).href
  const fixture = new URL('./fixtures/start-line.ts', import.meta.url)
  const workers = Array.from({ length: agents }, (_, i) => new Worker(fixture, { workerData: { storeModule, start, name: `agent-${i}` } }))
  let crashed: (error: Error) => void = () => {}
  const crash = new Promise<never>((_, reject) => { crashed = reject })
  for (const w of workers) w.on('error', (error) => crashed(error))
  const next = (w: Worker) => Promise.race([new Promise<string>((resolve) => w.once('message', resolve)), crash])
  try {
    await Promise.all(workers.map(next))
    const errors: string[] = []
    const short: number[] = []
    let round = 0
    for (; round < rounds && !(untilError && errors.length > 0); round++) {
      const path = tempStorePath(`start-line-${round}`)
      const ready = workers.map(next)
      for (const w of workers) w.postMessage({ round, path })
      await Promise.all(ready)
      const done = workers.map(next)
      Atomics.store(line, 0, round + 1)
      Atomics.notify(line, 0)
      errors.push(...(await Promise.all(done)).filter((m) => m !== 'ok'))
      if (untilError) continue
      const db = new DatabaseSync(path, { readOnly: true })
      if (Number((db.prepare('SELECT count(*) AS n FROM blocks').get() as { n: number }).n) !== agents) short.push(round)
      db.close()
    }
    return { errors, short, ran: round }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()))
  }
}

t.test('agents reaching the WAL switch of a new file together: it is retried, never "database is locked"', async (t) => {
  // Two agents, one a core: without the retry about one round in three fails here (idle machine).
  const real = mutant(AT_START_LINE)
  t.teardown(() => real.remove())
  const ok = await startLineRace(real.dir, 150, 2)
  t.same(ok.errors, [], 'every agent opened and committed')
  t.same(ok.short, [], 'every file holds one note per agent')
  const unguarded = mutant(AT_START_LINE, { file: 'store/open-file.ts', from: 'if (!isBusy(error) || Date.now() >= deadline) throw error', to: 'throw error' })
  t.teardown(() => unguarded.remove())
  const bad = await startLineRace(unguarded.dir, 2000, 2, true)
  t.ok(bad.errors.some((e) => /database is locked/.test(e)), `mutation check: without the retry, round ${bad.ran} failed (${bad.errors[0]})`)
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
