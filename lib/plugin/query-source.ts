import type { Message } from '@deepseek-ai/dsh-llm'

/**
 * Picks the recall query out of a step's batch. A real batch is never just the question: dsh
 * appends injected context after it (runtime-context snapshot, skill catalog, other plugins'
 * notes), all with role `user`. So the query is the text of the LAST message whose
 * `source.kind` is on the allowlist (default `['user']`, which also covers web `user-rpc`
 * prompts); every other kind, including ones a future dsh adds, is ignored (fail closed), and this
 * plugin's own injections are never read even if an allowlist admits plugin messages.
 */
export function queryFromBatch(messages: readonly Message[], allow: ReadonlySet<string>, ownPlugin: string): string {
  return humanMessages(messages, allow, ownPlugin).at(-1) ?? ''
}

/**
 * The texts of every message of the batch that `queryFromBatch` could read, in order (empty ones
 * left out): a batch holds several when the human sent more while the agent was busy. The last
 * is the query; the ones before it are earlier messages of the conversation (`conversation-memory.ts`).
 */
export function humanMessages(messages: readonly Message[], allow: ReadonlySet<string>, ownPlugin: string): string[] {
  const texts: string[] = []
  for (const message of messages) {
    if (message.role !== 'user') continue
    const source = message.source as { kind?: unknown, plugin?: unknown } | undefined
    if (!source || typeof source.kind !== 'string' || !allow.has(source.kind)) continue
    if (source.kind === 'plugin' && source.plugin === ownPlugin) continue
    const text = message.content.flatMap((block) => block.type === 'text' ? [block.text] : []).join('\n').trim()
    if (text !== '') texts.push(text)
  }
  return texts
}
