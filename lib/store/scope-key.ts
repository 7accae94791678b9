import { realpathSync, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { StableMemError } from '../errors.ts'

/**
 * Scope keys: the strings the membership table stores. `global` (facts about the person),
 * `workspace:<absolute dir>` (facts about one project) and `preset:<id>` (facts for one agent
 * preset). Every key is built and checked here, so the table never holds a spelling that another
 * part of the code would not produce.
 */

/** The three kinds of scope a note can belong to. */
export type ScopeName = 'global' | 'workspace' | 'preset'

/** Every scope name, in the order help texts list them. */
export const SCOPE_NAMES: readonly ScopeName[] = ['global', 'workspace', 'preset']

/** The key of the global scope. */
export const GLOBAL_SCOPE = 'global'

/** A dsh agent preset id (`dsh-agent-presets` accepts exactly these). */
const PRESET_ID = /^[a-z0-9][a-z0-9-]*$/

/** Longest workspace path accepted (Linux PATH_MAX). */
const MAX_PATH_CHARS = 4096

/** The key of one workspace; `dir` must already be normalised (`normaliseWorkspace`). */
export function workspaceScope(dir: string): string {
  return `workspace:${dir}`
}

/** The key of one agent preset's scope; refuses an id dsh would not accept. */
export function presetScope(id: string, field = 'preset'): string {
  if (typeof id !== 'string' || !PRESET_ID.test(id) || id.length > 64) {
    throw new StableMemError('invalid_input', `${field}: ${JSON.stringify(id)} is not an agent preset id (lower-case letters, digits and -)`)
  }
  return `preset:${id}`
}

/** True for a scope name this package knows. */
export function isScopeName(value: unknown): value is ScopeName {
  return typeof value === 'string' && (SCOPE_NAMES as readonly string[]).includes(value)
}

/** Refuses anything that is not a scope name, naming the field and the names that exist. */
export function checkScopeName(value: unknown, field = 'scope'): ScopeName {
  if (!isScopeName(value)) throw new StableMemError('invalid_input', `${field}: unknown scope ${JSON.stringify(value)} (expected ${SCOPE_NAMES.join(', ')})`)
  return value
}

/** Refuses a string that is not a well-formed scope key (what the store accepts from callers and imports). */
export function checkScopeKey(value: unknown, field = 'scope'): string {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `${field} must be a string`)
  if (value === GLOBAL_SCOPE) return value
  if (value.startsWith('preset:')) return presetScope(value.slice('preset:'.length), field)
  if (value.startsWith('workspace:')) {
    const dir = value.slice('workspace:'.length)
    if (dir.length > MAX_PATH_CHARS || dir.includes('\0') || !isAbsolute(dir) || resolve(dir) !== dir) {
      throw new StableMemError('invalid_input', `${field}: ${JSON.stringify(value)} does not name a normalised absolute directory`)
    }
    return value
  }
  throw new StableMemError('invalid_input', `${field}: ${JSON.stringify(value)} is not a scope (global, workspace:<dir> or preset:<id>)`)
}

/**
 * A workspace directory in the one spelling its notes are stored under: absolute (a relative path
 * is refused, since a service or a config file has no meaningful current directory), `.` and `..`
 * resolved, trailing separators dropped, and symbolic links resolved where the path exists, so a
 * project reached through a link is the same workspace. With `mustExist`, a path that does not
 * exist or is not a directory is refused (saving into a mistyped workspace would hide the note).
 */
export function normaliseWorkspace(dir: unknown, field = 'workspace', options: { mustExist?: boolean } = {}): string {
  if (typeof dir !== 'string' || dir.trim() === '') throw new StableMemError('invalid_input', `${field} must be a non-empty path`)
  if (dir.includes('\0') || dir.length > MAX_PATH_CHARS) throw new StableMemError('invalid_input', `${field} is not a usable path`)
  if (!isAbsolute(dir)) throw new StableMemError('invalid_input', `${field}: ${JSON.stringify(dir)} is relative; give an absolute directory`)
  const lexical = resolve(dir)
  let real: string
  try {
    real = realpathSync.native(lexical)
  } catch {
    if (options.mustExist) throw new StableMemError('not_found', `${field}: ${JSON.stringify(dir)} does not exist`)
    return lexical
  }
  if (options.mustExist && !statSync(real).isDirectory()) throw new StableMemError('invalid_input', `${field}: ${JSON.stringify(dir)} is not a directory`)
  return real
}

/**
 * Workspace aliases, normalised and checked: several paths (a second checkout, a mount, an old
 * location) map to one workspace. Chains are followed to their end (a → b → c makes a and b
 * aliases of c); a cycle is refused, naming the field and the paths in it. A path that normalises
 * to its own target (a symbolic link to it) is dropped as a no-op.
 */
export function resolveAliases(aliases: Readonly<Record<string, string>>, field = 'scopes.workspaceAliases'): Map<string, string> {
  const direct = new Map<string, string>()
  for (const [from, to] of Object.entries(aliases)) {
    const key = normaliseWorkspace(from, `${field} key ${JSON.stringify(from)}`)
    const target = normaliseWorkspace(to, `${field}[${JSON.stringify(from)}]`)
    if (key !== target) direct.set(key, target)
  }
  const resolved = new Map<string, string>()
  for (const start of direct.keys()) {
    const seen = [start]
    let at = direct.get(start)!
    while (direct.has(at)) {
      if (seen.includes(at)) throw new StableMemError('invalid_input', `${field}: alias cycle ${[...seen.slice(seen.indexOf(at)), at].join(' → ')}`)
      seen.push(at)
      at = direct.get(at)!
    }
    resolved.set(start, at)
  }
  return resolved
}

/** Renders a scope key for people: `global`, `workspace /home/me/proj`, `preset stablemem`. */
export function describeScope(key: string): string {
  if (key.startsWith('workspace:')) return `workspace ${key.slice('workspace:'.length)}`
  if (key.startsWith('preset:')) return `preset ${key.slice('preset:'.length)}`
  return key
}
