/**
 * The scripted model of the end-to-end tests, behind the DeepSeek-compatible server: asked to
 * remember something ("记住：<fact>"), it saves the fact with `stablemem_commit`; shown recalled
 * notes, it answers from the first one. Also runs the real dsh CLI as a child process.
 */
import { execFile } from 'node:child_process'
import { startFakeDeepSeek, wireRecalledNotes, type FakeDeepSeek, type WireRequest } from '../test/helpers/fake-deepseek.ts'

/** Conversation requests carry the tools; dsh's session-title request has none. */
export function isConversation(request: WireRequest): boolean {
  return (request.body.tools?.length ?? 0) > 0
}

/** Starts the server with the remembering model. */
export function startMemoryModel(): Promise<FakeDeepSeek> {
  return startFakeDeepSeek((request) => {
    if (!isConversation(request)) return { text: '长期记忆' }
    if (request.body.messages.some((m) => m.role === 'tool')) return { text: '已记住。' }
    const notes = wireRecalledNotes(request)
    if (notes.length > 0) return { text: `根据长期记忆：${notes[0]}` }
    const ask = request.body.messages.find((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('记住：'))
    if (ask !== undefined) return { toolCalls: [{ name: 'stablemem_commit', arguments: { text: String(ask.content).slice('记住：'.length) } }] }
    return { text: '我没有这方面的记录。' }
  })
}

/** The outcome of one child process. */
export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs `file args…` with `env` in `cwd`, never throwing (the exit code is in the result). */
export function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 180_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, timeout: timeoutMs, maxBuffer: 32 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}
