import type { Context } from '@deepseek-ai/cordis'
import type {} from '@deepseek-ai/dsh-session'
import { recallToolNameOf, type Config } from '../../config.ts'
import type { ScopeContext } from '../../scope-policy.ts'
import type { KernelMemory } from '../host-memory.ts'
import { extractPieces, type EventLike, type ExtractOptions } from './extract.ts'

/** The session events that announce a region leaving the context window. */
const REGION_EVENTS = new Set(['compaction/summary', 'compaction/prune'])

/** The parts of a dsh session the listener reads. */
interface SessionLike {
  id: string
  events: readonly EventLike[]
  /** The session header: its working directory and the agent preset it was composed for, when recorded. */
  header?: { cwd?: unknown, agentPreset?: unknown }
}

/** Where a session runs, from its header (as `lib/plugin/session-place.ts` reads it for an agent): its turns are captured in that scope. */
function placeOfSession(session: SessionLike): ScopeContext {
  const text = (value: unknown) => typeof value === 'string' && value !== '' ? value : undefined
  return { workspace: text(session.header?.cwd), preset: text(session.header?.agentPreset) }
}

/** What capture keeps of a region under this configuration (all of `ExtractOptions` but the region's own ids). */
export function extractOptionsOf(config: Config): Omit<ExtractOptions, 'sessionId' | 'compactionId'> {
  return {
    humanKinds: new Set(config.querySources),
    ownTools: new Set([config.toolName, recallToolNameOf(config)]),
    toolResultChars: config.layers.toolResultChars,
    maxPieceChars: config.maxBlockChars,
  }
}

/**
 * L1 → L2: when dsh's compaction replaces a region of the conversation (`compaction/summary`
 * for a summary, `compaction/prune` for pruned tool results), the shadowed events stay in the
 * session's append-only log. Capture reads them, keeps what `extractPieces` keeps, and stores it
 * as cold blocks with provenance. A `session/event` listener stores the region the moment
 * compaction announces it (the events fire synchronously, before the replacement is appended).
 * Storing is idempotent, so a region seen again (re-emitted after a resume) writes nothing new.
 *
 * A failure is logged and counted, never thrown: capture must not break the turn that compacts.
 */
export function registerCompactionCapture(ctx: Context, service: () => KernelMemory, config: Config): void {
  if (!config.layers.capture) return
  const logger = ctx.logger('stablemem')
  const options = extractOptionsOf(config)
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
      memory.capture(pieces, placeOfSession(session)).then((result) => {
        if (result.refused.length > 0) logger.info('compaction capture: %d piece(s) refused by the store (first: %s)', result.refused.length, result.refused[0]!.reason)
      }, failed)
    } catch (error) {
      failed(error)
    }
  }
  ctx.on('session/event', (session, event) => {
    if (REGION_EVENTS.has(event.type)) capture(session as unknown as SessionLike, event)
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
