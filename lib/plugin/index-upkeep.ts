import type { Context } from '@deepseek-ai/cordis'
import type { StableMem } from '../service.ts'
import { nextMergeScope, UPKEEP_DUE_SEGMENTS, type MergeScope } from '../store/fts-upkeep.ts'

/** How often the host looks whether the index needs upkeep, in ms (one row read). */
const POLL_MS = 5_000

/** How long after the last turn of this host ended the store counts as idle, in ms. */
const QUIET_MS = 2_000

/** Why a run ran no (more) slices. */
export type UpkeepStop = 'merged' | 'not-due' | 'turn' | 'quiet' | 'busy' | 'unavailable' | 'disposed' | 'running'

/** What one run did: the slices it ran and why it stopped. */
export interface UpkeepRun {
  slices: number
  stop: UpkeepStop
}

/** The host's idle upkeep: `run` is what the timer calls (and tests, to run it at a chosen moment). */
export interface IndexUpkeep {
  /** Runs slices while the index is due and the host idle; resolves when it stops. */
  run(): Promise<UpkeepRun>
}

/** Timing of the host's upkeep; the defaults above unless a test sets them. */
export interface UpkeepTiming {
  pollMs?: number
  quietMs?: number
}

/**
 * Registers the host's idle index upkeep: an unref'd timer that, when no turn of this host is in
 * flight and the last one ended `QUIET_MS` ago, merges the full-text index slice by slice
 * (`BlockStore.upkeepSlice`, never waiting for another process's lock) once it has
 * `UPKEEP_DUE_SEGMENTS` segments: first within levels (the small segments recent commits left, at
 * a cost in proportion to them), then into one segment if what is left is worth it (`mergeDue`), or at once into one when the
 * segments are not just small ones beside a large one. Between slices it yields to
 * the event loop, so a turn that starts meanwhile stops it before the next slice; the merge state
 * is kept in the index, and the next idle moment continues it. Failures are logged, never thrown.
 */
export function registerIndexUpkeep(ctx: Context, service: () => StableMem, timing: UpkeepTiming = {}): IndexUpkeep {
  const logger = ctx.logger('stablemem')
  const quietMs = timing.quietMs ?? QUIET_MS
  const inFlight = new Set<string>()
  let lastTurnAt = 0
  let running = false
  let disposed = false
  /** A merge this host started and has not finished (continued below the threshold too), and its scope. */
  let merging: MergeScope | undefined
  // Its own listener, not stage handlers, on purpose (issue 32 asked): it needs only whether a
  // turn is in flight. on_input/after_output handlers would keep the stage binding's assembly and
  // pre-step listeners on for every agent (bind.ts listens to a hook only while a handler needs
  // it), would count in stats().stages, and would never hear of a turn whose agent was disposed
  // before after_output (`agent/disposed` below), which would block upkeep for good.
  ctx.on('session/event', (session, event) => {
    if (event.type === 'turn/start') inFlight.add(String(session.id))
    else if (event.type === 'turn/end') inFlight.delete(String(session.id))
    else return
    lastTurnAt = Date.now()
  })
  ctx.on('agent/disposed', ({ agent }) => { inFlight.delete(String(agent.id)) })
  ctx.effect(() => () => { disposed = true }, 'stablemem.index-upkeep')

  /** Why no slice may run now, or undefined when one may. */
  const blocked = (memory: StableMem): UpkeepStop | undefined => {
    if (disposed) return 'disposed'
    if (inFlight.size > 0) return 'turn'
    if (Date.now() - lastTurnAt < quietMs) return 'quiet'
    if (memory.unavailableReason() !== undefined) return 'unavailable'
    return undefined
  }

  const run = async (): Promise<UpkeepRun> => {
    if (running) return { slices: 0, stop: 'running' }
    if (disposed) return { slices: 0, stop: 'disposed' } // the service is gone with the fiber
    running = true
    let slices = 0
    try {
      const memory = service()
      const first = blocked(memory)
      if (first !== undefined) return { slices, stop: first }
      if (merging === undefined) {
        const segments = memory.ftsSegments()
        if (segments === undefined) return { slices, stop: 'unavailable' }
        const due = segments < UPKEEP_DUE_SEGMENTS ? undefined : memory.mergeDue(false)
        if (due === undefined) return { slices, stop: 'not-due' }
        merging = due
      }
      for (;;) {
        const outcome = memory.upkeepSlice(merging)
        if (outcome === 'busy') return { slices, stop: 'busy' }
        slices++
        if (outcome === 'done' || (memory.ftsSegments() ?? 0) <= 1) {
          // The small segments are merged with each other; the large ones too when that is worth it.
          merging = nextMergeScope(merging, (levelsDone) => memory.mergeDue(levelsDone))
          if (merging === undefined) {
            logger.debug('full-text index tidied: %d segment(s) left after %d slices', memory.ftsSegments() ?? 0, slices)
            return { slices, stop: 'merged' }
          }
        }
        await new Promise((resolve) => setImmediate(resolve)) // a turn may start here
        const stop = blocked(memory)
        if (stop !== undefined) return { slices, stop }
      }
    } catch (error) {
      logger.warn('index upkeep failed (tried again when idle): %s', error instanceof Error ? error.message : String(error))
      return { slices, stop: 'unavailable' }
    } finally {
      running = false
    }
  }

  const pollMs = timing.pollMs ?? POLL_MS
  // A plain unref'd interval, as the heartbeat's (lib/kernel/layers/heartbeat.ts says why not the cordis timer).
  ctx.effect(() => {
    const timer = setInterval(() => { void run() }, pollMs)
    timer.unref()
    return () => clearInterval(timer)
  }, 'stablemem.index-upkeep.interval')
  return { run }
}
