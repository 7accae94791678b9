/**
 * The agent-plane row, `dsh-stablemem/kernel`: a row of the `stablemem` agent preset. It publishes
 * no service (the preset mount rejects rows that do) and injects `ctx.stablemem` from the host row
 * (`dsh-stablemem`), which owns the store and every background job. For the agents that joined
 * its preset it registers the model-facing surface — the tools, the runtime-context line, the
 * per-turn recall — and claims the preset's scope, so the host row leaves those agents alone and
 * none of them gets two recalls or two tools.
 */
import type { Context } from '@deepseek-ai/cordis'
import Schema from '@deepseek-ai/schemastery'
import { scopeChainOf, scopeOf } from '@deepseek-ai/dsh-scope'
import type {} from '@deepseek-ai/dsh-system-prompt'
import type {} from '@deepseek-ai/dsh-tools'
import { hostSurfaceOf, registerSurface } from '../plugin/surface.ts'
import { kernelMemoryOf } from './host-memory.ts'

/** The row's name in logs. Its recall messages carry the host's name, `dsh-stablemem`, like the host row's. */
export const name = 'dsh-stablemem/kernel'

/** The host row's service, plus what a surface needs. No `agents`: the preset mount supplies the agents. */
export const inject = ['stablemem', 'tools', 'systemPrompt']

/** The row takes no options: the surface follows the host row's configuration (one place to configure memory). */
export interface Config {}

/** Accepts an empty (or absent) `config:`; anything else fails the row at load, naming the field. */
export const Config: Schema<Config> = Schema.object({})

/** The attribution of injected recall messages, the same for both rows. */
const RECALL_SOURCE = 'dsh-stablemem'

/**
 * Registers the kernel surface in the preset's scope. Refuses to mount outside a preset (there it
 * would serve every agent beside the host row), and stands down when the host row's `surface` is
 * `global` (the host then serves every agent itself).
 */
export function apply(ctx: Context, _config: Config): void {
  const scope = scopeOf(ctx)
  if (scope === undefined) {
    throw new Error('dsh-stablemem/kernel is a row of an agent preset (presets/stablemem); in a profile composition mount the host row dsh-stablemem instead')
  }
  const memory = kernelMemoryOf(ctx)
  const host = memory === undefined ? undefined : hostSurfaceOf(memory)
  if (host === undefined) {
    throw new Error('dsh-stablemem/kernel needs ctx.stablemem from the dsh-stablemem host row of the same package version')
  }
  if (host.mode === 'global') {
    ctx.logger('stablemem').info('the host row serves every agent (surface: global); the kernel row adds nothing')
    return
  }
  ctx.effect(() => host.claim(scope), 'stablemem.kernel-claim')
  // Tools and the context line are registered in the preset's scope; the recall is a handler of
  // the host's stage API, which sees every agent, so it is scoped to the agents on this preset.
  registerSurface(ctx, host.config, host.storePath, RECALL_SOURCE, (agentScope) => scopeChainOf(agentScope).includes(scope))
}
