/**
 * The web path with the real `dsh web` (brief §1 P4, and more): the package added to the `web`
 * profile with `dsh plugin add` (its bundle mounts the host row), the `stablemem` preset written
 * by `stablemem preset install`, then dsh web's own RPC over HTTP, as its browser client uses it:
 * `agentPreset.list` shows the preset; a session created on it saves a fact through the kernel
 * row's tool; a second session on it gets the fact back once, with one tool and one context line;
 * a session on dsh's `standard` preset gets it once too, from the host row.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { wireRecalledNotes, wireText, type WireRequest } from '../test/helpers/fake-deepseek.ts'
import { isConversation, memoryWorkspace, run } from './memory-model.ts'

const FACT = 'billing 服务端口 8499，部署在 10.3.7.9'

/** Waits until `test` holds, polling; fails the test after `ms`. */
async function until<T>(what: string, test: () => T | undefined, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = test()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

t.test('dsh web: the stablemem preset serves its sessions through the kernel row, other presets through the host row', async (t) => {
  const { bin, tarball, home, project, server, env } = await memoryWorkspace('stablemem-web', (line) => t.comment(line))
  t.teardown(() => server.close())

  const add = await run(join(bin, 'dsh'), ['plugin', '--profile', 'web', 'add', tarball], env, project)
  t.equal(add.code, 0, add.stderr)
  const cli = join(home, 'profiles', 'web', 'node_modules', 'dsh-stablemem', 'dist', 'cli', 'main.js')
  const preset = await run(join(bin, 'node'), [cli, 'preset', 'install', '--home', home], env, project)
  t.equal(preset.code, 0, preset.stderr)

  const web = spawn(join(bin, 'dsh'), ['web', '--host', '127.0.0.1', '--port', '0', '--no-open'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { web.kill('SIGTERM') })
  let output = ''
  web.stdout.on('data', (chunk: Buffer) => { output += chunk.toString('utf8') })
  web.stderr.on('data', (chunk: Buffer) => { output += chunk.toString('utf8') })
  const url = await until('dsh web to listen', () => /dsh web: (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1])
  let serial = 0
  const rpc = async (method: string, payload: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${url}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'client-request', rpcId: `e2e-${++serial}`, method, payload }),
    })
    const body = await response.json() as { result?: { ok: boolean, value?: Record<string, unknown>, error?: unknown } }
    if (body.result?.ok !== true) throw new Error(`${method} failed: ${JSON.stringify(body)}`)
    return body.result.value!
  }
  const presets = (await rpc('agentPreset.list', {})).presets as Array<{ id: string, name: string }>
  t.ok(presets.some((p) => p.id === 'stablemem' && p.name === '标准模式 · 长期记忆'), 'dsh web lists the preset')

  /** Starts a session on `preset`, sends `text`, and returns the first conversation request it caused. */
  const ask = async (agentPreset: string, text: string, done: (r: WireRequest) => boolean): Promise<WireRequest> => {
    const before = server.requests.length
    const created = await rpc('session.create', { cwd: project, agentPreset })
    t.equal(created.agentPreset, agentPreset, `session on ${agentPreset}`)
    await rpc('session.prompt', { sessionId: created.sessionId, mode: 'queue', content: [{ type: 'text', text }] })
    return await until(`the model request of "${text}"`, () => server.requests.slice(before).find((r) => isConversation(r) && done(r)))
  }

  const saved = await ask('stablemem', `记住：${FACT}`, (r) => r.body.messages.some((m) => m.role === 'tool'))
  t.match(saved.body.messages.find((m) => m.role === 'tool')?.content ?? '', /Saved to long-term memory as blk_/, 'the kernel row\'s tool saved the fact')

  const question = 'billing 服务的端口是多少？'
  for (const agentPreset of ['stablemem', 'standard']) {
    const request = await ask(agentPreset, question, (r) => r.body.messages.some((m) => m.role === 'user' && m.content === question))
    t.same(wireRecalledNotes(request), [FACT], `${agentPreset}: the fact is recalled`)
    t.equal(request.body.messages.filter((m) => m.role === 'user' && (m.content ?? '').includes('> billing 服务端口 8499')).length, 1, `${agentPreset}: one recall message`)
    t.equal(request.body.tools?.filter((tool) => tool.function.name === 'stablemem_commit').length, 1, `${agentPreset}: one commit tool`)
    t.equal(wireText(request).split('Long-term memory (dsh-stablemem):').length - 1, 1, `${agentPreset}: one context line`)
  }
})
