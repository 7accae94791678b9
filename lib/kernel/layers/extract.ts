import type { CapturePiece } from '../../store/layers.ts'
import { chunkText } from './chunk.ts'

/** The few fields of a dsh session event that capture reads (structural, so tests need no session). */
export interface EventLike {
  type: string
  seq: number
  time: number
  data: unknown
}

/** What capture keeps of a shadowed region, and how much. */
export interface ExtractOptions {
  sessionId: string
  compactionId: string
  /** Message `source.kind` values that are a person's own words (config `querySources`): only those user messages are kept. */
  humanKinds: ReadonlySet<string>
  /** Tools whose results are never kept: our own (their output is memory already). */
  ownTools: ReadonlySet<string>
  /** Longest tool result kept, in characters; the rest is cut before any other work. */
  toolResultChars: number
  /** Longest piece (config `maxBlockChars`). */
  maxPieceChars: number
}

/** Share of suspicious characters (NUL, other C0 controls, U+FFFD) above which a result is treated as binary and skipped. */
const BINARY_SHARE = 0.1

/**
 * The pieces worth keeping from the events compaction is about to take out of the context window:
 * a person's messages (by source kind, fail closed, so runtime-context snapshots, skill catalogs,
 * earlier checkpoints, our own recall and every injected kind a future dsh adds are never
 * kept), the assistant's visible text (never its reasoning or tool-call arguments), and tool
 * results, cut to `toolResultChars`, unless they come from our own tools or look binary. Each
 * text is chunked to `maxPieceChars` and carries its origin. Pure: it reads the events it is
 * given and nothing else.
 */
export function extractPieces(events: readonly EventLike[], options: ExtractOptions): CapturePiece[] {
  const toolNames = callNames(events)
  const out: CapturePiece[] = []
  for (const event of events) {
    const taken = textOf(event, options, toolNames)
    if (taken === undefined) continue
    for (const text of chunkText(taken.text, options.maxPieceChars)) {
      out.push({
        text,
        origin: { sessionId: options.sessionId, seq: event.seq, eventType: event.type, role: taken.role, eventTime: event.time, compactionId: options.compactionId },
      })
    }
  }
  return out
}

/**
 * Tool names by call id (a tool result carries only the id), from the `tool/call` events and the
 * assistant messages' tool calls among these events.
 */
function callNames(events: readonly EventLike[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const event of events) {
    if (event.type === 'tool/call') {
      const data = event.data as { callId?: unknown, name?: unknown } | null
      if (typeof data?.callId === 'string' && typeof data.name === 'string') out.set(data.callId, data.name)
      continue
    }
    if (event.type !== 'assistant/message') continue
    const content = (event.data as { message?: { content?: unknown } } | null)?.message?.content
    if (!Array.isArray(content)) continue
    for (const block of content as Array<{ type?: unknown, id?: unknown, name?: unknown }>) {
      if (block?.type === 'tool-call' && typeof block.id === 'string' && typeof block.name === 'string') out.set(block.id, block.name)
    }
  }
  return out
}

interface Taken {
  text: string
  role: 'user' | 'assistant' | 'tool'
}

function textOf(event: EventLike, options: ExtractOptions, toolNames: ReadonlyMap<string, string>): Taken | undefined {
  const data = event.data as Record<string, unknown> | null
  if (data === null || typeof data !== 'object') return undefined
  if (event.type === 'user/message') {
    const source = (data as { source?: { kind?: unknown } }).source
    if (!source || typeof source.kind !== 'string' || !options.humanKinds.has(source.kind) || source.kind === 'plugin') return undefined
    return nonEmpty(joinText(data.content), 'user')
  }
  if (event.type === 'assistant/message') {
    const message = data.message as { content?: unknown } | undefined
    return nonEmpty(joinText(message?.content), 'assistant')
  }
  if (event.type === 'tool/result') {
    const message = data.message as { content?: unknown } | undefined
    const block = Array.isArray(message?.content) ? message.content[0] as { type?: unknown, toolCallId?: unknown, content?: unknown } : undefined
    if (!block || block.type !== 'tool-result') return undefined
    const name = typeof block.toolCallId === 'string' ? toolNames.get(block.toolCallId) : undefined
    if (name !== undefined && options.ownTools.has(name)) return undefined
    const text = joinText(block.content, options.toolResultChars)
    if (looksBinary(text)) return undefined
    return nonEmpty(name === undefined ? text : `${name}: ${text}`, 'tool')
  }
  return undefined
}

/** The text blocks of a content list joined by newlines (reasoning, images and tool calls left out), at most `max` characters. */
function joinText(content: unknown, max = Number.POSITIVE_INFINITY): string {
  if (!Array.isArray(content)) return ''
  let out = ''
  for (const block of content as Array<{ type?: unknown, text?: unknown }>) {
    if (block?.type !== 'text' || typeof block.text !== 'string') continue
    out += (out === '' ? '' : '\n') + (block.text.length > max ? block.text.slice(0, max) : block.text)
    if (out.length >= max) return out.slice(0, max)
  }
  return out
}

function nonEmpty(text: string, role: Taken['role']): Taken | undefined {
  const trimmed = text.trim()
  return trimmed === '' ? undefined : { text: trimmed, role }
}

/** Whether a text looks like bytes rather than words: many NULs, control characters or replacement characters. */
export function looksBinary(text: string): boolean {
  if (text.length === 0) return false
  let bad = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0xfffd || (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d)) bad++
  }
  return bad / text.length > BINARY_SHARE
}
