/**
 * `stablemem preset install|list|diff|uninstall`: the `stablemem` agent preset in a dsh home's
 * user root, where dsh web's new-session picker finds it (dsh has no preset command of its own).
 */
import { join, resolve } from 'node:path'
import { dshHome } from '../../dsh-home.ts'
import { readFileSync } from 'node:fs'
import { PRESET_ID } from '../../kernel/preset.ts'
import { println, UsageError, type Command, type CliIo } from '../command.ts'
import {
  HomeNotDirectoryError, checkHome, dshDiscovery, inspectPreset, installPreset, lineDiff, presetFromDsh, presetRoot, profilesWithHostRow, shippedPreset, uninstallPreset,
  type PresetSource,
} from '../preset-install.ts'

const ACTIONS = ['install', 'list', 'diff', 'uninstall'] as const

/** The dsh home: `--home`, else `$DSH_HOME`, else `~/.dsh` (what dsh itself uses). */
function homeOption(value: string | boolean | undefined, io: CliIo): string {
  if (typeof value !== 'string') return resolve(dshHome(io.env))
  if (value.trim() === '') throw new UsageError('--home needs a path')
  return resolve(value)
}

/** The preset command. */
export const command: Command = {
  usage: [
    'Usage: stablemem preset <install|list|diff|uninstall> [--home <dsh home>] [--force] [--from-dsh]',
    '',
    'The `stablemem` agent preset (dsh\'s standard preset plus the memory kernel row) in',
    '<dsh home>/.agent-presets/stablemem/, where dsh web\'s new-session picker lists it.',
    '',
    '  install    write the preset (a rerun changes nothing; an edited copy is kept unless --force)',
    '  list       the presets dsh finds in the user root, and the state of this one',
    '  diff       what install would change in the installed copy (exit 1 when it would change something)',
    '  uninstall  remove the preset (an edited copy is kept unless --force)',
    '',
    '  --home <dir>  the dsh home (default: $DSH_HOME, else ~/.dsh)',
    '  --force       replace or remove a copy that was edited or not written by stablemem',
    '  --from-dsh    build the preset from the installed dsh\'s own standard preset instead of',
    '                the copy shipped with this package (follows the dsh you run)',
  ].join('\n'),
  options: { home: { type: 'string' }, force: { type: 'boolean' }, 'from-dsh': { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ args, values, io }) {
    const action = args[0] as typeof ACTIONS[number]
    if (!ACTIONS.includes(action)) throw new UsageError(`unknown action "${args[0]}" (one of ${ACTIONS.join(', ')})`)
    const home = homeOption(values.home, io)
    const force = values.force === true
    try {
      checkHome(home)
    } catch (error) {
      if (error instanceof HomeNotDirectoryError) throw new UsageError(error.message)
      throw error
    }
    const source = (): PresetSource => values['from-dsh'] === true ? presetFromDsh(home) : shippedPreset()
    const discovery = await dshDiscovery(home)
    switch (action) {
      case 'install': {
        const src = source()
        const outcome = await installPreset(home, src, {
          force,
          validate: discovery && (async (root) => (await discovery(root)).find((p) => p.id === PRESET_ID)?.broken),
        })
        const dir = inspectPreset(home).dir
        println(io.stdout, outcome === 'unchanged'
          ? `preset ${PRESET_ID} is up to date in ${dir}`
          : `preset ${PRESET_ID} ${outcome} in ${dir} (base: ${src.base}); pick it in dsh web's new-session preset picker`)
        if (discovery === undefined) println(io.stderr, `note: no dsh installation found in ${home}, so dsh's preset discovery did not check the copy`)
        if (profilesWithHostRow(home).length === 0) {
          println(io.stderr, `note: no dsh profile in ${home} has dsh-stablemem as a bundle yet; run \`dsh plugin --profile web add dsh-stablemem\`, or sessions on the preset cannot start`)
        }
        return 0
      }
      case 'list': {
        const state = inspectPreset(home)
        const found = discovery === undefined ? undefined : await discovery(presetRoot(home))
        if (found === undefined) println(io.stderr, `note: no dsh installation found in ${home}; showing only the ${PRESET_ID} preset`)
        for (const p of found ?? []) println(io.stdout, `${p.id.padEnd(16)} ${p.broken === undefined ? 'ok' : `broken: ${p.broken}`}${p.name === undefined ? '' : `  (${p.name})`}`)
        const describe = state.kind === 'absent' ? 'not installed'
          : state.kind === 'symlink' ? 'a symlink (dsh ignores it)'
            : state.kind === 'foreign' ? 'present, not written by stablemem'
              : state.edited.length > 0 ? `installed ${state.stamp.version} (base: ${state.stamp.base}), edited: ${state.edited.join(', ')}`
                : `installed ${state.stamp.version} (base: ${state.stamp.base}), unedited`
        println(io.stdout, `${PRESET_ID}: ${describe} — ${state.dir}`)
        return found?.some((p) => p.id === PRESET_ID && p.broken !== undefined) === true ? 1 : 0
      }
      case 'diff': {
        const state = inspectPreset(home)
        if (state.kind === 'absent' || state.kind === 'symlink') {
          println(io.stdout, state.kind === 'absent' ? `preset ${PRESET_ID} is not installed in ${home}` : `${state.dir} is a symlink; dsh ignores it`)
          return 1
        }
        let changes = 0
        for (const [name, text] of Object.entries(source().files)) {
          let installed: string
          try {
            installed = readFileSync(join(state.dir, name), 'utf8')
          } catch {
            installed = ''
          }
          if (installed === text) continue
          changes++
          println(io.stdout, `--- ${join(state.dir, name)} (installed)`)
          println(io.stdout, `+++ ${name} (what install writes)`)
          for (const line of lineDiff(installed, text)) println(io.stdout, line)
        }
        if (changes === 0) println(io.stdout, `preset ${PRESET_ID} in ${state.dir} matches what install writes`)
        return changes === 0 ? 0 : 1
      }
      case 'uninstall': {
        const outcome = uninstallPreset(home, { force })
        println(io.stdout, outcome === 'absent' ? `preset ${PRESET_ID} is not installed in ${home}` : `preset ${PRESET_ID} removed from ${presetRoot(home)}`)
        return 0
      }
    }
  },
}
