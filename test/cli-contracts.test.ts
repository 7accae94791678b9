/**
 * The command line's contracts about the store file: `--db` that is not a regular file, and read
 * commands on read-only files and folders. Each case runs the real `stablemem` command as a child
 * process on real files.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BlockStore } from '../lib/store/store.ts'
import { filledStore, runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

t.test('--db that is not a regular file is refused, and nothing is created beside it', async (t) => {
  const dir = tempDir('stablemem-cli')
  const nullJournalBefore = existsSync('/dev/null-journal')
  writeFileSync(join(dir, 'x.jsonl'), '')
  // A reading command, a writing one and import, on a device and on a folder.
  for (const [args, db] of [[['stats'], '/dev/null'], [['commit', 'note'], '/dev/null'], [['import', join(dir, 'x.jsonl')], '/dev/null'], [['recall', 'x'], dir]] as const) {
    const r = await runCli([...args, '--db', db])
    t.equal(r.code, 1, `${args[0]} --db ${db}`)
    t.equal(r.stderr, `stablemem ${args[0]}: ${db} is not a regular file, so it cannot be a store\n`)
  }
  if (!nullJournalBefore) t.notOk(existsSync('/dev/null-journal'), 'no /dev/null-journal')
  t.same(readdirSync(dir).sort(), ['x.jsonl'], 'no journal beside the folder')
})

/** A folder whose contents cannot be changed: a read-only tmpfs when we may mount, else a folder without write permission. */
function readOnlyFolder(fill: (dir: string) => void): { dir: string, release: () => void } | undefined {
  const dir = tempDir('stablemem-ro')
  if (process.getuid?.() !== 0) {
    fill(dir)
    execFileSync('chmod', ['a-w', dir])
    return { dir, release: () => execFileSync('chmod', ['u+w', dir]) }
  }
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'ignore' })
  } catch {
    return undefined // root without the right to mount: permissions would not stop root either
  }
  fill(dir)
  execFileSync('mount', ['-o', 'remount,ro', dir])
  return { dir, release: () => execFileSync('umount', [dir]) }
}

t.test('read commands work on a store in a read-only folder and change nothing', async (t) => {
  const source = filledStore(20, 'ro-src')
  const bytes = readFileSync(source)
  const ro = readOnlyFolder((dir) => writeFileSync(join(dir, 'm.db'), bytes))
  if (ro === undefined) {
    t.pass('not checked: this machine cannot make a read-only folder (root without the right to mount)')
    return
  }
  t.teardown(ro.release)
  const db = join(ro.dir, 'm.db')
  const before = statSync(db).mtimeMs
  const stats = await runCli(['stats', '--json', '--db', db])
  t.equal(stats.code, 0, stats.stderr)
  t.match(JSON.parse(stats.stdout), { blocks: 20 })
  const recall = await runCli(['recall', 'service-7 port', '--db', db])
  t.equal(recall.code, 0, recall.stderr)
  t.match(recall.stdout, /service-7 port 10007/)
  const exported = await runCli(['export', '--db', db])
  t.equal(exported.code, 0, exported.stderr)
  t.equal(exported.stdout.trim().split('\n').length, 21)
  const id = /blk_[0-9a-f]{24}/.exec(recall.stdout)![0]
  t.equal((await runCli(['get', id, '--db', db])).code, 0)
  t.same(readdirSync(ro.dir), ['m.db'])
  t.equal(statSync(db).mtimeMs, before)
  t.ok(readFileSync(db).equals(bytes), 'byte-identical')
})

t.test('read commands in a writable folder leave no WAL files behind, and do not disturb a store in use', async (t) => {
  const db = filledStore(10)
  for (const args of [['stats'], ['recall', 'port'], ['export']]) t.equal((await runCli([...args, '--db', db])).code, 0)
  t.same(readdirSync(join(db, '..')), ['m.db'])
  const open = new BlockStore(db) // a running agent holds the file
  t.teardown(() => open.close())
  open.commit({ text: 'written while the CLI reads 4242' })
  const recall = await runCli(['recall', '4242', '--db', db])
  t.match(recall.stdout, /written while the CLI reads 4242/, 'sees the live WAL')
  t.ok(existsSync(`${db}-wal`), 'the agent\'s WAL is still there')
  open.commit({ text: 'and after it 4343' })
  t.match((await runCli(['recall', '4343', '--db', db])).stdout, /4343/)
})
