import { EARLIER_MESSAGES } from '../recall/conversation.ts'

/**
 * The earlier human messages of each agent's conversation, which recall reads with the message
 * being answered (`lib/recall/conversation.ts`). A step's batch holds only the messages taken
 * from the inbox for it (usually the one human message and injected context), not the turns
 * before it, so the pre-step remembers what it read: the last `EARLIER_MESSAGES` human messages
 * of each agent, in memory only (nothing is written; a restarted process starts each
 * conversation afresh), for at most `MAX_AGENTS` agents, the least recently active forgotten
 * first. Assistant replies are not kept: the batch does not carry them.
 */
export class ConversationMemory {
  readonly #byAgent = new Map<string, string[]>()

  /** The remembered human messages of `agent` before this turn, oldest first. */
  earlier(agent: string): string[] {
    return [...(this.#byAgent.get(agent) ?? [])]
  }

  /** Remembers this turn's human messages of `agent` (oldest first), keeping its last `EARLIER_MESSAGES`. */
  remember(agent: string, messages: readonly string[]): void {
    const kept = [...(this.#byAgent.get(agent) ?? []), ...messages].slice(-EARLIER_MESSAGES)
    this.#byAgent.delete(agent) // re-inserted last: a Map iterates in insertion order
    if (this.#byAgent.size >= MAX_AGENTS) this.#byAgent.delete(this.#byAgent.keys().next().value!)
    this.#byAgent.set(agent, kept)
  }
}

/** Most agents whose conversations are remembered at once. */
export const MAX_AGENTS = 256
