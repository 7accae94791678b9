/**
 * Runs the real `stablemem` command as a child process (Node 24 from the project, TypeScript
 * source by default or the built `dist` entry), on real files.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BlockStore } from '../../lib/store/store.ts'
import { tempDir } from './temp.ts'

/** The source entry point of the command. */
export const CLI_SOURCE = fileURLToPath(new URL('../../lib/cli/main.ts', import.meta.url))
/** The built entry point (after `npm run build`). */
export const CLI_DIST = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))

/** The outcome of one command run. */
export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs `stablemem <args>`; `env` is added to a minimal environment with a private DSH_HOME unless given. */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv, entry?: string, node?: string, cwd?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(options.node ?? process.execPath, [options.entry ?? CLI_SOURCE, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
      cwd: options.cwd,
      maxBuffer: 64 << 20,
    }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, stdout, stderr })
    })
  })
}

/** A store file with `n` notes (`service-i port 10000+i 服务端口`), built in one transaction and closed. */
export function filledStore(n: number, label = 'cli'): string {
  const path = join(tempDir(`stablemem-${label}`), 'm.db')
  const store = new BlockStore(path)
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `service-${i} port ${10_000 + i} 服务端口` })))
  store.close()
  return path
}
