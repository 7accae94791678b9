import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { tempDir } from './helpers/temp.ts'
import { startFakeDeepSeek, wireRecalledNotes, wireText, type WireRequest } from './helpers/fake-deepseek.ts'

const DEMO = fileURLToPath(new URL('../demo/demo.ts', import.meta.url))

function runDemo(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DEMO, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: tempDir('stablemem-demo-test'), ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}

t.test('without a key the demo runs the real loop with a scripted model and shows every step', async (t) => {
  const r = await runDemo([], {})
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stderr, '')
  t.match(r.stdout, /Model: a small SCRIPTED model \(no DEEPSEEK_API_KEY set\)/)
  t.match(r.stdout, /Store: \S+stablemem-demo-\w+\/stablemem\/memory\.db \(a fresh file/)
  t.match(r.stdout, /model → tool call stablemem_commit \{"text":"billing 服务端口 8499，部署在 10\.3\.7\.9"/)
  t.match(r.stdout, /model → tool call stablemem_commit \{"text":"the staging database is PostgreSQL 16\.4 on db-stage\.internal:5433"/)
  t.match(r.stdout, /stored (blk_[0-9a-f]{24}): "billing 服务端口 8499/)
  const id = /stored (blk_[0-9a-f]{24}): "billing/.exec(r.stdout)![1]
  const session2 = r.stdout.slice(r.stdout.indexOf('━━ Session 2'), r.stdout.indexOf('━━ Session 3'))
  t.match(session2, /The exact messages the model received in session 2/)
  t.match(session2, /\[1\] user · user\n +billing 服务的端口是多少？/)
  t.match(session2, /Long-term memory \(dsh-stablemem\): 2 notes stored/, 'context line present')
  t.match(session2, new RegExp(`user · plugin / dsh-stablemem / recall   ◀ the recalled note.*\\n.*\\[stablemem\\] Notes recalled[^]*\\[1\\] ${id}\\n +> billing 服务端口 8499`))
  t.match(session2, /model: From long-term memory \/ 根据长期记忆: billing 服务端口 8499/)
  t.match(r.stdout, /model: From long-term memory \/ 根据长期记忆: the staging database is PostgreSQL 16\.4/)
  t.match(r.stdout, /Done\. 2 notes in .*; recall messages injected: 2\./)
})

t.test('--real without a key is a usage error', async (t) => {
  const r = await runDemo(['--real'], {})
  t.equal(r.code, 2)
  t.equal(r.stderr, 'demo: --real needs DEEPSEEK_API_KEY in the environment\n')
})

t.test('with a key the demo goes through dsh\'s DeepSeek adapter (here to a loopback server, never the internet)', async (t) => {
  const server = await startFakeDeepSeek((request: WireRequest) => {
    const messages = request.body.messages
    if (messages.some((m) => m.role === 'tool')) return { text: '已记住。' }
    const notes = wireRecalledNotes(request)
    if (notes.length > 0) return { text: `记忆里写着：${notes[0]}` }
    return {
      toolCalls: [
        { name: 'stablemem_commit', arguments: { text: 'billing 服务端口 8499，部署在 10.3.7.9' } },
        { name: 'stablemem_commit', arguments: { text: 'the staging database is PostgreSQL 16.4 on db-stage.internal:5433' } },
      ],
    }
  })
  t.teardown(() => server.close())
  const r = await runDemo(['--model', 'deepseek-v4-flash'], { DEEPSEEK_API_KEY: 'sk-demo-test', DEEPSEEK_BASE_URL: server.baseURL })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, new RegExp(`Model: the real DeepSeek model deepseek-v4-flash through @deepseek-ai/dsh-llm-deepseek at ${server.baseURL}`))
  t.equal(server.requests.length, 4, 'session 1: call + confirmation; sessions 2 and 3: one call each')
  for (const request of server.requests) {
    t.equal(request.headers.authorization, 'Bearer sk-demo-test')
    t.equal(request.body.model, 'deepseek-v4-flash')
    t.ok(request.body.tools?.some((tool) => tool.function.name === 'stablemem_commit'), 'our tool is on the wire')
  }
  t.same(wireRecalledNotes(server.requests[2]!), ['billing 服务端口 8499，部署在 10.3.7.9'], 'session 2 request carries the recalled note')
  t.match(wireText(server.requests[2]!), /Long-term memory \(dsh-stablemem\): 2 notes stored/)
  t.match(r.stdout, /model: 记忆里写着：billing 服务端口 8499/)
  t.match(r.stdout, /model: 记忆里写着：the staging database is PostgreSQL 16\.4/)
})

t.test('an unreachable model fails the demo visibly, in one line', async (t) => {
  const server = await startFakeDeepSeek(() => ({ text: 'unused' }))
  const deadURL = server.baseURL
  await server.close()
  const r = await runDemo([], { DEEPSEEK_API_KEY: 'sk-demo-test', DEEPSEEK_BASE_URL: deadURL })
  t.equal(r.code, 1)
  t.equal(r.stderr, `demo: Session 1 failed: DeepSeek API request to ${deadURL} failed\n`)
  t.notMatch(r.stdout, /Session 2/, 'it stops instead of pretending')
})
