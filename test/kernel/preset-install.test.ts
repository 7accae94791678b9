/**
 * `stablemem preset …` on real folders (brief §1, P3): the copy in a temp dsh home is listed by
 * dsh's own discovery (`scanRoot` of the real `@deepseek-ai/dsh-agent-presets`, linked into the
 * home the way dsh links its packages), a rerun changes nothing, an edited copy, a foreign
 * directory and a symlink are refused, and bad input gets one clear line and loses nothing.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { scanRoot } from '@deepseek-ai/dsh-agent-presets'
import t from 'tap'
import { COMPACTION_NAME, KERNEL_MARKER, KERNEL_ROWS, PRESET_METADATA, composePreset } from '../../lib/kernel/preset.ts'
import type * as Install from '../../lib/cli/preset-install.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'
import { tempDir } from '../helpers/temp.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SHIPPED = join(ROOT, 'presets', 'stablemem')

/** A dsh home with dsh's preset discovery linked in, as dsh's `profiles/node_modules` has it. */
function home(options: { discovery?: boolean, standard?: string } = {}): string {
  const dir = tempDir('stablemem-dsh-home')
  const modules = join(dir, 'profiles', 'node_modules', '@deepseek-ai')
  mkdirSync(modules, { recursive: true })
  if (options.discovery !== false) symlinkSync(join(ROOT, 'node_modules', '@deepseek-ai', 'dsh-agent-presets'), join(modules, 'dsh-agent-presets'))
  if (options.standard !== undefined) {
    const standard = join(modules, 'dsh', 'config', 'agent-presets', 'standard')
    mkdirSync(standard, { recursive: true })
    writeFileSync(join(modules, 'dsh', 'package.json'), JSON.stringify({ name: '@deepseek-ai/dsh', version: '9.9.9-test' }))
    writeFileSync(join(standard, 'agent.cordis.yml'), options.standard)
  }
  return dir
}

const preset = (h: string) => join(h, '.agent-presets', 'stablemem')
const read = (h: string, file = 'agent.cordis.yml') => readFileSync(join(preset(h), file), 'utf8')
const listed = async (h: string) => (await scanRoot({ path: join(h, '.agent-presets'), trust: 'user' })).map((p) => ({ id: p.id, name: p.name, broken: p.broken }))
const lines = (text: string) => text.trim().split('\n').filter((l) => l !== '')

