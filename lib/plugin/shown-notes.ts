import { MAX_AGENTS } from './conversation-memory.ts'
import { quotedIds } from './render.ts'

/**
 * The notes each agent's conversation already shows the model. A recall message is durable: dsh
 * appends it to the session's log and re-sends it with every later request, until compaction
 * summarises the region that holds it away (docs/shadow-context.md). So the pre-step shows a note
 * once per conversation, not once per turn, and shows it again only when the recall message that
 * carried it has left the model's context.
 *
 * What the model sees is the session's *surface* (`session.surface.nodes`, the seqs of the events
 * `deriveMessages` turns into the request); the raw log keeps shadowed events. The only thing that
 * takes a node off the surface is a positional replacement (`surfaceOp: replace`, which compaction
 * writes as its checkpoint), and each one raises `surface.replaceGeneration`. So:
 *
 * - a recall message handed to dsh (`remember`) is confirmed at the next turn, by its message id,
 *   among the events appended after the session's seq at that moment, up to the first `step/end`
 *   or `turn/end` (the loop appends a step's messages right after its `step/start`); a message the
 *   turn never appended (a later handler rejected the step, the turn was aborted) shows nothing;
 * - when the generation changed since the last look, every remembered message is looked for on
 *   the surface again, and the notes of those compaction took away are shown again when asked;
 * - a new session is a new agent id (dsh's agent and session share one identity), so it starts
 *   with nothing shown; the first time an agent is seen (a resumed or forked session's history,
 *   or one forgotten under the bound), the recall messages of this plugin already on its surface
 *   are read back (`quotedIds`), once.
 *
 * In memory only (nothing written: the history itself is what is read back), for at most
 * `MAX_AGENTS` agents, the least recently active forgotten first (read back from the surface when
 * seen again), and at most `MAX_SHOWN_NOTES` note ids an agent, the oldest messages' notes
 * forgotten first (such a note is quoted again: a repeat, never a loss).
 */
export class ShownNotes {
  readonly #byAgent = new Map<string, Conversation>()
  readonly #plugin: string

  /** `plugin`: the name this plugin's recall messages carry in their source. */
  constructor(plugin: string) {
    this.#plugin = plugin
  }

  /** The ids of notes an earlier recall message of `agent`'s session carried that the model still sees. */
  inContext(agent: string, session: SessionView | undefined): Set<string> {
    if (session === undefined) return new Set()
    let conversation = this.#byAgent.get(agent)
    if (conversation === undefined) this.#keep(agent, conversation = onSurface(session, this.#plugin))
    confirm(conversation, session)
    const generation = session.surface.replaceGeneration
    if (generation !== conversation.generation) {
      const nodes = new Set(session.surface.nodes)
      conversation.carriers = conversation.carriers.filter((c) => c.seq !== undefined && nodes.has(c.seq))
      conversation.generation = generation
    }
    return new Set(conversation.carriers.flatMap((c) => c.notes))
  }

  /**
   * Remembers that the recall message `message` (its id), handed to dsh now for `agent`'s session,
   * carries `notes`. It counts once the next turn finds it in the log (`inContext`).
   */
  remember(agent: string, session: SessionView | undefined, message: string, notes: readonly string[]): void {
    if (session === undefined || notes.length === 0) return
    const conversation = this.#byAgent.get(agent) ?? onSurface(session, this.#plugin)
    conversation.carriers.push({ message, from: session.seq, notes: [...notes] })
    this.#keep(agent, conversation)
  }

  /** Keeps `conversation` as `agent`'s, most recently active, within the bounds. */
  #keep(agent: string, conversation: Conversation): void {
    let kept = conversation.carriers.reduce((n, c) => n + c.notes.length, 0)
    while (kept > MAX_SHOWN_NOTES && conversation.carriers.length > 1) kept -= conversation.carriers.shift()!.notes.length
    this.#byAgent.delete(agent) // re-inserted last: a Map iterates in insertion order
    if (this.#byAgent.size >= MAX_AGENTS) this.#byAgent.delete(this.#byAgent.keys().next().value!)
    this.#byAgent.set(agent, conversation)
  }
}

/** The recall messages of `plugin` on the session's surface now (a history this process did not write), with the notes each quotes. */
function onSurface(session: SessionView, plugin: string): Conversation {
  const carriers: Carrier[] = []
  const events = session.surface.nodes.length === 0 ? [] : session.events
  for (const seq of session.surface.nodes) {
    const event = events[seq]
    if (event?.type !== 'user/message') continue
    const message = event.data as { id?: unknown, source?: { kind?: unknown, plugin?: unknown, form?: unknown }, content?: ReadonlyArray<{ type?: unknown, text?: unknown }> }
    const source = message.source
    if (source?.kind !== 'plugin' || source.plugin !== plugin || source.form !== 'recall' || typeof message.id !== 'string') continue
    const text = (message.content ?? []).map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('')
    const notes = quotedIds(text)
    if (notes.length > 0) carriers.push({ message: message.id, from: seq, seq, notes })
  }
  return { generation: session.surface.replaceGeneration, carriers }
}

/** Most note ids remembered for one agent (a recall message carries at most `topK`, at most 100). */
export const MAX_SHOWN_NOTES = 256

/** The parts of a dsh session (`@deepseek-ai/dsh-session`'s `Session`) the memory reads. */
export interface SessionView {
  /** The next event's seq (the log's length). */
  readonly seq: number
  readonly events: readonly { readonly type: string, readonly data?: unknown }[]
  readonly surface: { readonly nodes: readonly number[], readonly replaceGeneration: number }
}

/** One recall message of a conversation and the notes it carried. */
interface Carrier {
  /** The message's id (dsh keeps a message's id in its `user/message` event). */
  message: string
  /** The session's seq when the message was handed to dsh: it is appended after it. */
  from: number
  /** Its seq in the log, once found there. */
  seq?: number
  notes: string[]
}

/** What one agent's conversation has shown. */
interface Conversation {
  /** `surface.replaceGeneration` when every carrier was last found on the surface. */
  generation: number
  carriers: Carrier[]
}

/** Finds the seq of each carrier not yet found, or drops it: the message never reached the log. */
function confirm(conversation: Conversation, session: SessionView): void {
  if (conversation.carriers.every((c) => c.seq !== undefined)) return
  const events = session.events
  conversation.carriers = conversation.carriers.filter((carrier) => {
    if (carrier.seq !== undefined) return true
    for (let seq = carrier.from; seq < events.length; seq++) {
      const event = events[seq]!
      if (event.type === 'user/message' && (event.data as { id?: unknown } | undefined)?.id === carrier.message) {
        carrier.seq = seq
        return true
      }
      if (event.type === 'step/end' || event.type === 'turn/end') return false
    }
    return false
  })
}
