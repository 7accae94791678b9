/**
 * Mutation checks against the real source: copy `lib/` to an ignored scratch folder inside the
 * project (so bare imports still resolve through its node_modules), apply one textual edit that
 * removes a guard, and import the copy. The edit must match exactly once, so a mutation can never
 * silently stop applying when the guarded code changes.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
let serial = 0

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
  const dir = join(root, '.cache', 'mutants', `${process.pid}-${++serial}`)
  mkdirSync(dir, { recursive: true })
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
