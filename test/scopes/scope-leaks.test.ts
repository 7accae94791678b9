/**
 * A workspace note never reaches another workspace (issue 31): not through the model's recall
 * tool with `scope: all`, not through the memory browser's search or its note pages under a
 * scope, and not through a cwd spelled with other letter cases or reached through a symbolic link
 * to another project. Real agent loop (sessions with real headers carrying their cwd), real HTTP,
 * real store files; each guard with a mutation check. The team layer's side is in
 * test/team/team-scopes.test.ts (it needs PostgreSQL).
 */
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { GenerateOptions } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { boot, injected, realBatch, reply, tempStorePath, textOf, toolCall, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { call, start, withMutant } from '../helpers/serve-http.ts'
import { tempDir } from '../helpers/temp.ts'

const root = realpathSync(tempDir('stablemem-scope-leaks'))
const A = join(root, 'project-a')
const B = join(root, 'project-b')
const CASED = join(root, 'Project-A')
for (const dir of [A, B, CASED]) mkdirSync(dir)
symlinkSync(B, join(root, 'link-to-b'))
symlinkSync(A, join(root, 'link-to-a'))

const WS_FACT = 'quasar billing 服务端口 8499，部署在 10.3.7.9'
const A_TEXT = '服务端口 8499'
const QUESTION = 'quasar billing 服务的端口是多少？'

let serial = 0

/** Runs one turn in a new session whose header records `cwd`; returns every request of the turn. */
async function turnAt(h: Harness, cwd: string | undefined, prompt: string): Promise<GenerateOptions[]> {
  const before = h.adapter.requests.length
  const handle = await h.ctx.agents.create({
    sessionId: SessionId(`leak-${++serial}`),
    meta: cwd === undefined ? {} : { cwd },
    agentOptions: { provider: 'mock', model: 'mock-1' },
  })
  handle.agent.followup(realBatch(prompt)[0]!)
  await handle.agent.whenIdle()
  await handle.dispose()
  return h.adapter.requests.slice(before)
}

/** What the model got back from a `stablemem_recall` call with `args`, in a session at `cwd`. */
async function toolSearch(h: Harness, cwd: string, args: Record<string, unknown>): Promise<string> {
  h.script(toolCall('r1', 'stablemem_recall', args), reply('ok'))
  const requests = await turnAt(h, cwd, '查一下之前记的东西')
  const results = requests.at(-1)!.messages.flatMap((m) => m.content.flatMap((b) => b.type === 'tool-result' ? [b.content.map((c) => (c.type === 'text' ? c.text : '')).join('')] : []))
  return results.at(-1) ?? ''
}

/** What the pre-step injected for `question` in a session at `cwd`. */
async function injectedAt(h: Harness, cwd: string, question: string): Promise<string> {
  h.script(reply('好的。'))
  const [first] = await turnAt(h, cwd, question)
  return injected(first!).map(textOf).join('\n')
}

async function bootWith(t: Tap, options: BootOptions = {}): Promise<Harness> {
  const h = await boot({ path: tempStorePath('scope-leaks') }, [], options)
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: WS_FACT, scope: 'workspace', workspace: A })
  await h.ctx.stablemem.commit({ text: 'quasar billing 的负责人是王磊（全局）', scope: 'global' })
  return h
}
type Tap = Test

t.test('the recall tool with scope all: a workspace note in its own workspace only', async (t) => {
  const h = await bootWith(t)
  const inA = await toolSearch(h, A, { query: 'quasar billing 服务端口', scope: 'all' })
  t.match(inA, /> quasar billing 服务端口 8499/, 'found in its own workspace')
  t.match(inA, /王磊/, 'and the global note with it')
  const inB = await toolSearch(h, B, { query: 'quasar billing 服务端口', scope: 'all' })
  t.notMatch(inB, /8499/, 'not from another workspace')
  t.match(inB, /王磊/, 'the global note is found there')
  t.notMatch(await toolSearch(h, B, { query: 'quasar billing 服务端口' }), /8499/, 'nor with the default scope')
  t.notMatch(await toolSearch(h, B, { query: '10.3.7.9' }), /8499/, 'nor by its exact value')
  t.same(h.errors, [])
})

t.test('mutation: a recall tool that searches every scope hands workspace A\'s note to B', async (t) => {
  const m = mutant({ file: 'plugin/recall-tool.ts', from: 'recordAccess: false, scope: placeOf(exec.agent) })', to: "recordAccess: false, scope: 'all' })" })
  t.teardown(() => m.remove())
  const h = await bootWith(t, { module: await m.load<typeof plugin>('index.ts') })
  t.match(await toolSearch(h, B, { query: 'quasar billing 服务端口', scope: 'all' }), /8499/, 'the guard is what keeps it in A')
})

t.test('a cwd in other letter cases, or a link to another project, is another workspace', async (t) => {
  const h = await bootWith(t)
  t.match(await injectedAt(h, join(root, 'link-to-a'), QUESTION), /> quasar billing 服务端口 8499/, 'a link to A is A')
  for (const cwd of [CASED, join(root, 'PROJECT-A'), join(root, 'link-to-b'), join(B, '..', 'project-b')]) {
    t.notMatch(await injectedAt(h, cwd, QUESTION), /8499/, `${cwd.slice(root.length)}: not recalled`)
    t.notMatch(await toolSearch(h, cwd, { query: 'quasar billing 服务端口', scope: 'all' }), /8499/, `${cwd.slice(root.length)}: not found by the tool`)
  }
  t.same(h.errors, [])
})

