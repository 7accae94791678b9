import type { Context } from '@deepseek-ai/cordis'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import type {} from '@deepseek-ai/dsh-session'
import { recallToolNameOf, type Config } from '../../config.ts'
import type { StableMem } from '../../service.ts'
import { extractPieces, type EventLike } from './extract.ts'

/** The session events that announce a region leaving the context window. */
const REGION_EVENTS = new Set(['compaction/summary', 'compaction/prune'])

/** The parts of a dsh session the listener reads. */
interface SessionLike {
  id: string
  events: readonly EventLike[]
}

/**
 * L1 → L2: when dsh's compaction replaces a region of the conversation (`compaction/summary`
 * for a summary, `compaction/prune` for pruned tool results), the shadowed events stay in the
 * session's append-only log. Capture reads them, keeps what `extractPieces` keeps, and stores it
 * as cold blocks with provenance. Two paths lead here, and storing is idempotent, so a region
 * seen by both (or again after a resume) writes nothing new:
 *
 * - a `session/event` listener, which stores the region the moment compaction announces it;
 * - a sweep after each step's `agent/pre-step` (where dsh's compaction runs), which reads the
 *   session's new events since the last sweep, for compositions where the `session/event`
 *   firehose does not reach the plugin (observed in the real `dsh --profile headless`, see
 *   docs/layers.md); it costs a look at the events appended since the last step.
 *
 * A failure is logged and counted, never thrown: capture must not break the turn that compacts.
 */
export function registerCompactionCapture(ctx: Context, service: () => StableMem, config: Config): void {
  if (!config.layers.capture) return
  const logger = ctx.logger('stablemem')
  const options = {
    humanKinds: new Set(config.querySources),
    ownTools: new Set([config.toolName, recallToolNameOf(config)]),
    toolResultChars: config.layers.toolResultChars,
    maxPieceChars: config.maxBlockChars,
  }
  const capture = (session: SessionLike, event: EventLike) => {
    const memory = service()
    if (memory.unavailableReason() !== undefined) return
    const failed = (error: unknown) => {
      memory.noteCaptureFailure()
      logger.warn('compaction capture failed, the conversation goes on: %s', error instanceof Error ? error.message : String(error))
    }
    try {
      const data = event.data as { shadowedSeqs?: unknown, compactionId?: unknown }
      const shadowed = shadowedEvents(session.events, data.shadowedSeqs)
      // Tool calls are not surface nodes, so they are not among the shadowed seqs; they name the tools of the results.
      const pieces = extractPieces([...shadowed, ...session.events.filter((e) => e.type === 'tool/call')], {
        ...options, sessionId: String(session.id), compactionId: typeof data.compactionId === 'string' ? data.compactionId : '',
      })
      memory.capture(pieces).then((result) => {
        if (result.refused.length > 0) logger.info('compaction capture: %d piece(s) refused by the store (first: %s)', result.refused.length, result.refused[0]!.reason)
      }, failed)
    } catch (error) {
      failed(error)
    }
  }
  /** How far each session's log has been swept. */
  const swept = new WeakMap<object, number>()
  ctx.on('session/event', (session, event) => {
    if (REGION_EVENTS.has(event.type)) capture(session as unknown as SessionLike, event)
  })
  ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
    const decision = await next()
    const session = payload.agent.session as unknown as SessionLike
    const events = session.events
    for (let i = swept.get(session) ?? 0; i < events.length; i++) {
      if (REGION_EVENTS.has(events[i]!.type)) capture(session, events[i]!)
    }
    swept.set(session, events.length)
    return decision
  }, { prepend: true })
}

/** The events with these seqs, found by position first (seq = index in a live session) and by search otherwise. */
function shadowedEvents(events: readonly EventLike[], seqs: unknown): EventLike[] {
  if (!Array.isArray(seqs)) return []
  const out: EventLike[] = []
  for (const seq of seqs) {
    if (typeof seq !== 'number') continue
    const at = events[seq]
    const event = at?.seq === seq ? at : events.find((e) => e.seq === seq)
    if (event) out.push(event)
  }
  return out
}
