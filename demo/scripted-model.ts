/**
 * The demo's stand-in model when no DeepSeek key is set: a few rules, no network. It saves what
 * the user asks it to remember (one `stablemem_commit` call per fact) and answers questions only
 * from the notes the plugin injected into its request, so the demo shows memory doing the work.
 */
import { CallId, LlmAdapter, type GenerateOptions, type Message, type StreamChunk } from '@deepseek-ai/dsh-llm'

/** The text of a message's text blocks. */
export function textOf(message: Message): string {
  return message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')
}

/** The notes quoted in the plugin's recall message(s) of a request (lines starting with "> "). */
export function recalledNotes(request: GenerateOptions, pluginName: string): string[] {
  return request.messages
    .filter((m) => m.source.kind === 'plugin' && (m.source as { plugin?: string }).plugin === pluginName)
    .flatMap((m) => textOf(m).split('\n').filter((line) => line.startsWith('> ')).map((line) => line.slice(2)))
}

/** Splits "Remember: a. Also remember: b" / "记住：a；b" into separate facts. */
export function factsToRemember(prompt: string): string[] {
  return prompt
    .split(/(?:^|[.。;；]\s*)(?:also\s+)?(?:remember|记住)\s*[:：]\s*/i)
    .map((fact) => fact.trim().replace(/[.。]$/, ''))
    .filter((fact) => fact !== '')
}

/** A rule-based model: remember → tool calls; after its own tool calls → confirmation; question → answer from recalled notes. */
export class ScriptedDemoModel extends LlmAdapter {
  private readonly pluginName: string
  private readonly toolName: string
  private calls = 0
  constructor(pluginName: string, toolName: string) {
    super()
    this.pluginName = pluginName
    this.toolName = toolName
  }

  override async * stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
    const humanAt = request.messages.findLastIndex((m) => m.source.kind === 'user')
    if (request.messages.slice(humanAt + 1).some((m) => m.role === 'assistant')) {
      yield * text('Saved. I will remember this in future sessions. / 已记住。')
      return
    }
    const question = request.messages[humanAt]
    const prompt = question ? textOf(question) : ''
    const facts = /remember|记住/i.test(prompt) ? factsToRemember(prompt) : []
    if (facts.length > 0) {
      const chunks: StreamChunk[] = facts.flatMap((fact, index) => [
        { type: 'block-start', index, blockType: 'tool-call' } as const,
        { type: 'block-end', index, block: { type: 'tool-call', id: CallId(`demo-${++this.calls}`), name: this.toolName, arguments: JSON.stringify({ text: fact, source: 'user' }) } } as const,
      ])
      yield * chunks
      yield { type: 'finish', reason: { kind: 'tool-calls' } }
      return
    }
    const notes = recalledNotes(request, this.pluginName)
    yield * text(notes.length > 0
      ? `From long-term memory / 根据长期记忆: ${notes[0]}`
      : 'I have nothing about that in memory. / 记忆中没有相关内容。')
  }
}

function * text(value: string): Iterable<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  yield { type: 'block-end', index: 0, block: { type: 'text', text: value } }
  yield { type: 'finish', reason: { kind: 'stop' } }
}
