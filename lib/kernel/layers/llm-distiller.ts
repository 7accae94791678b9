import type { Context } from '@deepseek-ai/cordis'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import type { Distiller, Fact } from './distill.ts'

/** The tool the model must call: its JSON schema is what constrains the answer (dsh has no response-format field). */
const TOOL = 'record_facts'
const SCHEMA = {
  type: 'object',
  properties: {
    fields: {
      type: 'array',
      items: {
        type: 'object',
        properties: { subject: { type: 'string' }, dimension: { type: 'string' }, value: { type: 'string' } },
        required: ['subject', 'dimension', 'value'],
        additionalProperties: false,
      },
    },
  },
  required: ['fields'],
  additionalProperties: false,
}

/** The instruction, with examples of different record shapes (spec §7.6: one example suppressed the others). */
const PROMPT = [
  `Extract the facts of the record below by calling ${TOOL} once. A fact is a subject, a short dimension (at most 12 characters) and a value copied exactly from the record.`,
  'Examples:',
  '"billing 服务端口 8499，部署在 10.3.7.9" → {subject: "billing", dimension: "服务端口", value: "8499"}, {subject: "billing", dimension: "部署", value: "10.3.7.9"}',
  '"The staging database host is 172.16.40.8" → {subject: "staging database", dimension: "host", value: "172.16.40.8"}',
  '"前端用 React 18.3.1，后端用 Go 1.22" → {subject: "前端", dimension: "React", value: "18.3.1"}, {subject: "后端", dimension: "Go", value: "1.22"}',
  'If the record states no such fact, call the tool with an empty list.',
  'Record:',
].join('\n')

/** Longest record sent to the model, in characters. */
const MAX_RECORD_CHARS = 4_000

/**
 * The optional LLM distiller: one `ctx.llm.stream` call per block through dsh's own provider
 * routes, answering through a tool whose JSON schema fixes the shape. It throws on anything but
 * a well-formed answer (no tool call, bad JSON, wrong shape, a stream error); the caller then
 * falls back to the deterministic distiller, and every fact it returns still passes the gates.
 */
export function llmDistiller(ctx: Context, provider: string, model: string): Distiller {
  return async (text) => {
    if (provider === '' || model === '') throw new Error('llm distiller: distillerProvider and distillerModel are not set')
    let args: string | undefined
    const stream = ctx.llm.stream({
      provider, model, maxTokens: 256,
      messages: [createUserMessage({ content: [{ type: 'text', text: `${PROMPT}\n${text.slice(0, MAX_RECORD_CHARS)}` }], source: { kind: 'plugin', plugin: 'dsh-stablemem' } })],
      tools: [{ name: TOOL, description: 'Record the facts of the record.', parameters: SCHEMA }],
    })
    for await (const chunk of stream) {
      if (chunk.type === 'block-end' && chunk.block.type === 'tool-call' && chunk.block.name === TOOL) args = chunk.block.arguments
    }
    if (args === undefined) throw new Error('llm distiller: the model did not call the tool')
    return parseFacts(JSON.parse(args) as unknown)
  }
}

/** The facts of a tool answer, or an error when its shape is not the schema's. */
export function parseFacts(answer: unknown): Fact[] {
  const fields = (answer as { fields?: unknown } | null)?.fields
  if (!Array.isArray(fields)) throw new Error('llm distiller: answer has no fields list')
  return fields.map((field: unknown) => {
    const { subject, dimension, value } = (field ?? {}) as Record<string, unknown>
    if (typeof subject !== 'string' || typeof dimension !== 'string' || typeof value !== 'string') throw new Error('llm distiller: a field is not {subject, dimension, value}')
    return { subject, dimension, value }
  })
}
