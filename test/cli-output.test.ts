/**
 * Output that cannot be written: a closed pipe (`stats | head -1`) and a full device
 * (`get > /dev/full`) end the real command with one line on standard error and exit code 1.
 */
import { closeSync, openSync, readdirSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { CLI_SOURCE, filledStore, runCli } from './helpers/cli.ts'

/** Runs the command with its standard output on `fd` (a pipe we close, or /dev/full). */
function runWithStdout(args: string[], stdout: 'pipe-closed' | number): Promise<{ code: number | null, stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_SOURCE, ...args], { stdio: ['ignore', stdout === 'pipe-closed' ? 'pipe' : stdout, 'pipe'] })
    if (stdout === 'pipe-closed') child.stdout!.destroy() // the reader is gone before the first write
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (code) => resolve({ code, stderr }))
  })
}

t.test('a closed pipe (EPIPE) and a full device (ENOSPC) end in one line on stderr and exit 1, never a stack trace', async (t) => {
  const db = filledStore(300)
  const id = (JSON.parse((await runCli(['commit', 'hello 8080', '--db', db, '--json'])).stdout) as { id: string }).id
  for (const args of [['stats'], ['recall', 'service port'], ['export'], ['export', '--format', 'md'], ['get', id]]) {
    const piped = await runWithStdout([...args, '--db', db], 'pipe-closed')
    t.equal(piped.code, 1, `${args[0]} | (closed): exit 1`)
    t.match(piped.stderr, new RegExp(`^stablemem ${args[0]}: output stopped: the reader closed the pipe \\(EPIPE\\)\\n$`), `${args.join(' ')}: one line`)
    const full = openSync('/dev/full', 'w')
    const device = await runWithStdout([...args, '--db', db], full)
    closeSync(full)
    t.equal(device.code, 1, `${args[0]} > /dev/full: exit 1`)
    t.equal(device.stderr, `stablemem ${args[0]}: output stopped: no space left on device (ENOSPC)\n`)
  }
  t.same(readdirSync(join(db, '..')), ['m.db'], 'the read commands closed the store and left no WAL files behind')
})

