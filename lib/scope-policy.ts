import type { ScopesConfig } from './config.ts'
import { StableMemError } from './errors.ts'
import { checkScopeName, GLOBAL_SCOPE, normaliseWorkspace, presetScope, resolveAliases, workspaceScope, type ScopeName } from './store/scope-key.ts'

/** Where a commit or a recall happens: the session's workspace directory and agent preset, when it has them. */
export interface ScopeContext {
  workspace?: string | null
  preset?: string | null
}

/**
 * Which notes a recall may see: `all` (every note), `global` (global notes only), or a session's
 * place (its workspace's notes, the preset's, and global ones unless `global: false`). Never
 * another workspace's notes unless `all` says so.
 */
export type RecallView = 'all' | 'global' | (ScopeContext & { global?: boolean })

/** One scope to move notes into or out of. */
export type ScopeTarget = 'global' | { workspace: string } | { preset: string }

/**
 * Turns the configuration and a session's place into scope keys: the key a commit is saved under
 * (explicit scope, else `defaultScope`, falling back to global where the session has no workspace
 * or preset) and the union a recall searches. Built once per plugin instance; an invalid alias
 * table (relative path, cycle) throws here, at load, naming the field.
 */
export class ScopePolicy {
  private readonly config: ScopesConfig
  private readonly aliases: Map<string, string>

  constructor(config: ScopesConfig) {
    this.config = config
    this.aliases = resolveAliases(config.workspaceAliases ?? {})
  }

  /** A workspace directory's key: normalised, then mapped through the aliases. */
  workspaceKey(dir: unknown, field = 'workspace', mustExist = false): string {
    const normal = normaliseWorkspace(dir, field, { mustExist })
    return workspaceScope(this.aliases.get(normal) ?? normal)
  }

  /** The key a commit is saved under. `scope` names the kind; the place supplies the workspace or preset. */
  commitScope(scope: unknown, where: ScopeContext = {}): string {
    const name = scope === undefined ? this.defaultScope(where) : checkScopeName(scope)
    if (name === 'global') return GLOBAL_SCOPE
    if (name === 'workspace') {
      if (!present(where.workspace)) throw new StableMemError('invalid_input', 'scope workspace: there is no workspace (the session has no working directory; pass workspace or use scope global)')
      return this.workspaceKey(where.workspace, 'workspace', true)
    }
    if (!present(where.preset)) throw new StableMemError('invalid_input', 'scope preset: the session is not on an agent preset (pass preset or use another scope)')
    return presetScope(where.preset)
  }

  /** The scope keys a recall searches; undefined for `all`. */
  recallUnion(view: RecallView | undefined): string[] | undefined {
    if (view === 'all') return undefined
    if (view === undefined || view === 'global') return [GLOBAL_SCOPE]
    if (view === null || typeof view !== 'object') throw new StableMemError('invalid_input', `scope must be 'all', 'global' or { workspace?, preset? }, not ${JSON.stringify(view)}`)
    const union: string[] = []
    if (present(view.workspace)) union.push(this.workspaceKey(view.workspace))
    if (present(view.preset)) union.push(presetScope(view.preset))
    if (union.length === 0 || (view.global ?? this.config.recallGlobal)) union.unshift(GLOBAL_SCOPE)
    return union
  }

  /** The key of a scope notes are moved into (`mustExist`: the workspace directory must exist) or out of. */
  targetKey(target: unknown, mustExist: boolean): string {
    if (target === 'global') return GLOBAL_SCOPE
    if (target !== null && typeof target === 'object') {
      const t = target as { workspace?: unknown, preset?: unknown }
      if (t.workspace !== undefined && t.preset === undefined) return this.workspaceKey(t.workspace, 'workspace', mustExist)
      if (t.preset !== undefined && t.workspace === undefined) return presetScope(t.preset as string)
    }
    throw new StableMemError('invalid_input', `scope must be 'global', { workspace: <dir> } or { preset: <id> }, not ${JSON.stringify(target)}`)
  }

  /**
   * The key turns captured at compaction (and the facts cooling distils from them) are saved
   * under: where a note saved without a scope would go (`defaultScope`), so a conversation held in
   * one workspace is recalled there and never in another. A workspace that no longer exists on
   * disk keeps its key (its path as written, normalised) instead of falling back to global.
   */
  captureScope(where: ScopeContext): string {
    try {
      return this.commitScope(undefined, where)
    } catch (error) {
      if (!present(where.workspace)) throw error
      return this.workspaceKey(where.workspace)
    }
  }

  private defaultScope(where: ScopeContext): ScopeName {
    const wanted = this.config.defaultScope
    if (wanted === 'preset' && present(where.preset)) return 'preset'
    if (wanted !== 'global' && present(where.workspace)) return 'workspace'
    return 'global'
  }
}

function present(value: string | null | undefined): value is string {
  return typeof value === 'string' && value !== ''
}
