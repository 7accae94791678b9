/** Spawning the fixture processes: the same Node (24, from the project) running a TypeScript fixture. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { copyFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

/** A running fixture with its stdout as a line stream. */
export interface Child {
  proc: ChildProcessWithoutNullStreams
  lines: string[]
  /** Resolves with the first line matching `test` (already received or future); rejects when the process exits first. */
  waitFor(test: (line: string) => boolean): Promise<string>
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** Starts `fixtures/<name>.ts` with these arguments. */
export function startFixture(name: string, args: string[]): Child {
  const script = fileURLToPath(new URL(`./fixtures/${name}.ts`, import.meta.url))
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: string[] = []
  const waiters: Array<{ test: (line: string) => boolean, resolve: (line: string) => void, reject: (e: Error) => void }> = []
  let stderr = ''
  proc.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  createInterface({ input: proc.stdout }).on('line', (line) => {
    lines.push(line)
    for (const w of [...waiters]) {
      if (w.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line) }
    }
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('close', (code, signal) => {
      for (const w of waiters.splice(0)) w.reject(new Error(`${name} exited (${code ?? signal}) before the awaited line; stderr: ${stderr.slice(0, 2000)}`))
      resolve({ code, signal })
    })
  })
  return {
    proc, lines, exited,
    waitFor(test) {
      const seen = lines.find(test)
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise((resolve, reject) => { waiters.push({ test, resolve, reject }) })
    },
  }
}

/**
 * A kill round of the kill tests: copies `template` to `path`, starts `fixtures/<name>.ts` with
 * `path` and then `args`, kills it with SIGKILL once `when` resolves, and checks the kill is what
 * ended it. Returns the lines the child wrote before it died.
 */
export async function killOnCopy(template: string, path: string, name: string, args: string[], when: (child: Child) => Promise<unknown>): Promise<string[]> {
  copyFileSync(template, path)
  const child = startFixture(name, [path, ...args])
  await when(child)
  child.proc.kill('SIGKILL')
  const { signal } = await child.exited
  if (signal !== 'SIGKILL') throw new Error(`${path}: ${name} ended by ${String(signal)}, not by the kill: ${child.lines.join(' | ')}`)
  return child.lines
}
