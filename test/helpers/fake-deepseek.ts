/**
 * A DeepSeek-compatible chat-completions server on 127.0.0.1 for tests: it records every request
 * body and answers with OpenAI-style SSE (text or tool calls, then finish_reason, usage, [DONE]),
 * which is what dsh's own DeepSeek adapter parses. Replies come from a function of the request.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One chat message as it arrives on the wire. */
export interface WireMessage {
  role: string
  content?: string | null
  tool_calls?: Array<{ id: string, function: { name: string, arguments: string } }>
  tool_call_id?: string
}

/** One recorded request. */
export interface WireRequest {
  headers: Record<string, string | string[] | undefined>
  body: { model: string, messages: WireMessage[], tools?: Array<{ function: { name: string } }>, [key: string]: unknown }
}

/** What the model answers. */
export type WireReply = { text: string } | { toolCalls: Array<{ name: string, arguments: unknown }> }

/** A running fake server. */
export interface FakeDeepSeek {
  baseURL: string
  requests: WireRequest[]
  close(): Promise<void>
}

/** Starts the server on an ephemeral loopback port. */
export async function startFakeDeepSeek(reply: (request: WireRequest, index: number) => WireReply): Promise<FakeDeepSeek> {
  const requests: WireRequest[] = []
  let calls = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end()
        return
      }
      const request: WireRequest = { headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as WireRequest['body'] }
      requests.push(request)
      let answer: WireReply
      try {
        answer = reply(request, requests.length - 1)
      } catch (error) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(error) } }))
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`)
      const base = { id: `chatcmpl-${++calls}`, object: 'chat.completion.chunk', created: 1, model: request.body.model }
      if ('text' in answer) {
        send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: answer.text }, finish_reason: null }] })
        send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
      } else {
        answer.toolCalls.forEach((call, index) => send({
          ...base,
          choices: [{ index: 0, delta: { tool_calls: [{ index, id: `call_${calls}_${index}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } }] }, finish_reason: null }],
        }))
        send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })
      }
      send({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** The text of every message of a request, joined, for assertions. */
export function wireText(request: WireRequest): string {
  return request.body.messages.map((m) => m.content ?? '').join('\n')
}

/** The notes quoted in the plugin's recall message of a request ("> " lines after the [stablemem] header). */
export function wireRecalledNotes(request: WireRequest): string[] {
  return request.body.messages
    .filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('[stablemem] Notes recalled'))
    .flatMap((m) => m.content!.split('\n').filter((line) => line.startsWith('> ')).map((line) => line.slice(2)))
}
