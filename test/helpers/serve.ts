/**
 * Runs the real `stablemem serve` as a child process on a real store file and hands back its
 * printed URL; `stop()` sends SIGINT (Ctrl-C) and resolves with the exit code. Waits on the
 * printed line, never on a timer.
 */
import { spawn } from 'node:child_process'
import { CLI_SOURCE } from './cli.ts'

/** A running `stablemem serve`. */
export interface ServeProcess {
  url: string
  origin: string
  token: string
  port: number
  /** The process id (for a kill -9). */
  pid: number
  /** Everything printed so far. */
  output(): string
  /** Ctrl-C; resolves with the exit code. */
  stop(): Promise<number>
}

/** Starts `stablemem serve --db <db> …args` (from `entry`, e.g. a mutant's copy) and resolves once it printed its URL. */
export function startServe(db: string, args: string[] = [], env: NodeJS.ProcessEnv = {}, entry = CLI_SOURCE): Promise<ServeProcess> {
  const child = spawn(process.execPath, [entry, 'serve', '--db', db, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: process.env.TZ, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128))))
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8')
      const match = /^(http:\/\/[^\s/]+)\/\?t=([\w-]+)$/m.exec(out)
      if (match === null) return
      child.stdout.off('data', onData)
      child.stdout.on('data', (more: Buffer) => { out += more.toString('utf8') })
      resolve({
        url: match[0], origin: match[1]!, token: match[2]!, port: Number(new URL(match[1]!).port), pid: child.pid!,
        output: () => out,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGINT')
          return exited
        },
      })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString('utf8') })
    void exited.then((code) => reject(new Error(`stablemem serve exited (${code}) before printing its URL:\n${out}`)))
  })
}
