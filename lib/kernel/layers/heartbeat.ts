import type { Context } from '@deepseek-ai/cordis'
import type { Config } from '../../config.ts'
import type { KernelMemory } from '../host-memory.ts'

/** What `registerHeartbeat` hands back: the tick itself (for tests and shutdown) and whether one is running. */
export interface Heartbeat {
  /** Runs one tick now unless one is running or the fiber is gone; resolves when it is done. */
  tick(): Promise<void>
  readonly running: boolean
}

/**
 * The host plane's background timer: every `layers.heartbeatMinutes` it runs one cooling tick
 * (bounded by `layers.coolBatch`), on a disposable, unref'd interval, so it never keeps the process
 * alive and is gone with the fiber: a tick that fires after dispose does nothing. Single-flight:
 * a tick still running when the next is due is not joined by a second one. Never on the per-turn
 * path; failures are logged, never thrown.
 */
export function registerHeartbeat(ctx: Context, service: () => KernelMemory, config: Config): Heartbeat | undefined {
  const minutes = config.layers.heartbeatMinutes
  if (minutes === 0) return undefined
  const logger = ctx.logger('stablemem')
  let running = false
  let disposed = false
  ctx.effect(() => () => { disposed = true }, 'stablemem.heartbeat')
  const beat: Heartbeat = {
    get running() { return running },
    async tick() {
      if (running || disposed) return
      const memory = service()
      if (memory.unavailableReason() !== undefined) return
      memory.scrubLater() // a large forget's scrub that an error or an exit left unfinished
      running = true
      try {
        const report = await memory.cool()
        if (report.cooled > 0 || report.kept > 0) logger.info('cooling: %d block(s) distilled into facts, %d kept for a later try', report.cooled, report.kept)
        // Scene refs decay (each at most once per half-life) and refs of replaced notes go (docs/scenes.md).
        const decayed = memory.scenes.decay()
        if (decayed.removed > 0) logger.info('scenes: %d ref(s) decayed below the floor or stale, removed', decayed.removed)
      } catch (error) {
        logger.warn('cooling tick failed (retried at the next one): %s', error instanceof Error ? error.message : String(error))
      } finally {
        running = false
      }
    },
  }
  const ms = minutes * 60_000
  const fire = () => { void beat.tick() }
  // A plain unref'd interval, not the cordis timer: the host row does not inject `timer`, and in a
  // real dsh composition (where the timer service exists) reaching `ctx.interval` from it failed the
  // row's setup, so the whole plugin never mounted (found by the headless e2e).
  ctx.effect(() => {
    const timer = setInterval(fire, ms)
    timer.unref()
    return () => clearInterval(timer)
  }, 'stablemem.heartbeat.interval')
  return beat
}
