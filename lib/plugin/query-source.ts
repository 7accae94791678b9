import type { Message } from '@deepseek-ai/dsh-llm'

/**
 * The human messages of a step's batch, in order (empty ones left out); the last is the recall
 * query, the ones before it (a batch holds several when the human sent more while the agent was
 * busy) are earlier messages of the conversation (`conversation-memory.ts`). A real batch is never
 * just the question: dsh appends injected context after it (runtime-context snapshot, skill
 * catalog, other plugins' notes), all with role `user`. So a message counts only when its
 * `source.kind` is on the allowlist (default `['user']`, which also covers web `user-rpc`
 * prompts); every other kind, including ones a future dsh adds, is ignored (fail closed), and this
 * plugin's own injections are never read even if an allowlist admits plugin messages.
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
