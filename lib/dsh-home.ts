import { homedir } from 'node:os'
import { join } from 'node:path'

/**
 * The dsh home (`$DSH_HOME`, else `~/.dsh`, as dsh itself resolves it) and the store file under it.
 * Kept apart from the config schema so the `stablemem` command starts without dsh's packages
 * (`install-dsh` and `preset` run before any dsh exists).
 */
export function dshHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.DSH_HOME && env.DSH_HOME.trim() !== '' ? env.DSH_HOME : join(homedir(), '.dsh')
}

/** The store file used when `path` is empty: under the dsh home, beside dsh's own sessions and settings. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  return join(dshHome(env), 'stablemem', 'memory.db')
}
