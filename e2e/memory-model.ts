/**
 * The scripted model of the end-to-end tests, behind the DeepSeek-compatible server: asked to
 * remember something ("记住：<fact>"), it saves the fact with `stablemem_commit`; shown recalled
 * notes, it answers from the first one. Also runs the real dsh CLI as a child process, in a fresh
 * dsh home set up around that model (`memoryWorkspace`).
 */
import { execFile } from 'node:child_process'
import { mkdirSync, realpathSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { startFakeDeepSeek, wireRecalledNotes, type FakeDeepSeek, type WireRequest } from '../test/helpers/fake-deepseek.ts'
import { tempDir } from '../test/helpers/temp.ts'
import { PACKAGE_ROOT, ensureDsh, packThisPackage } from './dsh-cli.ts'

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

/** A fresh folder for one test against the real dsh, with the memory model serving it. */
export interface MemoryWorkspace {
  /** The dsh install's `bin` folder (dsh, node, pnpm). */
  bin: string
  /** This package, packed by `npm pack` into the folder. */
  tarball: string
  /** DSH_HOME, inside the folder. */
  home: string
  /** The folder dsh runs in. */
  project: string
  /** The memory model's server; the caller closes it. */
  server: FakeDeepSeek
  /** The environment dsh runs with: the folder as HOME and TMPDIR, the server as DeepSeek. */
  env: NodeJS.ProcessEnv
}

/** The dsh install, a fresh folder (`label`) with the packed package, a dsh home and a project, and the memory model. */
export async function memoryWorkspace(label: string, log: (line: string) => void): Promise<MemoryWorkspace> {
  const bin = ensureDsh(log)
  const work = realpathSync(tempDir(label))
  const tarball = packThisPackage(work)
  const home = join(work, 'dsh-home')
  const project = join(work, 'project')
  mkdirSync(project, { recursive: true })
  const server = await startMemoryModel()
  const env: NodeJS.ProcessEnv = {
    // dsh runs pnpm from PATH: this project's pinned pnpm first, then the dsh install's.
    PATH: [join(PACKAGE_ROOT, 'node_modules', '.bin'), bin, process.env.PATH ?? ''].join(delimiter),
    HOME: work,
    TMPDIR: work,
    DSH_HOME: home,
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-e2e-fake',
    npm_config_update_notifier: 'false',
  }
  return { bin, tarball, home, project, server, env }
}
