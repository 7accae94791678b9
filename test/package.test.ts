/**
 * The package as a user gets it: build (when `dist/` is stale), `npm pack`, install the tarball
 * into a fresh folder outside this project together with the pinned dsh peers (from the npm cache
 * this project's own install filled, fetching only the registry metadata it lacks), then import it
 * by name and run a real agent-loop turn with it: the tool saves a note, a second session recalls
 * it. Also checks the `.d.ts` files are shipped.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ensureBuilt } from './helpers/build.ts'
import { tempDir } from './helpers/temp.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>, overrides: Record<string, unknown>, peerDependencies: Record<string, string>
}
const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } })

/** Runs inside the consumer folder: imports the package by name and drives one real loop. */
const CONSUMER = `
import { Context } from '@deepseek-ai/cordis'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import { CallId, LlmAdapter, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import * as stablemem from 'dsh-stablemem'
import { name, apply, Config, StableMem, recallBlocks, recallBlocksHybrid, BlockStore } from 'dsh-stablemem'
import * as kernel from 'dsh-stablemem/kernel'
import StableMemCompaction from 'dsh-stablemem/compaction'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'

class Scripted extends LlmAdapter {
  requests = []
  constructor(script) { super(); this.script = script }
  async * stream(options) { this.requests.push(options); yield * this.script.shift() }
}
const call = (id, name, args) => [
  { type: 'block-start', index: 0, blockType: 'tool-call' },
  { type: 'block-end', index: 0, block: { type: 'tool-call', id: CallId(id), name, arguments: JSON.stringify(args) } },
  { type: 'finish', reason: { kind: 'tool-calls' } },
]
const say = (text) => [
  { type: 'block-start', index: 0, blockType: 'text' },
  { type: 'block-end', index: 0, block: { type: 'text', text } },
  { type: 'finish', reason: { kind: 'stop' } },
]
const ask = async (ctx, session, text) => {
  const agent = ctx.agentLoop.create(SessionId(session), { provider: 'mock', model: 'mock-1' })
  agent.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
  await agent.whenIdle()
}
const ctx = new Context()
await mountAgentLoopTestDependencies(ctx)
await ctx.plugin(AgentLoop, { agents: [] })
const fiber = await ctx.plugin(stablemem, Config({ path: process.argv[2] }))
const adapter = new Scripted([call('c1', 'stablemem_commit', { text: 'pack smoke: grafana 在 10.1.1.1:3000' }), say('ok'), say('3000')])
ctx.llm.registerAdapter(['mock'], adapter)
const errors = []
ctx.on('agent/error', ({ error }) => errors.push(String(error)))
await ask(ctx, 's1', 'remember grafana')
await ask(ctx, 's2', 'grafana 10.1.1.1 的端口？')
const recalled = adapter.requests[2].messages.filter((m) => m.source.kind === 'plugin' && m.source.plugin === name)
  .map((m) => m.content.map((b) => b.text ?? '').join(''))
const store = new BlockStore(':memory:')
store.commit({ text: 'direct 8080' })
const direct = recallBlocks(store, '8080')
const hybrid = await recallBlocksHybrid(store, null, '8080')
store.close()
console.log(JSON.stringify({
  name, state: fiber.state, errors,
  kernel: { name: kernel.name, apply: typeof kernel.apply, inject: kernel.inject },
  compaction: { engine: StableMemCompaction.prototype instanceof BasicCompactionEngine, inject: StableMemCompaction.inject },
  exports: { apply: typeof apply, Config: typeof Config, StableMem: typeof StableMem, recallBlocks: typeof recallBlocks, recallBlocksHybrid: typeof recallBlocksHybrid },
  recalled, direct: direct.length, hybridDegraded: hybrid.degraded,
}))
await fiber.dispose()
await ctx.fiber.dispose()
`

t.test('npm pack → install into a fresh folder → import by name → a real turn', async (t) => {
  ensureBuilt()
  const out = tempDir('stablemem-pack')
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', out], root)) as Array<{ filename: string, files: Array<{ path: string }> }>
  const files = packed[0]!.files.map((f) => f.path)
  for (const f of ['dist/kernel/index.js', 'dist/kernel/index.d.ts', 'dist/kernel/compaction.js', 'dist/kernel/compaction.d.ts', 'cordis.patch.yml', 'presets/stablemem/agent.cordis.yml', 'presets/stablemem/preset.yml', 'dsh-install/package.json', 'dsh-install/package-lock.json', 'dist/index.js', 'dist/index.d.ts', 'dist/service.d.ts', 'dist/config.d.ts', 'dist/recall/recall.d.ts', 'dist/store/store.d.ts', 'package.json', 'README.md', 'CHANGELOG.md']) {
    t.ok(files.includes(f), `tarball has ${f}`)
  }
  t.notOk(files.some((f) => f.startsWith('lib/') || f.startsWith('test/') || f.startsWith('.cache/')), 'no sources, tests or scratch in the tarball')

  const consumer = tempDir('stablemem-consumer')
  const deps: Record<string, string> = { 'dsh-stablemem': `file:${join(out, packed[0]!.filename)}` }
  for (const [pkg, version] of Object.entries(manifest.devDependencies)) if (pkg.startsWith('@deepseek-ai/')) deps[pkg] = version
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: deps, overrides: manifest.overrides }, null, 2))
  // Prefer the npm cache, but let npm fetch what it lacks: `npm ci` caches the locked tarballs and
  // not the registry metadata an unlocked install resolves versions from, so with a cold cache
  // (a new CI machine) `--offline` cannot resolve the peers at all.
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], consumer)
  const installed = join(consumer, 'node_modules', 'dsh-stablemem')
  t.ok(existsSync(join(installed, 'dist', 'index.d.ts')), 'installed with its declarations')
  for (const peer of Object.keys(manifest.peerDependencies)) t.ok(existsSync(join(consumer, 'node_modules', peer)), `peer ${peer} resolved`)

  writeFileSync(join(consumer, 'smoke.mjs'), CONSUMER)
  const stdout = execFileSync(process.execPath, ['smoke.mjs', join(consumer, 'memory.db')], { cwd: consumer, encoding: 'utf8' })
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>
  t.match(result, {
    name: 'dsh-stablemem', state: 2, errors: [],
    kernel: { name: 'dsh-stablemem/kernel', apply: 'function', inject: ['stablemem', 'tools', 'systemPrompt'] },
    compaction: { engine: true, inject: ['llm', 'tokenMeter', 'sessions'] },
    exports: { apply: 'function', Config: 'function', StableMem: 'function', recallBlocks: 'function', recallBlocksHybrid: 'function' },
    direct: 1, hybridDegraded: 'no_embedder',
  })
  t.match((result.recalled as string[])[0], /> pack smoke: grafana 在 10\.1\.1\.1:3000/, 'the installed package recalled the note in a new session')
})
