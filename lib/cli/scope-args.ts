/**
 * The scope options the `stablemem` commands share: `--scope`, `--workspace <dir>`, `--preset <id>`
 * and `--all`, turned into scope keys with the same rules as the plugin (`lib/scope-policy.ts`).
 * The command runs outside any dsh session, so nothing is implied: without options a note is
 * global and recall sees global notes. A relative `--workspace` is taken from the shell's current
 * directory, as every command-line tool does; the plugin's `workspaceAliases` are not read here.
 */
import { resolve } from 'node:path'
import { resolveConfig } from '../config.ts'
import { ScopePolicy, type RecallView, type ScopeTarget } from '../scope-policy.ts'
import { checkScopeName, SCOPE_NAMES } from '../store/scope-key.ts'
import { UsageError } from './command.ts'

/** The option definitions for parseArgs. */
export const SCOPE_OPTIONS = {
  scope: { type: 'string' },
  workspace: { type: 'string' },
  preset: { type: 'string' },
} as const

/** The policy the CLI uses: the plugin's defaults, no aliases. */
export const cliPolicy = new ScopePolicy(resolveConfig({}).scopes)

type Values = Record<string, string | boolean | undefined>

/** An option value as a path from the shell's current directory. */
function dir(value: string | boolean | undefined, cwd: string): string | undefined {
  if (typeof value !== 'string') return undefined
  if (value.trim() === '') throw new UsageError('--workspace needs a directory')
  return resolve(cwd, value)
}

/** The key `commit` saves under: `--scope` (default global, or workspace when `--workspace` is given). */
export function commitScopeKey(values: Values, cwd: string = process.cwd()): string {
  const workspace = dir(values.workspace, cwd)
  const preset = typeof values.preset === 'string' ? values.preset : undefined
  let scope = values.scope
  if (scope !== undefined && (typeof scope !== 'string' || !SCOPE_NAMES.includes(scope as never))) {
    throw new UsageError(`--scope must be one of ${SCOPE_NAMES.join(', ')}, not "${String(scope)}"`)
  }
  scope ??= workspace !== undefined ? 'workspace' : preset !== undefined ? 'preset' : 'global'
  return cliPolicy.commitScope(checkScopeName(scope), { workspace: scope === 'workspace' ? workspace ?? cwd : undefined, preset })
}

/** What `recall` searches: `--all`, else global plus `--workspace` and `--preset` when given. */
export function recallView(values: Values, cwd: string = process.cwd()): RecallView {
  const workspace = dir(values.workspace, cwd)
  const preset = typeof values.preset === 'string' ? values.preset : undefined
  if (values.all === true) {
    if (workspace !== undefined || preset !== undefined) throw new UsageError('--all cannot be combined with --workspace or --preset')
    return 'all'
  }
  return { workspace, preset }
}

/** A scope named by words on the command line: `global`, `workspace <dir>` or `preset <id>`. */
export function targetFromWords(words: readonly string[], cwd: string = process.cwd()): ScopeTarget {
  const [name, value, extra] = words
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`)
  if (name === 'global' && value === undefined) return 'global'
  if (name === 'workspace' && value !== undefined) return { workspace: resolve(cwd, value) }
  if (name === 'preset' && value !== undefined) return { preset: value }
  if (name === undefined) throw new UsageError('missing scope: global, workspace <dir> or preset <id>')
  if (!SCOPE_NAMES.includes(name as never)) throw new UsageError(`unknown scope "${name}" (expected global, workspace <dir> or preset <id>)`)
  throw new UsageError(name === 'global' ? `global takes no value (got "${value}")` : `${name} needs a value: ${name} <${name === 'workspace' ? 'dir' : 'id'}>`)
}
