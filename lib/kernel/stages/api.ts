/**
 * `ctx.stablemem.stages`: the typed stage API other plugins use, bound to the caller's context
 * so that a handler goes away with the plugin that registered it.
 */
import { Service, type Context } from '@deepseek-ai/cordis'
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

/**
 * The object behind `ctx.stablemem.stages`. It carries a cordis tracker on `ctx`, as services do:
 * reached through a plugin's `ctx.stablemem`, its methods see that plugin's context as `this.ctx`,
 * so `on` ties the handler to the caller's fiber rather than to the memory service's.
 */
export class StagesApi implements Stages {
  readonly ctx: Context
  private readonly host: StageHost
  private readonly settle: () => Promise<void>

  constructor(ctx: Context, host: StageHost, settle: () => Promise<void>) {
    this.ctx = ctx
    this.host = host
    this.settle = settle
  }

  get [Service.tracker]() {
    return { property: 'ctx' }
  }

  on<S extends Stage>(stage: S, handler: StageHandler<S>, options?: StageOptions): () => Promise<void> {
    const remove = this.host.add(stage, handler, options)
    return this.ctx.effect(() => remove, `stablemem.stages.on(${stage})`)
  }

  stats(): StageStats {
    return this.host.stats()
  }

  idle(): Promise<void> {
    return this.settle()
  }
}
