import type { Context } from '@deepseek-ai/cordis'
import { scopeChainOf, type ScopeKey } from '@deepseek-ai/dsh-scope'
import type { Config, SurfaceMode } from '../config.ts'
import type { StableMem } from '../service.ts'
import { contextLine, contextName } from './context-line.ts'
import { modelTools } from './model-tools.ts'
import { registerPreStep } from './pre-step.ts'
import { registerSceneCard } from './scene-card.ts'
import { untraced } from './untraced.ts'

/**
 * What the host row tells the kernel rows through the service it publishes: the mode, the
 * configuration the surface is built from, and the scopes kernel rows have claimed. An agent whose
 * scope chain contains a claimed scope is served by the kernel row, never by the host row too.
 */
export interface HostSurface {
  readonly mode: SurfaceMode
  readonly config: Config
  readonly storePath: string
  /** Claims `scope` (a preset's standing scope) for a kernel row; returns the release. */
  claim(scope: ScopeKey): () => void
  /** Whether the host row serves the agent (or assembly) with this scope. */
  hostServes(scope: ScopeKey | undefined): boolean
}

/** Where the host's surface hangs on its service object; a registry-wide symbol, so two copies of the package agree. */
const SURFACE = Symbol.for('dsh-stablemem.host-surface')

/** The host surface of a `StableMem` service (through any cordis proxy of it); the kernel passes its narrower view of the same object. */
export function hostSurfaceOf(service: object): HostSurface | undefined {
  return (service as unknown as Record<symbol, HostSurface | undefined>)[SURFACE]
}

/** Creates the host row's surface state and attaches it to its own service. */
export function attachHostSurface(service: StableMem, mode: SurfaceMode, config: Config, storePath: string): HostSurface {
  const claims = new Map<ScopeKey, number>()
  const surface: HostSurface = {
    mode, config, storePath,
    claim(scope) {
      claims.set(scope, (claims.get(scope) ?? 0) + 1)
      return () => {
        const left = (claims.get(scope) ?? 1) - 1
        if (left === 0) claims.delete(scope)
        else claims.set(scope, left)
      }
    },
    hostServes(scope) {
      if (mode === 'service') return false
      if (mode === 'global' || claims.size === 0) return true
      return !scopeChainOf(scope).some((key) => claims.has(key))
    },
  }
  ;(service as unknown as Record<symbol, HostSurface>)[SURFACE] = surface
  return surface
}

/**
 * Registers the model-facing surface through `ctx` (the root context for the host row, a preset's
 * scoped context for the kernel row): the tools, the runtime-context line and the per-turn recall,
 * each only for the agents `serves` admits. Both rows use the same names, so where both reach an
 * agent the scoped registration shadows the global one.
 */
export function registerSurface(ctx: Context, config: Config, storePath: string, pluginName: string, serves: (scope: ScopeKey | undefined) => boolean): void {
  for (const tool of modelTools(ctx, config)) ctx.tools.register(tool)
  const memory = untraced(ctx.stablemem) // the line is rendered on every step (untraced.ts)
  ctx.systemPrompt.context({
    name: contextName(storePath, config.toolName),
    order: 500,
    text: (assembly) => serves(assembly.scope) ? contextLine(memory, config.toolName) : '',
  })
  // The recall runs as a stage handler of the host's stage API, which sees every agent: `serves` scopes it.
  registerPreStep(ctx, config, pluginName, (agent) => serves(agent))
  registerSceneCard(ctx, config, (agent) => serves(agent))
}
