/**
 * Damaged or unusable store files: truncated, corrupted, not SQLite, another program's database,
 * a newer schema, a read-only file or folder. Each gives one clear error; the agent runs its turn
 * without memory; `ctx.stablemem.stats()` and the prompt's context line say why; and the user's
 * file is never changed (bytes compared before and after).
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { StableMemError } from '../../lib/errors.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, reply, requestTexts, tempStorePath } from '../helpers/harness.ts'

/** A healthy store file with `n` notes, closed. */
function healthyStore(label: string, n = 400): string {
  const path = tempStorePath(label)
  const store = new BlockStore(path)
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `note ${i}: billing 服务端口 ${8000 + i}，部署在 10.3.${i % 250}.9，负责人 user${i}` })))
  store.close()
  return path
}

function digest(path: string): string {
  return existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : 'absent'
}

/** `chattr +i` makes a file or folder unwritable even for root (tests often run as root). */
function immutable(path: string, on: boolean): boolean {
  try {
    execFileSync('chattr', [on ? '+i' : '-i', path], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

const CASES: Array<{ name: string, make: () => { path: string, cleanup?: () => void } | undefined, why: RegExp }> = [
  {
    name: 'truncated file',
    make: () => { const path = healthyStore('truncated'); truncateSync(path, Math.floor(statSync(path).size / 2)); return { path } },
    why: /malformed/,
  },
  {
    name: 'corrupted pages',
    make: () => {
      const path = healthyStore('corrupted')
      const fd = openSync(path, 'r+')
      writeSync(fd, Buffer.alloc(4096 * 8, 0xab), 0, 4096 * 8, 4096)
      closeSync(fd)
      return { path }
    },
    why: /malformed|vtable constructor failed|not a database/,
  },
  {
    name: 'not an SQLite file',
    make: () => { const path = tempStorePath('notes'); writeFileSync(path, '# my notes\nbilling port 8499\n'.repeat(300)); return { path } },
    why: /file is not a database/,
  },
  {
    name: 'another program\'s SQLite database',
    make: () => {
      const path = tempStorePath('foreign')
      const db = new DatabaseSync(path)
      db.exec("CREATE TABLE contacts (name TEXT, phone TEXT); INSERT INTO contacts VALUES ('Ada', '555-0100')")
      db.close()
      return { path }
    },
    why: /SQLite database of another program \(tables contacts\); refusing to change it/,
  },
  {
    name: 'store from a newer release',
    make: () => {
      const path = healthyStore('newer', 10)
      const db = new DatabaseSync(path)
      db.exec('PRAGMA user_version = 99')
      db.close()
      return { path }
    },
    why: /schema version 99 is newer than this dsh-stablemem supports \(\d+\); upgrade the package/,
  },
  {
    name: 'read-only file',
    make: () => {
      const path = healthyStore('readonly', 10)
      if (!immutable(path, true)) return undefined
      return { path, cleanup: () => { immutable(path, false) } }
    },
    why: /readonly database/,
  },
  {
    name: 'read-only folder',
    make: () => {
      const dir = join(dirname(tempStorePath('rodir')), 'locked')
      mkdirSync(dir)
      if (!immutable(dir, true)) return undefined
      return { path: join(dir, 'memory.db'), cleanup: () => { immutable(dir, false) } }
    },
    why: /unable to open database file/,
  },
]

for (const { name, make, why } of CASES) {
  t.test(`${name}: one clear error, the turn runs without memory, the file is untouched`, async (t) => {
    const made = make()
    if (!made) {
      t.plan(0, 'chattr is not available here, so a read-only file cannot be made for root')
      return
    }
    t.teardown(() => made.cleanup?.())
    const before = digest(made.path)
    const h = await boot({ path: made.path }, [reply('好的，我没有相关记忆。')])
    t.teardown(() => h.dispose())
    await h.turn('billing 服务端口是多少？')
    t.same(h.errors, [], 'no agent error')
    t.equal(h.adapter.requests.length, 1, 'the turn reached the model')
    const stats = await h.ctx.stablemem.stats()
    t.equal(stats.available, false)
    t.match(stats.error, why, `stats says why: ${stats.error}`)
    t.ok(requestTexts(h.adapter.requests[0]!).some((x) => x.includes('Long-term memory (dsh-stablemem) is unavailable')), 'the model is told memory is off')
    await t.rejects(h.ctx.stablemem.commit({ text: 'x' }), { code: 'unavailable', message: why }, 'calls are refused with the same reason')
    await h.dispose()
    t.equal(digest(made.path), before, 'file bytes unchanged')
  })
}

t.test('mutation check: without the refuse-before-writing guard, opening would change the user\'s file', async (t) => {
  const path = tempStorePath('foreign-mutant')
  const db = new DatabaseSync(path)
  db.exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('Ada')")
  db.close()
  const before = digest(path)
  const naive = new DatabaseSync(path)
  naive.exec('PRAGMA journal_mode = WAL') // what the store did first before the guard
  naive.close()
  t.not(digest(path), before, 'the same bytes assertion goes red')
})

t.test('damage found after a clean open disables memory once, with the reason', async (t) => {
  const path = healthyStore('late', 3000)
  const h = await boot({ path }, [reply('一'), reply('二')])
  t.teardown(() => h.dispose())
  const bare = new BlockStore(path) // the same damage seen without the service's guard
  t.teardown(() => bare.close())
  // Overwrite the middle of the file behind the open connection: pages it has not read yet.
  const size = statSync(path).size
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(Math.floor(size / 3), 0xab), 0, Math.floor(size / 3), Math.floor(size / 3))
  closeSync(fd)
  // `stats()` walks every block (`count()` reads one maintained row and would not reach the damage).
  const raw = (() => { try { bare.stats(); return undefined } catch (error) { return error } })()
  t.ok(raw instanceof Error && !(raw instanceof StableMemError), 'mutation check: unguarded, a raw SQLite error would reach the agent loop')
  await h.turn('note 1500 billing 服务端口 9500 部署在哪里？负责人是谁')
  await h.turn('还有 10.3.7.9 吗')
  t.same(h.errors, [])
  t.equal(h.adapter.requests.length, 2, 'both turns ran')
  const stats = await h.ctx.stablemem.stats()
  t.equal(stats.available, false, 'memory disabled')
  t.match(stats.error, /damaged or unusable: .*(malformed|vtable|not a database)/)
  t.ok(stats.recallFailures <= 1, 'at most the recall that found the damage failed; then memory stayed off')
  t.ok(requestTexts(h.adapter.requests[1]!).some((x) => x.includes('Long-term memory (dsh-stablemem) is unavailable')), 'the next turn is told memory is off')
})
