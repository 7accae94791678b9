/**
 * `dsh plugin --profile headless add <tarball>` with the real dsh CLI (pnpm from this project's
 * dev dependencies, as dsh requires): the package's `dsh.bundle` joins the profile's bundles and
 * its `cordis.patch.yml` mounts the host row (and turns rc.8's HMR row back on), with no YAML
 * written by anyone. Then two headless sessions: the first saves a fact, the second recalls it.
 * Also installs the `stablemem` preset into the same dsh home and checks it with the installed
 * dsh's own preset discovery, and that the shipped preset is the installed dsh's `standard` plus
 * the kernel rows.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { composePreset } from '../lib/kernel/preset.ts'
import { wireRecalledNotes, wireText } from '../test/helpers/fake-deepseek.ts'
import { PACKAGE_ROOT } from './dsh-cli.ts'
import { isConversation, memoryWorkspace, run } from './memory-model.ts'

const FACT = 'billing 服务端口 8499，部署在 10.3.7.9'

t.test('dsh plugin add <tarball> mounts the host row; a fact saved in session 1 is recalled in session 2', async (t) => {
  const { bin, tarball, home, project, server, env } = await memoryWorkspace('stablemem-plugin-add', (line) => t.comment(line))
  t.teardown(() => server.close())

  const add = await run(join(bin, 'dsh'), ['plugin', '--profile', 'headless', 'add', tarball], env, project)
  t.equal(add.code, 0, `dsh plugin add: ${add.stderr}`)
  const manifest = JSON.parse(readFileSync(join(home, 'profiles', 'headless', 'package.json'), 'utf8')) as { dsh: { profile: { bundles: string[] } } }
  t.same(manifest.dsh.profile.bundles.at(-1), 'dsh-stablemem', 'the package joined the profile as a bundle')
  t.equal(readFileSync(join(home, 'profiles', 'headless', 'cordis.patch.yml'), 'utf8').replace(/^#.*\n/gm, '').trim(), '[]', 'the user patch layer is untouched')

  const dump = await run(join(bin, 'dsh'), ['--profile', 'headless', '--dump-config'], env, project)
  t.equal(dump.code, 0, dump.stderr)
  t.match(dump.stdout, /name: dsh-stablemem\b/, 'the composed config has the host row')

  const first = await run(join(bin, 'dsh'), ['--profile', 'headless', `记住：${FACT}`], env, project)
  t.equal(first.code, 0, `session 1: ${first.stderr}`)
  t.ok(server.requests.some((r) => r.body.messages.some((m) => m.role === 'tool' && /Saved to long-term memory as blk_/.test(m.content ?? ''))), 'the fact was saved with the tool')
  t.ok(existsSync(join(home, 'stablemem', 'memory.db')), 'in the default store under DSH_HOME')

  const before = server.requests.length
  const second = await run(join(bin, 'dsh'), ['--profile', 'headless', 'billing 服务的端口是多少？'], env, project)
  t.equal(second.code, 0, `session 2: ${second.stderr}`)
  const request = server.requests.slice(before).find(isConversation)!
  t.same(wireRecalledNotes(request), [FACT], 'session 2 got the fact in the recall message')
  t.equal(wireText(request).split('Long-term memory (dsh-stablemem):').length - 1, 1, 'one context line')
  t.equal(request.body.tools?.filter((tool) => tool.function.name === 'stablemem_commit').length, 1, 'one commit tool')
  t.match(second.stdout, /根据长期记忆：billing 服务端口 8499/)

  // The preset, in the same (now booted) dsh home.
  const node = join(bin, 'node')
  const cli = join(home, 'profiles', 'headless', 'node_modules', 'dsh-stablemem', 'dist', 'cli', 'main.js')
  const install = await run(node, [cli, 'preset', 'install', '--home', home], env, project)
  t.equal(install.code, 0, install.stderr)
  t.equal(install.stderr, '', 'dsh\'s discovery was found in the home and checked the copy')
  const presets = await import(pathToFileURL(join(home, 'profiles', 'node_modules', '@deepseek-ai', 'dsh-agent-presets', 'lib', 'index.js')).href) as typeof import('@deepseek-ai/dsh-agent-presets')
  const found = await presets.scanRoot({ path: join(home, '.agent-presets'), trust: 'user' })
  t.same(found.map((p) => [p.id, p.broken]), [['stablemem', undefined]], 'the installed dsh lists the preset')
  const standard = readFileSync(join(home, 'profiles', 'node_modules', '@deepseek-ai', 'dsh', 'config', 'agent-presets', 'standard', 'agent.cordis.yml'), 'utf8')
  t.equal(readFileSync(join(PACKAGE_ROOT, 'presets', 'stablemem', 'agent.cordis.yml'), 'utf8'), composePreset(standard), 'the shipped preset is this dsh\'s standard plus the kernel rows')
  const fromDsh = await run(node, [cli, 'preset', 'diff', '--home', home, '--from-dsh'], env, project)
  t.equal(fromDsh.code, 0, `--from-dsh writes the same: ${fromDsh.stdout}`)
})
