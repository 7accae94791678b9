/**
 * Mutation checks of the CLI's guards: each removes one guard from a copy of lib/ and runs the
 * real command from it, which must then fail the contract the other CLI tests hold.
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { filledStore, runCli } from './helpers/cli.ts'
import { mutant } from './helpers/mutant.ts'
import { tempDir } from './helpers/temp.ts'

t.test('mutations: without the regular-file check /dev/null is opened; without read-only opens a read command leaves WAL files', async (t) => {
  const special = mutant({ file: 'cli/open-store.ts', from: "  refuseSpecial(path)\n  return new BlockStore(path, { readOnly: options.write !== true })", to: "  return new BlockStore(path, { readOnly: options.write !== true })" })
  t.teardown(() => special.remove())
  const dir = tempDir('stablemem-cli')
  const r = await runCli(['stats', '--db', dir], { entry: join(special.dir, 'lib', 'cli', 'main.ts') })
  t.notMatch(r.stderr, /is not a regular file/, 'the folder reaches SQLite')
  const cleanup = mutant({ file: 'store/store.ts', from: 'if (this.readOnly && this.createdWalFiles) removeIdleWalFiles(this.path)', to: '' })
  t.teardown(() => cleanup.remove())
  const db = filledStore(3)
  t.equal((await runCli(['stats', '--db', db], { entry: join(cleanup.dir, 'lib', 'cli', 'main.ts') })).code, 0)
  t.not(readdirSync(join(db, '..')).length, 1, 'WAL files are left beside the store')
  const unguarded = mutant({ file: 'cli/main.ts', from: "  stream.on('error',", to: "  stream.on('unused'," })
  t.teardown(() => unguarded.remove())
  const full = openSync('/dev/full', 'w')
  const crashed = await new Promise<string>((resolve) => {
    const child = spawn(process.execPath, [join(unguarded.dir, 'lib', 'cli', 'main.ts'), 'stats', '--db', db], { stdio: ['ignore', full, 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', () => resolve(stderr))
  })
  closeSync(full)
  t.match(crashed, /Unhandled 'error' event[\s\S]*\n\s+at /, 'mutation: without the output error listener, ENOSPC is a stack trace')
})
