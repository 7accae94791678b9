/**
 * `ctx.stablemem.stages`: the typed stage API other plugins use, bound to the caller's context
 * so that a handler goes away with the plugin that registered it.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { StageHost } from './host.ts'
import type { Stage, StageHandler, StageOptions, StageStats } from './types.ts'

/** The stage API (see docs/stages.md for each stage's hook and powers). */
export interface Stages {
  /**
   * Registers `handler` on `stage`. Returns its disposer; it is also removed when the calling
   * plugin's fiber is disposed. Throws at once on an unknown stage or a bad option.
   */
  on<S extends Stage>(stage: S, handler: StageHandler<S>, options?: StageOptions): () => Promise<void>
  /** Registered handlers, calls, errors and loop exits. */
  stats(): StageStats
  /** Resolves when every after_output handler started so far has finished (they run after `turn/end`). */
  idle(): Promise<void>
}

/** The stage API as seen from `ctx` (the caller's context when reached through `ctx.stablemem`). */
export function stagesFor(ctx: Context, host: StageHost, idle: () => Promise<void>): Stages {
  return {
    on(stage, handler, options) {
      const remove = host.add(stage, handler, options)
      return ctx.effect(() => remove, `stablemem.stages.on(${stage})`)
    },
    stats: () => host.stats(),
    idle,
  }
}
