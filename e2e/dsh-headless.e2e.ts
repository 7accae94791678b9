/**
 * End to end with the real dsh CLI: this package, packed with `npm pack`, mounted through a patch
 * row in a throw-away DSH_HOME profile, and `dsh --profile headless` run three times against a
 * DeepSeek-compatible model server on 127.0.0.1 (scripted replies). Session 1, working in project
 * A, saves a Chinese fact with a port number through `stablemem_commit` (default scope: the
 * workspace) and a fact about the user with scope `global`; session 2, a new session in A on the
 * same store, must receive the project fact in the plugin's attributed recall message, beside the
 * context line; session 3, working in project B, gets the global fact and never A's.
 *
 * Run with `npm run test:e2e`. The first run installs dsh into `.cache/dsh-e2e/` (minutes).
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import t from 'tap'
import { BlockStore } from '../lib/store/store.ts'
import { startFakeDeepSeek, wireRecalledNotes, wireText } from '../test/helpers/fake-deepseek.ts'
import { ensureDsh, installIntoProfile, packThisPackage } from './dsh-cli.ts'
import { isConversation, run } from './memory-model.ts'

const FACT = 'billing 服务端口 8499，部署在 10.3.7.9'
const GLOBAL_FACT = '我的时区是上海，回复用中文'

t.test('dsh --profile headless: a fact saved in session 1 is recalled into session 2 in the same workspace, never in another', async (t) => {
  const bin = ensureDsh((line) => t.comment(line))
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'stablemem-e2e-')))
  t.teardown(() => {
    if (t.passing()) rmSync(work, { recursive: true, force: true })
    else t.comment(`kept for inspection: ${work}`)
  })
  const tarball = packThisPackage(work)
  t.comment(`packed ${tarball}`)

  const home = join(work, 'dsh-home')
  const project = join(work, 'project')
  const otherProject = join(work, 'other-project')
  mkdirSync(project, { recursive: true })
  mkdirSync(otherProject, { recursive: true })
  const server = await startFakeDeepSeek((request) => {
    if (!isConversation(request)) return { text: 'billing 端口' }
    if (request.body.messages.some((m) => m.role === 'tool')) return { text: '已记住。' }
    const notes = wireRecalledNotes(request)
    if (notes.length > 0) return { text: `根据长期记忆：${notes[0]}` }
    return { toolCalls: [{ name: 'stablemem_commit', arguments: { text: FACT } }, { name: 'stablemem_commit', arguments: { text: GLOBAL_FACT, scope: 'global' } }] }
  })
  t.teardown(() => server.close())

  const env: NodeJS.ProcessEnv = {
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    HOME: work,
    // dsh spills long tool output into the temp folder and does not remove it on exit.
    TMPDIR: work,
    DSH_HOME: home,
    DEEPSEEK_BASE_URL: server.baseURL,
    DEEPSEEK_API_KEY: 'sk-e2e-fake',
  }

  // First boot creates the headless profile (and profiles/node_modules with dsh's own packages).
  const init = await run(join(bin, 'dsh'), ['--profile', 'headless', '--dump-config'], env, project)
  t.equal(init.code, 0, `profile initialised: ${init.stderr}`)
  const profileDir = join(home, 'profiles', 'headless')
  t.ok(existsSync(join(home, 'profiles', 'node_modules', '@deepseek-ai', 'cordis')), 'dsh links its packages for profiles')
  const installed = installIntoProfile(tarball, profileDir)
  t.notOk(existsSync(join(installed, 'node_modules', '@deepseek-ai')), 'no second copy of the dsh packages beside the plugin')

  const store = join(work, 'memory.db')
  const patch = join(work, 'stablemem.patch.yml')
  writeFileSync(patch, [
    '# Required for dsh 0.1.0-rc.8 headless: re-enable the HMR service (see README).',
    '- id: hmr',
    '  disabled: false',
    '  config: { root: [] }',
    '- insert:',
    '    - id: stablemem',
    '      name: dsh-stablemem',
    '      config:',
    `        path: ${JSON.stringify(store)}`,
    '',
  ].join('\n'))

  const first = await run(join(bin, 'dsh'), ['--profile', 'headless', '--patch', patch, `记住：${FACT}`], env, project)
  t.equal(first.code, 0, `session 1 completed: ${first.stderr}`)
  const session1 = server.requests.filter(isConversation)
  t.ok(session1[0]?.body.tools?.some((tool) => tool.function.name === 'stablemem_commit'), 'the packed plugin registered its tool')
  t.ok(session1.some((r) => r.body.messages.some((m) => m.role === 'tool' && /Saved to long-term memory as blk_[0-9a-f]{24}/.test(m.content ?? ''))), 'the tool result reached the model')
  const saved = new BlockStore(store)
  const blocks = [...saved.allBlocks()].map((b) => ({ text: b.text, scopes: saved.scopes.of(b.id) }))
  saved.close()
  t.same(blocks, [{ text: FACT, scopes: [`workspace:${project}`] }, { text: GLOBAL_FACT, scopes: ['global'] }],
    'the store file holds the project fact in the workspace dsh ran in, and the global fact')

  const before = server.requests.length
  const second = await run(join(bin, 'dsh'), ['--profile', 'headless', '--patch', patch, 'billing 服务的端口是多少？'], env, project)
  t.equal(second.code, 0, `session 2 completed: ${second.stderr}`)
  const session2 = server.requests.slice(before).filter(isConversation)
  t.equal(session2.length, 1, 'session 2: one conversation request')
  const request = session2[0]!
  t.notOk(request.body.messages.some((m) => m.role === 'tool'), 'session 2 is a new session (no history from session 1)')
  t.same(wireRecalledNotes(request), [FACT], 'the fact is inside the plugin\'s attributed recall message')
  t.match(wireText(request), /Long-term memory \(dsh-stablemem\): 2 notes stored/, 'the context line is present')
  t.match(second.stdout, /根据长期记忆：billing 服务端口 8499/)

  const beforeThird = server.requests.length
  const third = await run(join(bin, 'dsh'), ['--profile', 'headless', '--patch', patch, 'billing 服务的端口是多少？我的时区是哪里？'], env, otherProject)
  t.equal(third.code, 0, `session 3 completed: ${third.stderr}`)
  const session3 = server.requests.slice(beforeThird).filter(isConversation)
  t.equal(session3.length, 1, 'session 3: one conversation request')
  t.same(wireRecalledNotes(session3[0]!), [GLOBAL_FACT], 'another workspace gets the global fact and not project A\'s')
  t.notMatch(wireText(session3[0]!), /8499/, 'A\'s port appears nowhere in B\'s request')
})
