/**
 * What the stage binding checks and builds of dsh's messages and prompt (`bind.ts`): a handler's
 * replacement input must be user messages as dsh builds them, the claimed input is replaced where
 * it stood, a section or context must render, and a canned reply streams as a model's would.
 */
import type { StreamChunk, UserMessage } from '@deepseek-ai/dsh-llm'
import { renderPrompt, type PromptAssembly } from '@deepseek-ai/dsh-system-prompt'
import type { StageText } from './types.ts'

/**
 * True for a list of user messages as dsh builds them (`createUserMessage`): anything else would
 * make the session refuse the append and end the turn in an error, so it is refused here instead.
 */
export function userMessages(value: unknown): value is UserMessage[] {
  return Array.isArray(value) && value.every((m) => m !== null && typeof m === 'object' && m.role === 'user' && typeof m.id === 'string' &&
    Array.isArray(m.content) && m.source !== null && typeof m.source === 'object' && typeof m.source.kind === 'string')
}

/** The batch with the claimed input replaced by `input`, where the claimed input stood. */
export function replaceClaimed(messages: readonly UserMessage[], claimed: readonly UserMessage[], input: readonly UserMessage[]): UserMessage[] {
  const ids = new Set(claimed.map((m) => m.id))
  const out: UserMessage[] = []
  let placed = false
  for (const m of messages) {
    if (!ids.has(m.id)) out.push(m)
    else if (!placed) {
      out.push(...input)
      placed = true
    }
  }
  return placed ? out : [...input, ...out]
}

/** Why a section or context cannot be added ('' text is allowed and renders as nothing). */
export function badText(t: StageText, assembly: PromptAssembly): string | undefined {
  if (t === null || typeof t !== 'object' || typeof t.name !== 'string' || t.name === '' || typeof t.text !== 'string') return 'needs a non-empty name and a text'
  try {
    renderPrompt({ sections: [{ name: t.name, text: t.text }], contexts: [], tools: [], variables: assembly.variables })
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** The chunks of a canned text reply, as a model would stream it. */
export async function * replyChunks(text: string): AsyncIterable<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  yield { type: 'block-end', index: 0, block: { type: 'text', text } }
  yield { type: 'finish', reason: { kind: 'stop' } }
}
