/**
 * End to end, the needle past the window through the real `dsh --profile headless`: the packed
 * plugin in a throw-away profile, the DeepSeek adapter pointed at a DeepSeek-compatible fake on
 * 127.0.0.1 with a small context window, and dsh's own token meter and basic compaction (the
 * headless profile mounts both; the patch lowers the threshold).
 *
 * Headless runs one task per process, so the conversation is one long turn: the user says the
 * needle, and the scripted model keeps calling a tool with long arguments until compaction has
 * taken the needle out of the request. Then a second run (a new session) asks for it. Without the
 * plugin, the two runs never show it again (asserted). With the plugin, the recall message of the
 * second run carries it, labelled as a turn of another session, and compaction is
 * `dsh-stablemem/compaction`, whose checkpoint says how many messages moved to memory.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import t from 'tap'
import { startFakeDeepSeek, wireText, type WireRequest } from '../test/helpers/fake-deepseek.ts'
import { filler } from '../test/helpers/windowed.ts'
import { ensureDsh, installIntoProfile, packThisPackage } from './dsh-cli.ts'
import { isConversation, run } from './memory-model.ts'

const NEEDLE = 'billing 服务端口 13010'
const WINDOW = 24_000
/** Tool calls the model makes in the first run; each carries a long argument, so the turn outgrows the window. */
const FILL_STEPS = 14

function isCompaction(request: WireRequest): boolean {
  return request.body.messages.at(-1)?.content?.includes('acting as a compaction engine') === true
}

t.test('dsh --profile headless: a needle compacted away in run 1 is recalled in run 2; without the plugin it is not', async (t) => {
  const bin = ensureDsh((line) => t.comment(line))
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'stablemem-e2e-needle-')))
  t.teardown(() => {
    if (t.passing()) rmSync(work, { recursive: true, force: true })
    else t.comment(`kept for inspection: ${work}`)
  })
  const tarball = packThisPackage(work)
  let step = 0
  const server = await startFakeDeepSeek((request) => {
    if (!isConversation(request)) return { text: 'billing 端口' }
    if (isCompaction(request)) return { text: '## Primary Request and Intent\n- a long chat\n## Critical Context\n- (none)' }
    const text = wireText(request)
    if (text.includes('端口是多少')) {
      const recall = request.body.messages.find((m) => m.role === 'user' && m.content?.startsWith('[stablemem] Notes recalled'))
      return { text: recall?.content?.includes('13010') === true ? '记得：13010' : '不知道' }
    }
    // Counted here, not from the request: compaction removes the earlier tool messages from it.
    if (step >= FILL_STEPS) return { text: '好的。' }
    const name = request.body.tools!.some((tool) => tool.function.name === 'stablemem_recall') ? 'stablemem_recall' : request.body.tools![0]!.function.name
    return { toolCalls: [{ name, arguments: { query: filler(step++, 6_000) } }] }
  })
  t.teardown(() => server.close())

  const home = join(work, 'dsh-home')
  const project = join(work, 'project')
  mkdirSync(project, { recursive: true })
  const env: NodeJS.ProcessEnv = {
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, HOME: work, TMPDIR: work, DSH_HOME: home,
    DEEPSEEK_BASE_URL: server.baseURL, DEEPSEEK_API_KEY: 'sk-e2e-fake',
  }
  const init = await run(join(bin, 'dsh'), ['--profile', 'headless', '--dump-config'], env, project, 300_000)
  t.equal(init.code, 0, `profile initialised: ${init.stderr}`)
  installIntoProfile(tarball, join(home, 'profiles', 'headless'))

  const base = [
    '- id: hmr', '  disabled: false', '  config: { root: [] }',
    '- id: llm-deepseek', `  config: { defaultContextWindow: ${WINDOW}, models: [] }`,
    '- id: compaction-basic', '  config: { thresholdRatio: 0.5, retainTokens: 2000 }',
  ]
  const store = join(work, 'memory.db')
  const withPlugin = join(work, 'with.patch.yml')
  // With the plugin, compaction is dsh-stablemem/compaction (dsh's basic engine plus the memory line) with the
  // same configuration. A patch cannot rename a row, so dsh's row is disabled and ours inserted.
  const withEngine = [...base.slice(0, 5), '- id: compaction-basic', '  disabled: true']
  writeFileSync(withPlugin, [...withEngine, '- insert:', '    - id: stablemem', '      name: dsh-stablemem', '      config:', `        path: ${JSON.stringify(store)}`,
    '    - id: stablemem-compaction', '      name: dsh-stablemem/compaction', `    ${base[6]!}`, ''].join('\n'))
  const without = join(work, 'without.patch.yml')
  writeFileSync(without, [...base, ''].join('\n'))

  for (const [label, patch] of [['with the plugin', withPlugin], ['without the plugin', without]] as const) {
    step = 0
    const start = server.requests.length
    const first = await run(join(bin, 'dsh'), ['--profile', 'headless', '--patch', patch, `记住：${NEEDLE}。`], env, project, 300_000)
    t.equal(first.code, 0, `${label}, run 1 completed: ${first.stderr.slice(0, 2000)}`)
    const run1 = server.requests.slice(start).filter(isConversation)
    t.ok(run1.some(isCompaction), `${label}: dsh compacted during run 1`)
    const last = run1.filter((r) => !isCompaction(r)).at(-1)!
    t.notOk(wireText(last).includes('13010'), `${label}: the needle was gone from the last request of run 1`)
    const line = /\[stablemem\] \d+ messages? of this span (?:was|were) kept word for word in long-term memory; .* stablemem_recall tool\./
    // The first checkpoint's span holds the needle; later ones replace tool rounds of our own tool, which capture never keeps.
    const checkpoints = run1.filter((r) => !isCompaction(r) && wireText(r).includes('<compacted-summary>'))
    if (patch === withPlugin) t.ok(checkpoints.some((r) => line.test(wireText(r))), 'a checkpoint dsh-stablemem/compaction wrote says what moved to memory')
    else t.notOk(checkpoints.some((r) => wireText(r).includes('[stablemem] ') && line.test(wireText(r))), 'dsh\'s own engine writes no such line')
    const before = server.requests.length
    const second = await run(join(bin, 'dsh'), ['--profile', 'headless', '--patch', patch, 'billing 服务端口是多少？'], env, project, 300_000)
    t.equal(second.code, 0, `${label}, run 2 completed: ${second.stderr.slice(0, 2000)}`)
    const question = server.requests.slice(before).filter((r) => isConversation(r) && !isCompaction(r)).at(-1)!
    if (patch === withPlugin) {
      const recall = question.body.messages.find((m) => m.role === 'user' && m.content?.startsWith('[stablemem] Notes recalled'))
      t.match(recall?.content, /13010/, 'the recall message carries the needle')
      t.match(recall?.content, /· another session · user\]\n> 记住：billing 服务端口 13010/, 'labelled as a turn of another session')
      t.match(second.stdout, /记得：13010/, 'the model answered with the needle')
    } else {
      t.notOk(wireText(question).includes('13010'), 'without the plugin the needle never comes back')
    }
  }
})
