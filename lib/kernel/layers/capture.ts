import type { Context } from '@deepseek-ai/cordis'
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
 * for a summary, `compaction/prune` for pruned tool results), the session still holds the
 * shadowed events at that moment (the replacement is appended right after, synchronously). This
 * listener reads them then, keeps what `extractPieces` keeps, and stores it as cold blocks with
 * provenance before it returns. It is a root-context listener, so it sees every session of the
 * process, host agents and preset agents alike. A failure is logged and counted, never thrown:
 * capture must not break the turn that compacts.
 */
export function registerCompactionCapture(ctx: Context, service: () => StableMem, config: Config): void {
  if (!config.layers.capture) return
  const logger = ctx.logger('stablemem')
  const humanKinds = new Set(config.querySources)
  const ownTools = new Set([config.toolName, recallToolNameOf(config)])
  ctx.on('session/event', (session, event) => {
    if (!REGION_EVENTS.has(event.type)) return
    const memory = service()
    if (memory.unavailableReason() !== undefined) return
    try {
      const data = event.data as { shadowedSeqs?: unknown, compactionId?: unknown }
      const live = session as unknown as SessionLike
      const shadowed = shadowedEvents(live.events, data.shadowedSeqs)
      // Tool calls are not surface nodes, so they are not among the shadowed seqs; they name the tools of the results.
      const pieces = extractPieces([...shadowed, ...live.events.filter((e) => e.type === 'tool/call')], {
        sessionId: String(live.id),
        compactionId: typeof data.compactionId === 'string' ? data.compactionId : '',
        humanKinds,
        ownTools,
        toolResultChars: config.layers.toolResultChars,
        maxPieceChars: config.maxBlockChars,
      })
      memory.capture(pieces).then((result) => {
        if (result.refused.length > 0) logger.info('compaction capture: %d piece(s) refused by the store (first: %s)', result.refused.length, result.refused[0]!.reason)
      }, (error: unknown) => failed(error))
    } catch (error) {
      failed(error)
    }
    function failed(error: unknown): void {
      memory.noteCaptureFailure()
      logger.warn('compaction capture failed, the conversation goes on: %s', error instanceof Error ? error.message : String(error))
    }
  })
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
