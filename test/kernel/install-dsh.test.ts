/**
 * `stablemem install-dsh <prefix>` without the slow part (the real install runs in the e2e tests,
 * `e2e/readme-install.e2e.ts`): what it refuses, that a failed npm install leaves nothing, and that
 * a prefix already holding this install is left alone. The shipped install pins what the e2e
 * tests use.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import t from 'tap'
import { MARKER_FILE, shippedInstall } from '../../lib/cli/dsh-installer.ts'
import { runCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/temp.ts'

const lines = (text: string) => text.trim().split('\n').filter((l) => l !== '')

t.test('the shipped install pins dsh 0.1.0-rc.8, the HMR plugin 1.0.16, Node 24 and pnpm, and its lock agrees', async (t) => {
  const { manifest, lock } = shippedInstall()
  const pkg = JSON.parse(manifest) as { dependencies: Record<string, string>, overrides: Record<string, string> }
  t.same(pkg.dependencies, { '@deepseek-ai/dsh': '0.1.0-rc.8', 'node': '24.21.0', 'pnpm': '12.4.2' })
  t.same(pkg.overrides, { '@deepseek-ai/cordis-plugin-hmr': '1.0.16' })
  const locked = JSON.parse(lock) as { packages: Record<string, { version?: string, dependencies?: Record<string, string> }> }
  t.same(locked.packages['']!.dependencies, pkg.dependencies)
  t.equal(locked.packages['node_modules/@deepseek-ai/cordis-plugin-hmr']!.version, '1.0.16')
  t.equal(locked.packages['node_modules/@deepseek-ai/dsh']!.version, '0.1.0-rc.8')
})

/**
 * npm 11.19 runs no dependency's install scripts unless `allowScripts` names it. Both installs
 * approve every package of their lock that has one, as npm ran them before: Node 24 and pnpm set
 * up for the platform, node-pty built where no prebuilt binary fits and its helper made
 * executable (dsh's postinstall). A lock that gains such a package fails here until it is reviewed.
 */
t.test('every package of each lock with an install script is approved in its manifest (allowScripts)', async (t) => {
  const own = { manifest: readFileSync(new URL('../../package.json', import.meta.url), 'utf8'), lock: readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8') }
  for (const [name, { manifest, lock }] of [['the shipped dsh install', shippedInstall()], ['this package', own]] as const) {
    const approved = (JSON.parse(manifest) as { allowScripts?: Record<string, boolean> }).allowScripts ?? {}
    const locked = JSON.parse(lock) as { packages: Record<string, { hasInstallScript?: boolean }> }
    const scripted = Object.entries(locked.packages).filter(([, p]) => p.hasInstallScript === true).map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    t.ok(scripted.length > 0, `${name}: its lock lists packages with install scripts`)
    t.same(scripted.filter((p) => approved[p] !== true), [], `${name}: approved`)
  }
})

t.test('a prefix that is a file, or a folder holding something else, is refused with one line (exit 2)', async (t) => {
  const dir = tempDir('stablemem-prefix')
  const file = join(dir, 'file')
  writeFileSync(file, 'x')
  const onFile = await runCli(['install-dsh', file])
  t.equal(onFile.code, 2)
  t.same(lines(onFile.stderr), [`stablemem install-dsh: ${file} is a file, not a folder for dsh (see stablemem install-dsh --help)`])
  const busy = join(dir, 'busy')
  mkdirSync(busy)
  writeFileSync(join(busy, 'notes.txt'), 'mine')
  const onBusy = await runCli(['install-dsh', busy])
  t.equal(onBusy.code, 2)
  t.match(onBusy.stderr, /is not empty and holds no dsh installed by stablemem; name a new or empty folder/)
  t.equal(readFileSync(join(busy, 'notes.txt'), 'utf8'), 'mine')
  t.equal((await runCli(['install-dsh'])).code, 2, 'the prefix is required')
})

t.test('a failed npm install removes the folder it created', async (t) => {
  const prefix = join(tempDir('stablemem-prefix'), 'dsh')
  // No npm on PATH: the install cannot start.
  const run = await runCli(['install-dsh', prefix], { env: { PATH: dirname(process.execPath) } })
  t.equal(run.code, 1)
  t.match(run.stderr, /npm install failed in .*; the folder was removed again/)
  t.notOk(existsSync(prefix), 'nothing left behind')
})

t.test('a prefix that already holds this install is left as it is', async (t) => {
  const prefix = tempDir('stablemem-prefix')
  const { manifest, lock } = shippedInstall()
  mkdirSync(join(prefix, 'node_modules', '.bin'), { recursive: true })
  mkdirSync(join(prefix, 'bin'))
  writeFileSync(join(prefix, 'node_modules', '.bin', 'dsh'), '')
  writeFileSync(join(prefix, 'bin', 'dsh'), '')
  writeFileSync(join(prefix, MARKER_FILE), `${createHash('sha256').update(manifest).update('\0').update(lock).digest('hex')}\n`)
  const run = await runCli(['install-dsh', prefix], { env: { PATH: dirname(process.execPath) } })
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /is already installed in/)
  t.equal(readFileSync(join(prefix, 'bin', 'dsh'), 'utf8'), '', 'nothing rewritten')
})
