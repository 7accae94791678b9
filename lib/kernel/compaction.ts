/**
 * `dsh-stablemem/compaction`: dsh's basic compaction engine plus one line in each checkpoint
 * saying how many of the messages it replaces were kept in long-term memory and which tool
 * searches them. Without the line the model reading a checkpoint cannot know that the exact
 * values the summary left out are still one tool call away.
 *
 * Everything but the summary text is `BasicCompactionEngine`'s own: pressure, retention, the
 * summarisation call, the shrink check, the durable replacement. The engine overrides only
 * `summarize()`, the hook compaction-basic offers subclasses. The count is what capture
 * (`layers/capture.ts`) will keep of the region, computed with the same extraction rules
 * before the `compaction/summary` event that triggers capture is appended. The line is left out
 * when there is no memory to point at (no `ctx.stablemem`, store unavailable, capture off,
 * nothing kept) and when it would bring the checkpoint within `SHRINK_MARGIN` tokens of the
 * region it replaces, so compaction never fails because of it.
 */
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage, type ContentBlock, type Message } from '@deepseek-ai/dsh-llm'
import type {} from '@deepseek-ai/dsh-token-meter'
import { recallToolNameOf } from '../config.ts'
import { hostSurfaceOf } from '../plugin/surface.ts'
import { kernelMemoryOf } from './host-memory.ts'
import { extractOptionsOf } from './layers/capture.ts'
import { extractPieces, type EventLike } from './layers/extract.ts'

/** The summarisation hook's input and result, as compaction-basic declares them (its types module is not exported). */
type SummarizeInput = Parameters<BasicCompactionEngine['summarize']>[0]
type SummarizeResult = Awaited<ReturnType<BasicCompactionEngine['summarize']>>

/**
 * Tokens the annotated summary must stay below the region it replaces: more than the framing
 * compaction-basic adds around a summary (its checkpoint preamble and tags, 94 tokens by
 * dsh's meter), so a line that passes here never makes the framed checkpoint fail the shrink check.
 */
export const SHRINK_MARGIN = 200

/** The line added to a checkpoint: how many messages moved to memory and how to search them. */
export function memoryLine(messages: number, recallTool: string): string {
  return `[stablemem] ${messages} message${messages === 1 ? '' : 's'} of this span ${messages === 1 ? 'was' : 'were'} kept word for word in long-term memory; the exact values, paths and names in them can be searched with the ${recallTool} tool.`
}

/** dsh's basic compaction with the memory line in each summary; configured exactly like `@deepseek-ai/dsh-compaction-basic`. */
export class StableMemCompaction extends BasicCompactionEngine {
  protected override async summarize(input: SummarizeInput, agent: Agent, signal?: AbortSignal): Promise<SummarizeResult> {
    const result = await super.summarize(input, agent, signal)
    const line = this.lineFor(input.messages, agent)
    if (line === undefined) return result
    const summary: ContentBlock[] = [...result.summary, { type: 'text', text: line }]
    if (this.tokensOf(summary) + SHRINK_MARGIN >= input.messages.reduce((sum, m) => sum + this.ctx.tokenMeter.estimateMessage(m), 0)) return result
    return { ...result, summary }
  }

  /** The line for a region, or undefined when there is no memory to point at or nothing of the region is kept. */
  private lineFor(messages: readonly Message[], agent: Agent): string | undefined {
    const memory = kernelMemoryOf(this.ctx)
    const host = memory === undefined ? undefined : hostSurfaceOf(memory)
    if (memory === undefined || host === undefined || !host.config.layers.capture || memory.unavailableReason() !== undefined) return undefined
    // Each message of the region is the `data` (or `data.message`) of one session event; tool calls name the tools of the results.
    const ids = new Set(messages.map((m) => m.id))
    const events = agent.session.events as unknown as readonly EventLike[]
    const region = events.filter((e) => e.type === 'tool/call' || ids.has(messageOf(e)?.id as Message['id']))
    const pieces = extractPieces(region, { ...extractOptionsOf(host.config), sessionId: String(agent.session.id), compactionId: '' })
    const kept = new Set(pieces.map((p) => p.origin.seq)).size
    return kept === 0 ? undefined : memoryLine(kept, recallToolNameOf(host.config))
  }

  private tokensOf(summary: ContentBlock[]): number {
    return this.ctx.tokenMeter.estimateMessage(createUserMessage({ content: summary, source: { kind: 'plugin', plugin: 'dsh-stablemem' } }))
  }
}

/** The message an event carries on the surface (as dsh's `deriveEventMessage` reads it). */
function messageOf(event: EventLike): { id?: unknown } | undefined {
  const data = event.data as { id?: unknown, message?: { id?: unknown } } | null
  if (data === null || typeof data !== 'object') return undefined
  return event.type === 'user/message' ? data : event.type === 'assistant/message' || event.type === 'tool/result' ? data.message : undefined
}

export default StableMemCompaction
