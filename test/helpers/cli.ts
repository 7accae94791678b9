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
/**
 * Node's compile cache for the commands the tests start (`NODE_COMPILE_CACHE`, ignored `.cache/`):
 * a start then reuses the compiled, type-stripped modules of the runs before it (about 0.6 s → 0.2
 * s a start on the 2-core CI machine); what the command does is unchanged.
 */
export const COMPILE_CACHE = process.env.NODE_COMPILE_CACHE ?? fileURLToPath(new URL('../../.cache/node-compile', import.meta.url))

/** The outcome of one command run. */
export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs `stablemem <args>`; `env` is added to a minimal environment (PATH, HOME, the compile cache). */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv, entry?: string, node?: string, cwd?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(options.node ?? process.execPath, [options.entry ?? CLI_SOURCE, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_COMPILE_CACHE: COMPILE_CACHE, ...options.env },
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