t.test('mutation: a workspace key that folds case lets Project-A read project-a\'s notes', async (t) => {
  const m = mutant({ file: 'store/scope-key.ts', from: 'return `workspace:${dir}`', to: 'return `workspace:${dir.toLowerCase()}`' })
  t.teardown(() => m.remove())
  const h = await bootWith(t, { module: await m.load<typeof plugin>('index.ts') })
  t.match(await injectedAt(h, CASED, QUESTION), /8499/, 'the exact key is what keeps them apart')
})

t.test('mutation: without resolving links, a session reached through a link to A loses A\'s notes', async (t) => {
  const m = mutant({ file: 'store/scope-key.ts', from: 'real = realpathSync.native(lexical)', to: 'real = lexical' })
  t.teardown(() => m.remove())
  const h = await bootWith(t, { module: await m.load<typeof plugin>('index.ts') })
  t.notMatch(await injectedAt(h, join(root, 'link-to-a'), QUESTION), /8499/, 'the link is resolved by the guard')
})

/** Search answers of the browser for `q` under `scope`: the hit texts and the injected message. */
async function browserSearch(port: number, token: string, q: string, scope: string): Promise<{ status: number, texts: string[], message: string }> {
  const answer = await call(port, `/api/search?t=${token}&q=${encodeURIComponent(q)}&scope=${encodeURIComponent(scope)}`)
  if (answer.status !== 200) return { status: answer.status, texts: [], message: answer.body }
  const body = JSON.parse(answer.body) as { hits: Array<{ text: string }>, message: string }
  return { status: answer.status, texts: body.hits.map((h) => h.text), message: body.message }
}

t.test('the browser\'s search and pages under a scope show only what a session there sees', async (t) => {
  // The helper's store already holds a global note, "the billing port is 8499": A's note is told apart by its own words.
  const { server, store } = await start(t)
  store.commit({ text: WS_FACT, scope: `workspace:${A}` })
  store.commit({ text: 'quasar billing 服务端口 9100（B 项目）', scope: `workspace:${B}` })
  const inB = await browserSearch(server.port, server.token, QUESTION, `workspace:${B}`)
  t.equal(inB.status, 200)
  t.ok(inB.texts.some((x) => x.includes('9100')), 'B\'s own note is found')
  t.notOk(inB.texts.some((x) => x.includes(A_TEXT)), 'A\'s note is not in the ranked list')
  t.notMatch(inB.message, A_TEXT, 'nor in the message the model would get')
  const exact = await browserSearch(server.port, server.token, '10.3.7.9 是哪台机器？', `workspace:${B}`)
  t.notOk(exact.texts.some((x) => x.includes(A_TEXT)), 'nor by its exact value')
  for (const spelling of [`workspace:${CASED}`, `workspace:${join(root, 'PROJECT-A')}`]) {
    const other = await browserSearch(server.port, server.token, QUESTION, spelling)
    t.notOk(other.texts.some((x) => x.includes(A_TEXT)), `${spelling.slice(root.length + 10)}: another workspace`)
  }
  const inA = await browserSearch(server.port, server.token, QUESTION, `workspace:${A}`)
  t.ok(inA.texts.some((x) => x.includes(A_TEXT)), 'in A it is found')
  t.notOk(inA.texts.some((x) => x.includes('9100')), 'and B\'s is not')
  const page = JSON.parse((await call(server.port, `/api/notes?t=${server.token}&scope=${encodeURIComponent(`workspace:${B}`)}`)).body) as { notes: Array<{ text: string }> }
  t.same(page.notes.map((n) => n.text), ['quasar billing 服务端口 9100（B 项目）'], 'browsing B lists B\'s notes only')
  const all = await browserSearch(server.port, server.token, QUESTION, 'all')
  t.ok(all.texts.some((x) => x.includes(A_TEXT)) && all.texts.some((x) => x.includes('9100')), 'the page\'s "every note" view shows both, as documented')
  await withMutant(t, [{ file: 'serve/api.ts', from: "if (scope === null || scope === '' || scope === 'all') return undefined", to: 'return undefined' }], {}, async ({ server, store }) => {
    store.commit({ text: WS_FACT, scope: `workspace:${A}` })
    const leaked = await browserSearch(server.port, server.token, QUESTION, `workspace:${B}`)
    t.ok(leaked.texts.some((x) => x.includes(A_TEXT)), 'mutation check: without the scope union the search in B shows A\'s note')
  })
})

t.test('the browser refuses a malformed scope naming the field, instead of searching a scope that holds nothing', async (t) => {
  const { server } = await start(t)
  for (const scope of ['workspace:relative/x', `workspace:${A}/../project-b`, `workspace:${A}/`, 'preset:Bad Id', "' OR 1=1 --"]) {
    for (const route of [`/api/search?q=${encodeURIComponent(QUESTION)}&`, '/api/notes?']) {
      const answer = await call(server.port, `${route}t=${server.token}&scope=${encodeURIComponent(scope)}`)
      t.equal(answer.status, 400, `${route.slice(5, 11)} ${scope.replace(root, '…')}`)
      t.match(JSON.parse(answer.body), { error: /^scope: /, code: 'invalid_input' })
    }
  }
  await withMutant(t, [{ file: 'serve/api.ts', from: "const key = checkScopeKey(scope, 'scope')", to: 'const key = scope' }], {}, async ({ server }) => {
    const answer = await call(server.port, `/api/search?t=${server.token}&q=billing&scope=${encodeURIComponent(`workspace:${A}/`)}`)
    t.equal(answer.status, 200, 'mutation check: without the check a misspelt workspace is searched as an empty scope')
  })
})