t.test('the shipped preset is dsh\'s standard preset with the kernel rows appended once', async (t) => {
  const text = readFileSync(join(SHIPPED, 'agent.cordis.yml'), 'utf8')
  t.ok(text.endsWith(`\n${KERNEL_ROWS}`), 'the kernel rows close the file')
  t.equal(text.split(KERNEL_MARKER).length, 2, 'exactly once')
  t.match(text, /^# The `standard` agent preset/, 'the base is dsh\'s standard preset, comments kept')
  t.equal(readFileSync(join(SHIPPED, 'preset.yml'), 'utf8'), PRESET_METADATA)
  t.throws(() => composePreset(text), /already contains/, 'composing twice is refused')
  t.match(text, /- id: compaction-basic\n {6}name: dsh-stablemem\/compaction #/, 'its compaction row mounts dsh-stablemem/compaction')
  t.notMatch(text, /@deepseek-ai\/dsh-compaction-basic'/, 'not dsh\'s basic engine beside it')
  t.equal(composePreset("- id: c\n  config:\n    - id: compaction-basic\n      name: '@deepseek-ai/dsh-compaction-basic'\n"),
    `- id: c\n  config:\n    - id: compaction-basic\n      ${COMPACTION_NAME}\n\n${KERNEL_ROWS}`, 'the row is swapped in place, indentation kept')
})

t.test('install: a real directory dsh\'s discovery lists; a rerun changes nothing', async (t) => {
  const h = home()
  const first = await runCli(['preset', 'install', '--home', h])
  t.equal(first.code, 0, first.stderr)
  t.match(first.stdout, /preset stablemem installed in .*\.agent-presets\/stablemem \(base: shipped\)/)
  t.match(first.stderr, /note: no dsh profile in .* has dsh-stablemem as a bundle yet; run `dsh plugin --profile web add dsh-stablemem`/, 'says the host row is missing')
  mkdirSync(join(h, 'profiles', 'web'), { recursive: true })
  writeFileSync(join(h, 'profiles', 'web', 'package.json'), JSON.stringify({ dsh: { profile: { bundles: ['@deepseek-ai/dsh-base', 'dsh-stablemem'] } } }))
  t.equal((await runCli(['preset', 'install', '--home', h])).stderr, '', 'no note once a profile has the bundle')
  t.ok(lstatSync(preset(h)).isDirectory() && !lstatSync(preset(h)).isSymbolicLink())
  t.equal(read(h), readFileSync(join(SHIPPED, 'agent.cordis.yml'), 'utf8'))
  t.same(await listed(h), [{ id: 'stablemem', name: '标准模式 · 长期记忆', broken: undefined }], 'dsh lists it, not broken')
  const stamp = JSON.parse(read(h, '.stablemem-preset.json')) as Install.PresetStamp
  t.match(stamp, { package: 'dsh-stablemem', base: 'shipped', files: { 'agent.cordis.yml': /^sha256:[0-9a-f]{64}$/, 'preset.yml': /^sha256:/ } })

  const before = readdirSync(preset(h)).map((f) => [f, statSync(join(preset(h), f)).mtimeMs, statSync(join(preset(h), f)).ino])
  const second = await runCli(['preset', 'install', '--home', h])
  t.equal(second.code, 0)
  t.match(second.stdout, /preset stablemem is up to date/)
  t.same(readdirSync(preset(h)).map((f) => [f, statSync(join(preset(h), f)).mtimeMs, statSync(join(preset(h), f)).ino]), before, 'no file rewritten')
  t.same(readdirSync(join(h, '.agent-presets')), ['stablemem'], 'no scratch left behind')

  const list = await runCli(['preset', 'list', '--home', h])
  t.equal(list.code, 0)
  t.match(list.stdout, /^stablemem\s+ok\s+\(标准模式 · 长期记忆\)$/m)
  t.match(list.stdout, /stablemem: installed 0\.1\.0 \(base: shipped\), unedited/)
  const diff = await runCli(['preset', 'diff', '--home', h])
  t.equal(diff.code, 0)
  t.match(diff.stdout, /matches what install writes/)
})

t.test('an edited copy is kept (install and uninstall refuse), diff shows it, --force replaces it', async (t) => {
  const h = home()
  t.equal((await runCli(['preset', 'install', '--home', h])).code, 0)
  const edited = read(h).replace('fetch: false', 'fetch: true')
  writeFileSync(join(preset(h), 'agent.cordis.yml'), edited)
  const refused = await runCli(['preset', 'install', '--home', h])
  t.equal(refused.code, 1)
  t.same(lines(refused.stderr), [`stablemem preset: ${preset(h)} was edited since stablemem wrote it (agent.cordis.yml); rerun with --force to replace it, or see stablemem preset diff`])
  t.equal(read(h), edited, 'the edit is kept')
  t.equal((await runCli(['preset', 'uninstall', '--home', h])).code, 1)
  t.ok(existsSync(preset(h)))
  const diff = await runCli(['preset', 'diff', '--home', h])
  t.equal(diff.code, 1)
  t.match(diff.stdout, /^- +fetch: true$/m)
  t.match(diff.stdout, /^\+ +fetch: false$/m)
  t.match((await runCli(['preset', 'list', '--home', h])).stdout, /edited: agent\.cordis\.yml/)
  const forced = await runCli(['preset', 'install', '--home', h, '--force'])
  t.equal(forced.code, 0, forced.stderr)
  t.match(forced.stdout, /preset stablemem updated/)
  t.equal(read(h), readFileSync(join(SHIPPED, 'agent.cordis.yml'), 'utf8'))
  t.equal((await runCli(['preset', 'uninstall', '--home', h])).code, 0)
  t.notOk(existsSync(preset(h)))
  t.same(await listed(h), [])
  const again = await runCli(['preset', 'uninstall', '--home', h])
  t.equal(again.code, 0)
  t.match(again.stdout, /not installed/)
})

t.test('a symlinked preset is refused, even with --force; dsh would not see it either', async (t) => {
  const h = home()
  const elsewhere = tempDir('stablemem-elsewhere')
  cpSync(SHIPPED, join(elsewhere, 'stablemem'), { recursive: true })
  mkdirSync(join(h, '.agent-presets'))
  symlinkSync(join(elsewhere, 'stablemem'), preset(h))
  t.same(await listed(h), [], 'dsh ignores a symlinked preset')
  for (const args of [['install'], ['install', '--force'], ['uninstall', '--force']]) {
    const run = await runCli(['preset', ...args, '--home', h])
    t.equal(run.code, 1, args.join(' '))
    t.same(lines(run.stderr), [`stablemem preset: ${preset(h)} is a symlink; dsh ignores symlinked presets, and stablemem does not write through one (remove the link first)`])
  }
  t.ok(lstatSync(preset(h)).isSymbolicLink(), 'the link is untouched')
  t.same(readdirSync(join(elsewhere, 'stablemem')).sort(), ['agent.cordis.yml', 'preset.yml'], 'nothing written through it')
})

t.test('a directory stablemem did not write is refused without --force', async (t) => {
  const h = home()
  mkdirSync(preset(h), { recursive: true })
  writeFileSync(join(preset(h), 'agent.cordis.yml'), '- id: mine\n  name: my-plugin\n')
  const run = await runCli(['preset', 'install', '--home', h])
  t.equal(run.code, 1)
  t.match(run.stderr, /exists and was not written by stablemem preset install; rerun with --force/)
  t.equal(read(h), '- id: mine\n  name: my-plugin\n')
  t.equal((await runCli(['preset', 'install', '--home', h, '--force'])).code, 0)
  t.equal(read(h), readFileSync(join(SHIPPED, 'agent.cordis.yml'), 'utf8'))
})

t.test('--from-dsh regenerates from the installed dsh\'s standard preset', async (t) => {
  const h = home({ standard: '# a newer standard\n- id: persona\n  name: \'@deepseek-ai/dsh-persona\'\n' })
  const run = await runCli(['preset', 'install', '--home', h, '--from-dsh'])
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /\(base: dsh 9\.9\.9-test\)/)
  t.equal(read(h), composePreset('# a newer standard\n- id: persona\n  name: \'@deepseek-ai/dsh-persona\'\n'))
  t.match((await runCli(['preset', 'diff', '--home', h])).stdout, /^- # a newer standard$/m, 'diff against the shipped base shows the drift')
  t.equal((await runCli(['preset', 'diff', '--home', h, '--from-dsh'])).code, 0)
})

t.test('bad input: one clear line, exit 1 or 2, nothing half-written', async (t) => {
  const file = join(tempDir('stablemem-not-a-home'), 'file')
  writeFileSync(file, 'x')
  const onFile = await runCli(['preset', 'install', '--home', file])
  t.equal(onFile.code, 2)
  t.same(lines(onFile.stderr), [`stablemem preset: --home ${file} is not a directory (see stablemem preset --help)`])

  const missing = join(tempDir('stablemem-no-home'), 'nope')
  const noHome = await runCli(['preset', 'install', '--home', missing])
  t.equal(noHome.code, 1)
  t.same(lines(noHome.stderr), [`stablemem preset: no dsh home at ${missing} (run dsh once, or pass --home <dsh home>)`])
  t.notOk(existsSync(missing), 'no home created')

  const bare = home({ discovery: false })
  const noDsh = await runCli(['preset', 'install', '--home', bare, '--from-dsh'])
  t.equal(noDsh.code, 1)
  t.equal(lines(noDsh.stderr).length, 1)
  t.match(noDsh.stderr, /^stablemem preset: no dsh installation in .* \(.*standard\/agent\.cordis\.yml is missing\); run `dsh --profile web --dump-config` once/)
  t.notOk(existsSync(join(bare, '.agent-presets')), 'nothing written')

  const unknown = await runCli(['preset', 'frobnicate', '--home', bare])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown action "frobnicate"/)

  // A broken composition in the user's copy: dsh's discovery says so, install keeps it.
  const h = home()
  t.equal((await runCli(['preset', 'install', '--home', h])).code, 0)
  writeFileSync(join(preset(h), 'agent.cordis.yml'), '- id: [unclosed\n')
  const list = await runCli(['preset', 'list', '--home', h])
  t.equal(list.code, 1)
  t.match(list.stdout, /^stablemem\s+broken: the composition is not valid YAML/m)
  const refused = await runCli(['preset', 'install', '--home', h])
  t.equal(refused.code, 1)
  t.equal(lines(refused.stderr).length, 1)
  t.equal(read(h), '- id: [unclosed\n', 'the broken copy is kept as it was')

  // A base dsh's discovery calls broken is never swapped in: the old copy stays, no scratch remains.
  const broken = home({ standard: 'persona: not a list\n' })
  t.equal((await runCli(['preset', 'install', '--home', broken])).code, 0)
  const before = read(broken)
  const bad = await runCli(['preset', 'install', '--home', broken, '--from-dsh'])
  t.equal(bad.code, 1)
  t.equal(lines(bad.stderr).length, 1)
  t.match(bad.stderr, /^stablemem preset: the preset would not load in dsh: the composition is not valid YAML/)
  t.equal(read(broken), before, 'the installed copy is unchanged')
  t.same(readdirSync(join(broken, '.agent-presets')), ['stablemem'], 'no scratch left behind')
})

t.test('mutations: without the edit check an edited copy is overwritten; without the symlink check the link is replaced', async (t) => {
  const cases: Array<{ name: string, edit: { file: string, from: string, to: string }, setup: (h: string) => void, check: (h: string) => boolean }> = [
    {
      name: 'edit check',
      edit: { file: 'cli/preset-install.ts', from: 'if (state.kind === \'installed\' && state.edited.length > 0) return', to: 'if (false) return' },
      setup: (h) => { writeFileSync(join(preset(h), 'preset.yml'), 'name: mine\n') },
      check: (h) => read(h, 'preset.yml') === 'name: mine\n',
    },
    {
      name: 'symlink check',
      edit: { file: 'cli/preset-install.ts', from: 'if (state.kind === \'symlink\') return', to: 'if (false) return' },
      setup: (h) => {
        const elsewhere = tempDir('stablemem-elsewhere')
        cpSync(preset(h), join(elsewhere, 'stablemem'), { recursive: true })
        writeFileSync(join(elsewhere, 'stablemem', 'preset.yml'), 'name: linked\n')
        // the real copy replaced by a link to a copy elsewhere
        rmSync(preset(h), { recursive: true })
        symlinkSync(join(elsewhere, 'stablemem'), preset(h))
      },
      check: (h) => lstatSync(preset(h)).isSymbolicLink(),
    },
  ]
  for (const c of cases) {
    for (const mutated of [false, true]) {
      const h = home()
      t.equal((await runCli(['preset', 'install', '--home', h])).code, 0)
      c.setup(h)
      const lib = mutated ? mutant(c.edit) : undefined
      if (lib) {
        cpSync(join(ROOT, 'package.json'), join(lib.dir, 'package.json'))
        cpSync(join(ROOT, 'presets'), join(lib.dir, 'presets'), { recursive: true })
      }
      const mod = lib ? await lib.load<typeof Install>('cli/preset-install.ts') : await import('../../lib/cli/preset-install.ts')
      const outcome = await mod.installPreset(h, mod.shippedPreset(), { force: false }).then(() => 'written', (e: Error) => e.message)
      t.equal(c.check(h), !mutated, `${c.name} ${mutated ? 'removed: the copy was replaced' : 'in place: refused'} (${outcome})`)
      lib?.remove()
    }
  }
})
