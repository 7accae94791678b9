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
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role !== 'user') continue
    const source = message.source as { kind?: unknown, plugin?: unknown } | undefined
    if (!source || typeof source.kind !== 'string' || !allow.has(source.kind)) continue
    if (source.kind === 'plugin' && source.plugin === ownPlugin) continue
    const text = message.content.flatMap((block) => block.type === 'text' ? [block.text] : []).join('\n').trim()
    if (text !== '') return text
  }
  return ''
}
