import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ensureBuilt } from './helpers/build.ts'
import { CLI_DIST, runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

const root = fileURLToPath(new URL('..', import.meta.url))

/** A Node older than 22 on PATH outside the project (this machine's system Node), if any. */
function oldNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir.includes('node_modules')) continue
    const candidate = join(dir, 'node')
    const probe = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' })
    if (probe.status === 0 && Number(probe.stdout.split('.')[0]) < 22) return candidate
  }
  return undefined
}

t.test('the built command (dist) runs with its shebang and package bin entry', async (t) => {
  ensureBuilt()
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }
  t.equal(pkg.bin.stablemem, 'dist/cli/main.js')
  t.match(readFileSync(CLI_DIST, 'utf8'), /^#!\/usr\/bin\/env node\n/)
  const db = join(tempDir('stablemem-dist'), 'm.db')
  const saved = await runCli(['commit', 'redis 端口 6380 on cache-1', '--db', db], { entry: CLI_DIST })
  t.equal(saved.code, 0, saved.stderr)
  const hits = await runCli(['recall', '6380', '--db', db, '--json'], { entry: CLI_DIST })
  t.match(JSON.parse(hits.stdout), { hits: [{ exact: true, text: 'redis 端口 6380 on cache-1' }] })
  const doctor = await runCli(['doctor', '--db', db], { entry: CLI_DIST })
  t.equal(doctor.code, 0, doctor.stdout)
})

t.test('on a Node without node:sqlite, doctor explains and other commands fail in one line', async (t) => {
  const node = oldNode()
  if (node === undefined) {
    t.comment('no Node older than 22 on PATH; the injected-loader doctor test covers this path')
    return
  }
  const doctor = await runCli(['doctor', '--db', join(tmpdir(), 'none.db')], { entry: CLI_DIST, node })
  t.equal(doctor.code, 1)
  t.match(doctor.stdout, /fail  node +Node 2\d\.\d+\.\d+ is too old/)
  t.match(doctor.stdout, /fail  node:sqlite +this Node .* has no built-in SQLite module/)
  const stats = await runCli(['stats', '--db', join(tmpdir(), 'none.db')], { entry: CLI_DIST, node })
  t.equal(stats.code, 1)
  t.match(stats.stderr, /^stablemem stats: this Node \(2\d[.\d]+\) has no node:sqlite; run `stablemem doctor` for details\n$/)
  const help = await runCli(['--help'], { entry: CLI_DIST, node })
  t.equal(help.code, 0, 'help works without node:sqlite')
})
