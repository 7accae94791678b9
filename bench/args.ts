/**
 * The command-line handling the benches share, so every bench refuses a bad flag with the same
 * message naming it: whole-number flags, `--kinds`, a `--store` folder from `bench:perf --cache`;
 * and one reading of `--json` and of where progress lines go while stdout is kept for the JSON line.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { SCALE_QUERY_KINDS, type QueryKind } from './corpus.ts'

/** `--name`'s value as a whole number ≥ `least`; throws naming the flag otherwise (an empty value too). */
export function wholeFlag(name: string, value: string | undefined, least = 1): number {
  const n = Number(value)
  if (value === undefined || value.trim() === '' || !Number.isInteger(n) || n < least) {
    throw new Error(`--${name} must be a whole number ≥ ${least}, got ${JSON.stringify(value ?? null)}`)
  }
  return n
}

/** `--kinds`: a comma list of bench:perf's query kinds; throws naming the first unknown one. */
export function kindsFlag(value: string): QueryKind[] {
  return value.split(',').map((k) => {
    if (!(SCALE_QUERY_KINDS as readonly string[]).includes(k)) throw new Error(`--kinds: unknown kind ${k} (known: ${SCALE_QUERY_KINDS.join(', ')})`)
    return k as QueryKind
  })
}

/**
 * Whether the JSON line was asked for: `--json`, or a `--json` npm kept for itself. npm reads a
 * flag that stands before `--` (`npm run bench:x --json -- …`, or with no `--` at all) as its own
 * `json` setting and does not pass it on, so the bench would print its text alone; npm leaves
 * that setting in the environment as `npm_config_json=true`.
 */
export function jsonWanted(flag: boolean | undefined): boolean {
  return flag === true || process.env.npm_config_json === 'true'
}

/** Where a bench's progress lines go: stdout, or stderr while `json` keeps stdout for the JSON line. */
export function progressLog(json: boolean): (line: string) => void {
  return json ? (line) => { console.error(line) } : (line) => { console.log(line) }
}

/** Throws unless `--store` names a folder `bench:perf --cache` built (it holds memory.db and floor.db). */
export function requirePerfCache(dir: string): void {
  if (dir === '' || !existsSync(join(dir, 'memory.db')) || !existsSync(join(dir, 'floor.db'))) {
    throw new Error('--store must name a folder built by `bench:perf --cache` (with memory.db and floor.db)')
  }
}

/**
 * Prints `usage` and exits 0 when the command line asks for help (`--help` or `-h`), before any
 * flag is parsed or any work starts, so every bench answers `--help` the same way.
 */
export function exitOnHelp(usage: string): void {
  if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
    console.log(usage)
    process.exit(0)
  }
}
