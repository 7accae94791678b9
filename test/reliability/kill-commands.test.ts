/**
 * Kill -9 during the commands that write in bulk or in slices (issue 31, faults): `stablemem
 * upkeep` (index merge slices), `stablemem import`, `stablemem cool` (a cooling tick), and the
 * memory browser's forget. Each child is the real CLI on a real store file, SIGKILLed at seeded
 * random moments while it works. After every kill the file passes `integrity_check`, nothing it
 * held before is lost or changed, what the command wrote is whole or absent, and running the
 * command again finishes the job.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { DEFER_SCRUB_FROM } from '../../lib/store/forget.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl } from '../../lib/store/transfer.ts'
import { CLI_SOURCE, runCli } from '../helpers/cli.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { startServe } from '../helpers/serve.ts'
import { rng } from '../../bench/corpus.ts' // seeded (mulberry32): a failing schedule can be replayed

/** Runs the CLI with `args` and SIGKILLs it `delayMs` after it started, unless it ended first; resolves with how it ended. */
function killCli(args: string[], delayMs: number): Promise<'killed' | 'finished'> {
  const child = spawn(process.execPath, [CLI_SOURCE, ...args], { stdio: 'ignore', env: { PATH: process.env.PATH, HOME: process.env.HOME } })
  const timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
  return new Promise((resolve) => child.on('exit', (_code, signal) => {
    clearTimeout(timer)
    resolve(signal === 'SIGKILL' ? 'killed' : 'finished')
  }))
}

/** Every note of a store as id → text, and its integrity check. */
function snapshot(path: string): { notes: Map<string, string>, integrity: string[] } {
  const store = new BlockStore(path)
  try {
    return { notes: new Map([...store.allBlocks()].map((b) => [b.id, b.text])), integrity: store.integrityCheck() }
  } finally {
    store.close()
  }
}

/** Whether every note of `before` is in `after` with the same text. */
const keeps = (before: Map<string, string>, after: Map<string, string>) => [...before].every(([id, text]) => after.get(id) === text)

const random = rng(20261206)
const ROUNDS = 4

t.test('kill -9 during upkeep: the index merge loses nothing and the next upkeep finishes', async (t) => {
  const template = tempStorePath('kill-upkeep-template')
  const store = new BlockStore(template)
  for (let b = 0; b < 60; b++) store.commitMany(Array.from({ length: 100 }, (_, i) => ({ text: `upkeep note ${b}-${i}: host u${b * 100 + i} port ${9000 + i}` })))
  const segments = store.ftsSegments()
  store.close()
  t.ok(segments > 4, `the store's index is in ${segments} segments`)
  const before = snapshot(template).notes
  for (let round = 0; round < ROUNDS; round++) {
    const path = tempStorePath(`kill-upkeep-${round}`)
    copyFileSync(template, path)
    const delay = 30 + Math.floor(random() * 400)
    const ended = await killCli(['upkeep', '--db', path], delay)
    const after = snapshot(path)
    t.same(after.integrity, ['ok'], `round ${round} (${ended} at ${delay} ms): integrity_check ok`)
    t.ok(keeps(before, after.notes) && after.notes.size === before.size, 'every note, unchanged')
    const check = new BlockStore(path)
    t.equal(check.matchCount('"upkeep"'), before.size, 'the index finds every note')
    t.equal(check.upkeep().segmentsAfter, 1, 'the next upkeep merges to one segment')
    t.equal(check.matchCount('"upkeep"'), before.size)
    check.close()
  }
})

t.test('kill -9 during import: the notes before stay, each imported note is whole or absent, and importing again completes it', async (t) => {
  const source = new BlockStore(':memory:')
  source.commitMany(Array.from({ length: 6000 }, (_, i) => ({ text: `imported note ${i}: 导入的笔记 ${i}，端口 ${20000 + i}`, source: 'import', scene: `s${i % 7}` })))
  const file = `${tempStorePath('kill-import-file')}.jsonl`
  writeFileSync(file, `${[...exportJsonl(source)].join('\n')}\n`)
  const expected = new Map([...source.allBlocks()].map((b) => [b.id, b.text]))
  source.close()
  const template = tempStorePath('kill-import-template')
  const seed = new BlockStore(template)
  seed.commitMany(Array.from({ length: 200 }, (_, i) => ({ text: `existing note ${i}: kept through the import` })))
  seed.close()
  const before = snapshot(template).notes
  for (let round = 0; round < ROUNDS; round++) {
    const path = tempStorePath(`kill-import-${round}`)
    copyFileSync(template, path)
    const delay = 100 + Math.floor(random() * 1500)
    const ended = await killCli(['import', file, '--db', path], delay)
    const after = snapshot(path)
    t.same(after.integrity, ['ok'], `round ${round} (${ended} at ${delay} ms): integrity_check ok`)
    t.ok(keeps(before, after.notes), 'the notes before the import are all there, unchanged')
    const imported = [...after.notes].filter(([id]) => !before.has(id))
    t.ok(imported.every(([id, text]) => expected.get(id) === text), `${imported.length} imported notes, each whole`)
    const again = await runCli(['import', file, '--db', path])
    t.equal(again.code, 0, 'importing again works')
    const done = snapshot(path).notes
    t.equal(done.size, before.size + expected.size, 'and completes it')
  }
})

