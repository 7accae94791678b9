/**
 * `stablemem forget`, `vacuum` and `import --include-forgotten` as a user runs them: the real
 * command as a child process on real files (no terminal there, so `--yes` is required), and the
 * terminal confirmation through the dispatcher with a terminal-flagged input stream.
 */
import { join } from 'node:path'
import { PassThrough, Writable } from 'node:stream'
import t from 'tap'
import { run } from '../lib/cli/run.ts'
import { BlockStore } from '../lib/store/store.ts'
import { runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

function seeded(): { db: string, ids: { redis: string, billing: string, chat: string, late: string } } {
  const db = join(tempDir('stablemem-forget-cli'), 'memory.db')
  let clock = Date.parse('2026-01-10T00:00:00Z')
  const store = new BlockStore(db, { now: () => (clock += 1000) })
  const ids = {
    redis: store.commit({ text: 'redis 端口 6380', scene: 'infra', source: 'ops' }).id,
    billing: store.commit({ text: 'billing port 8499', scene: 'infra', source: 'user' }).id,
    chat: store.commit({ text: '周末去爬山', scene: 'chat', source: 'user' }).id,
    late: (clock = Date.parse('2026-03-01T00:00:00Z'), store.commit({ text: 'late note about the gateway', source: 'ops' }).id),
  }
  store.close()
  return { db, ids }
}

function count(db: string): number {
  const store = new BlockStore(db)
  try { return store.count() } finally { store.close() }
}

t.test('by id, by filter, dry run, --json; unknown ids exit 1 after forgetting the rest', async (t) => {
  const { db, ids } = seeded()
  const dry = await runCli(['forget', '--scene', 'infra', '--dry-run', '--db', db])
  t.equal(dry.code, 0, dry.stderr)
  t.match(dry.stdout, /would forget 2 notes/)
  t.match(dry.stdout, new RegExp(`${ids.redis}  redis 端口 6380`))
  t.equal(count(db), 4, 'a dry run deletes nothing')

  const json = await runCli(['forget', '--before', '2026-02-01', '--source', 'user', '--yes', '--json', '--db', db])
  t.equal(json.code, 0, json.stderr)
  const result = JSON.parse(json.stdout)
  t.same(result.deleted.map((b: { id: string }) => b.id), [ids.billing, ids.chat], '--before and --source narrow together')
  t.equal(result.walCleared, true)

  const missing = 'blk_000000000000000000000000'
  const mixed = await runCli(['forget', ids.redis, missing, '--yes', '--db', db])
  t.equal(mixed.code, 1, 'an unknown id is reported with exit code 1…')
  t.match(mixed.stdout, /forgot 1 note/, '…after the known one was forgotten')
  t.match(mixed.stderr, new RegExp(`no block ${missing}`))
  t.equal(count(db), 1)

  const none = await runCli(['forget', '--scene', 'nothing-here', '--yes', '--db', db])
  t.equal(none.code, 0)
  t.match(none.stdout, /nothing matches/)

  const all = await runCli(['forget', '--all', '--yes', '--db', db])
  t.equal(all.code, 0, all.stderr)
  t.equal(count(db), 0)
})

t.test('usage errors: no target, empty value, mixed targets, bad id, bad time, no terminal without --yes', async (t) => {
  const { db } = seeded()
  for (const [args, message] of [
    [[], /nothing to forget.*--all/],
    [['--scene', ''], /--scene needs a value/],
    [['blk_000000000000000000000000', '--scene', 'x'], /either ids or a filter/],
    [['--all', '--source', 'ops'], /--all cannot be combined/],
    [['not-an-id'], /not a block id/],
    [['--before', 'last tuesday'], /--before must be an ISO 8601 time/],
    [['--scene', 'infra'], /not a terminal.*--yes/],
  ] as const) {
    const result = await runCli(['forget', ...args, '--db', db])
    t.equal(result.code, 2, `${args.join(' ')}: exit 2`)
    t.match(result.stderr, message)
  }
  t.equal(count(db), 4, 'nothing was deleted by any of them')
  const missingDb = await runCli(['forget', '--all', '--yes', '--db', join(tempDir('stablemem-forget-cli'), 'absent.db')])
  t.equal(missingDb.code, 1)
  t.match(missingDb.stderr, /no store at/)
})

/** Runs the dispatcher with a terminal on standard input that answers `answer`. */
async function onTerminal(args: string[], answer: string): Promise<{ code: number, stdout: string, stderr: string }> {
  const out: string[] = []
  const err: string[] = []
  const sink = (into: string[]) => new Writable({ write(chunk, _enc, done) { into.push(String(chunk)); done() } })
  const stdin = Object.assign(new PassThrough(), { isTTY: true })
  const running = run(args, { stdout: sink(out), stderr: sink(err), env: {}, stdin })
  setImmediate(() => stdin.end(`${answer}\n`))
  const code = await running
  return { code, stdout: out.join(''), stderr: err.join('') }
}

t.test('on a terminal it lists the notes and deletes only after a yes', async (t) => {
  const { db, ids } = seeded()
  const no = await onTerminal(['forget', '--scene', 'infra', '--db', db], 'n')
  t.equal(no.code, 1)
  t.match(no.stdout, /will forget 2 notes/)
  t.match(no.stderr, /Forget 2 notes for good\? \[y\/N\][\s\S]*nothing deleted/)
  t.equal(count(db), 4)
  const yes = await onTerminal(['forget', '--scene', 'infra', '--db', db], 'yes')
  t.equal(yes.code, 0, yes.stderr)
  t.match(yes.stdout, /forgot 2 notes/)
  const store = new BlockStore(db)
  t.teardown(() => store.close())
  t.equal(store.get(ids.redis), undefined)
  t.ok(store.get(ids.chat))
})

t.test('vacuum, and import of an older export skips forgotten notes unless --include-forgotten', async (t) => {
  const { db, ids } = seeded()
  const backup = join(tempDir('stablemem-forget-cli'), 'backup.jsonl')
  t.equal((await runCli(['export', '--db', db, '--out', backup])).code, 0)
  t.equal((await runCli(['forget', ids.chat, '--yes', '--db', db])).code, 0)
  const vacuum = await runCli(['vacuum', '--json', '--db', db])
  t.equal(vacuum.code, 0, vacuum.stderr)
  t.match(JSON.parse(vacuum.stdout), { bytesBefore: Number, bytesAfter: Number, walCleared: true })
  const imported = await runCli(['import', backup, '--db', db])
  t.equal(imported.code, 0, imported.stderr)
  t.match(imported.stdout, /skipped 1 forgotten notes and 0 of their edges/)
  t.equal(count(db), 3)
  const restored = await runCli(['import', backup, '--include-forgotten', '--json', '--db', db])
  t.match(JSON.parse(restored.stdout), { blocksCreated: 1 })
  t.equal(count(db), 4)
})
