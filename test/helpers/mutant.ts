/**
 * Mutation checks against the real source: copy `lib/` to an ignored scratch folder inside the
 * project (so bare imports still resolve through its node_modules), apply one textual edit that
 * removes a guard, and import the copy. The edit must match exactly once, so a mutation can never
 * silently stop applying when the guarded code changes.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
let serial = 0
/** This process's test file as a folder-name part (`store-forget` for test/store/forget.test.ts). */
const testName = relative(join(root, 'test'), process.argv[1] ?? 'node').replace(/\.test\.ts$/, '').replace(/[^A-Za-z0-9]+/g, '-')

/** Whether process `pid` still runs. */
function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

/**
 * Claims the scratch folder of this process's next mutant. The name is the test file and the
 * mutant's number in it, the same on every run: Node's compile cache (`npm test` turns it on)
 * keys modules by path, so it keeps one entry per mutant module instead of a new set of about 240
 * every run. A folder that another live process holds falls back to a name with this process's id.
 */
function claim(): string {
  const n = ++serial
  const dir = join(root, '.cache', 'mutants', `${testName}-${n}`)
  const own = join(root, '.cache', 'mutants', `${testName}-${n}-${process.pid}`)
  mkdirSync(dirname(dir), { recursive: true })
  try {
    mkdirSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    let owner = 0
    try { owner = Number(readFileSync(join(dir, 'owner'), 'utf8')) } catch { /* not written yet */ }
    if (owner === 0 || alive(owner)) return claimOwn(own)
    rmSync(dir, { recursive: true, force: true }) // left by a process that died before removing it
    try { mkdirSync(dir) } catch { return claimOwn(own) }
  }
  writeFileSync(join(dir, 'owner'), String(process.pid))
  return dir
}

/** A scratch folder no other process can hold (its name has this process's id). */
function claimOwn(dir: string): string {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  return dir
}

/** One textual edit of a file under `lib/`. */
export interface Edit {
  file: string
  from: string
  to: string
}

/** A mutated copy of `lib/`; `load(entry)` imports a module from it. */
export interface Mutant {
  dir: string
  load<T>(entry: string): Promise<T>
  remove(): void
}

/** Copies `lib/` with the edits applied; throws if an edit does not match exactly once. */
export function mutant(...edits: Edit[]): Mutant {
  const dir = claim()
  cpSync(join(root, 'lib'), join(dir, 'lib'), { recursive: true })
  for (const edit of edits) {
    const path = join(dir, 'lib', edit.file)
    const source = readFileSync(path, 'utf8')
    const count = source.split(edit.from).length - 1
    if (count !== 1) throw new Error(`mutation does not apply: ${JSON.stringify(edit.from)} occurs ${count} times in lib/${edit.file}`)
    writeFileSync(path, source.replace(edit.from, edit.to))
  }
  return {
    dir,
    load: async <T>(entry: string) => await import(pathToFileURL(join(dir, 'lib', entry)).href) as T,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