t.test('kill -9 during cooling: no captured note is lost, no fact is left without its note, and the next tick goes on', async (t) => {
  const template = tempStorePath('kill-cool-template')
  const store = new BlockStore(template)
  const origin = { eventType: 'user/message', role: 'user', eventTime: Date.UTC(2026, 10, 1), compactionId: 'c1', sessionId: 's1' }
  store.layers.capture(Array.from({ length: 600 }, (_, i) => ({ text: `服务 svc${i} 的端口是 ${30000 + i}，部署在 10.9.${i % 250}.${i % 200}`, origin: { ...origin, seq: i } })), () => 'compaction:user')
  store.close()
  const before = snapshot(template).notes
  const orphanFacts = (path: string) => {
    const s = new BlockStore(path)
    try {
      const facts = [...s.allBlocks()].filter((b) => !before.has(b.id))
      return facts.filter((f) => !s.edgesOf('block', f.id).some((e) => e.type === 'derived_from' && e.sourceId === f.id && s.get(e.targetId) !== undefined)).length
    } finally {
      s.close()
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const path = tempStorePath(`kill-cool-${round}`)
    copyFileSync(template, path)
    const delay = 80 + Math.floor(random() * 700)
    const ended = await killCli(['cool', '--now', '2031-01-01', '--db', path], delay)
    const after = snapshot(path)
    t.same(after.integrity, ['ok'], `round ${round} (${ended} at ${delay} ms): integrity_check ok`)
    t.ok(keeps(before, after.notes), 'every captured note is there, unchanged')
    t.equal(orphanFacts(path), 0, `no fact without the note it came from (${after.notes.size - before.size} facts)`)
    t.equal((await runCli(['cool', '--now', '2031-01-01', '--db', path])).code, 0, 'the next tick runs')
    t.equal(orphanFacts(path), 0)
  }
})

t.test('kill -9 of the memory browser during its forget: the forget is whole or absent, and no byte is left after the scrub', async (t) => {
  const SECRET = 'The launch code for project Halvorquinth is 6617-sigma-Brixtomane'
  const template = tempStorePath('kill-serve-template')
  const store = new BlockStore(template)
  store.commitMany(Array.from({ length: DEFER_SCRUB_FROM + 100 }, (_, i) => ({ text: `kept note ${i} on port ${10000 + (i % 50000)}` })))
  const doomed = store.commitMany(Array.from({ length: 400 }, (_, i) => ({ text: `doomed note ${i}: temp ${i}` }))).map((r) => r.id)
  doomed.push(store.commit({ text: SECRET }).id)
  store.close()
  const needles = ['halvorqu', 'brixtoma', 'Halvorquinth', '6617-sigma']
  const scan = (path: string) => ['', '-wal', '-shm'].flatMap((suffix) => existsSync(path + suffix)
    ? needles.filter((n) => readFileSync(path + suffix).includes(Buffer.from(n))).map((n) => `${n} in ${suffix || 'db'}`) : [])
  for (let round = 0; round < 3; round++) {
    const path = tempStorePath(`kill-serve-${round}`)
    copyFileSync(template, path)
    const server = await startServe(path)
    const session = await new Promise<string>((resolve, reject) => {
      request(`${server.origin}/api/session`, { headers: { 'x-stablemem-token': server.token } }, (res) => {
        let body = ''
        res.on('data', (c: Buffer) => { body += c.toString('utf8') })
        res.on('end', () => resolve((JSON.parse(body) as { csrf: string }).csrf))
      }).on('error', reject).end()
    })
    const req = request(`${server.origin}/api/forget`, {
      method: 'POST', headers: { 'x-stablemem-token': server.token, 'x-stablemem-csrf': session, origin: server.origin, 'content-type': 'application/json' },
    })
    req.on('error', () => undefined)
    req.end(JSON.stringify({ ids: doomed }))
    await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 900)))
    process.kill(server.pid, 'SIGKILL')
    await server.stop()
    const check = new BlockStore(path)
    try {
      t.same(check.integrityCheck(), ['ok'], `round ${round}: integrity_check ok`)
      const left = doomed.filter((id) => check.get(id) !== undefined).length
      t.ok(left === 0 || left === doomed.length, `the forget is whole or absent (${left} of ${doomed.length} left)`)
      t.equal(check.count(), DEFER_SCRUB_FROM + 100 + left, 'every other note is there')
      check.scrub()
      t.equal(check.pendingScrubs().forgets, 0)
      if (left === 0) t.same(scan(path), [], 'after the scrub no byte of the secret is left')
      t.equal(check.get(blockId(SECRET)) === undefined, left === 0)
    } finally {
      check.close()
    }
  }
})
