/**
 * Installing the `stablemem` agent preset into a dsh home. dsh discovers third-party presets only
 * in its user root, `$DSH_HOME/.agent-presets/`, and only as real directories; it has no command
 * that installs one. So the preset is copied there, with a stamp (`.stablemem-preset.json`) of
 * every file written and its hash: a rerun that would write the same bytes changes nothing, a copy
 * the user edited is never overwritten without `force`, and a symlinked preset (which dsh would not
 * even see) is refused. A new copy is written beside the old one and renamed into place, so a
 * failure never leaves half a preset.
 */
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { COMPOSITION_FILE, METADATA_FILE, PRESET_ID, PRESET_METADATA, composePreset } from '../kernel/preset.ts'

/** The stamp file inside the installed preset directory. */
export const STAMP_FILE = '.stablemem-preset.json'

/** The package's own copy of the preset (shipped in `files`). */
const SHIPPED_DIR = new URL('../../presets/stablemem/', import.meta.url)

/** File name → content of one preset copy. */
export type PresetFiles = Record<string, string>

/** What `install` writes and where its base came from. */
export interface PresetSource {
  files: PresetFiles
  /** `shipped` (this package's copy) or `dsh <version>` (regenerated from the installed dsh's `standard`). */
  base: string
}

/** The stamp: which package wrote the copy, from which base, and the hash of every file. */
export interface PresetStamp {
  package: string
  version: string
  base: string
  files: Record<string, string>
}

/** The state of the preset directory in a dsh home. */
export type PresetState =
  | { kind: 'absent', dir: string }
  | { kind: 'symlink', dir: string }
  | { kind: 'foreign', dir: string }
  | { kind: 'installed', dir: string, stamp: PresetStamp, edited: string[] }

/** The user preset root of a dsh home, as dsh-agent-presets names it. */
export function presetRoot(home: string): string {
  return join(home, '.agent-presets')
}

/** The package name and version, for the stamp. */
function packageIdentity(): { name: string, version: string } {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string, version: string }
  return { name: manifest.name, version: manifest.version }
}

/** `sha256:<hex>` of a text. */
function hash(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`
}

/** The preset as this package ships it. */
export function shippedPreset(): PresetSource {
  const files: PresetFiles = {}
  for (const name of [COMPOSITION_FILE, METADATA_FILE]) files[name] = readFileSync(new URL(name, SHIPPED_DIR), 'utf8')
  return { files, base: 'shipped' }
}

/** The installed dsh app package inside a dsh home (dsh links it into `profiles/node_modules`). */
export function installedDshDir(home: string): string {
  return join(home, 'profiles', 'node_modules', '@deepseek-ai', 'dsh')
}

/**
 * The preset regenerated from the installed dsh's own `standard` preset, so the copy follows the
 * dsh the user runs instead of the one this package was built against.
 */
export function presetFromDsh(home: string): PresetSource {
  const dsh = installedDshDir(home)
  const standard = join(dsh, 'config', 'agent-presets', 'standard', COMPOSITION_FILE)
  if (!existsSync(standard)) {
    throw new Error(`no dsh installation in ${home} (${standard} is missing); run \`dsh --profile web --dump-config\` once so dsh links itself there, or install without --from-dsh`)
  }
  const version = (JSON.parse(readFileSync(join(dsh, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown'
  return { files: { [COMPOSITION_FILE]: composePreset(readFileSync(standard, 'utf8')), [METADATA_FILE]: PRESET_METADATA }, base: `dsh ${version}` }
}

/** Checks `home` is a directory; a file or a missing folder is a clear error. */
export function checkHome(home: string): void {
  let isDir: boolean
  try {
    isDir = statSync(home).isDirectory()
  } catch {
    throw new Error(`no dsh home at ${home} (run dsh once, or pass --home <dsh home>)`)
  }
  if (!isDir) throw new HomeNotDirectoryError(`--home ${home} is not a directory`)
}

/** `--home` names a file: a wrong invocation (exit code 2). */
export class HomeNotDirectoryError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'HomeNotDirectoryError'
  }
}

/** Reads the state of `$home/.agent-presets/stablemem`. */
export function inspectPreset(home: string): PresetState {
  const dir = join(presetRoot(home), PRESET_ID)
  let stat
  try {
    stat = lstatSync(dir)
  } catch {
    return { kind: 'absent', dir }
  }
  if (stat.isSymbolicLink()) return { kind: 'symlink', dir }
  if (!stat.isDirectory()) return { kind: 'foreign', dir }
  const stamp = readStamp(join(dir, STAMP_FILE))
  if (stamp === undefined) return { kind: 'foreign', dir }
  const edited: string[] = []
  for (const [name, expected] of Object.entries(stamp.files)) {
    const path = join(dir, name)
    const entry = lstatOrUndefined(path)
    if (entry === undefined) edited.push(`${name} (deleted)`)
    else if (!entry.isFile()) edited.push(`${name} (not a regular file)`)
    else if (hash(readFileSync(path, 'utf8')) !== expected) edited.push(name)
  }
  for (const name of readdirSync(dir)) {
    if (name !== STAMP_FILE && !Object.hasOwn(stamp.files, name)) edited.push(`${name} (added)`)
  }
  return { kind: 'installed', dir, stamp, edited }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

/** The stamp, or undefined when there is none or it is not ours. */
function readStamp(path: string): PresetStamp | undefined {
  const entry = lstatOrUndefined(path)
  if (entry === undefined || !entry.isFile()) return undefined
  try {
    const stamp = JSON.parse(readFileSync(path, 'utf8')) as Partial<PresetStamp>
    if (typeof stamp.package !== 'string' || typeof stamp.files !== 'object' || stamp.files === null) return undefined
    return stamp as PresetStamp
  } catch {
    return undefined
  }
}

/** Why a preset directory may not be replaced or removed, or undefined when it may. */
function refusal(state: PresetState, force: boolean): string | undefined {
  if (state.kind === 'symlink') return `${state.dir} is a symlink; dsh ignores symlinked presets, and stablemem does not write through one (remove the link first)`
  if (force) return undefined
  if (state.kind === 'foreign') return `${state.dir} exists and was not written by stablemem preset install; rerun with --force to replace it`
  if (state.kind === 'installed' && state.edited.length > 0) return `${state.dir} was edited since stablemem wrote it (${state.edited.join(', ')}); rerun with --force to replace it, or see stablemem preset diff`
  return undefined
}

/** The outcome of `installPreset`. */
export type InstallOutcome = 'installed' | 'updated' | 'unchanged'

/**
 * Writes the preset into `$home/.agent-presets/stablemem/`. Unchanged when an unedited copy of the
 * same bytes is there; refuses an edited or foreign copy unless `force`, and a symlink always.
 * `validate` (dsh's own discovery, when available) checks the new copy before it replaces the old.
 */
export async function installPreset(home: string, source: PresetSource, options: { force: boolean, validate?: (root: string) => Promise<string | undefined> }): Promise<InstallOutcome> {
  checkHome(home)
  const state = inspectPreset(home)
  const why = refusal(state, options.force)
  if (why !== undefined) throw new Error(why)
  const files = Object.fromEntries(Object.entries(source.files).map(([name, text]) => [name, hash(text)]))
  if (state.kind === 'installed' && state.edited.length === 0 && sameFiles(state.stamp.files, files)) return 'unchanged'
  const { name, version } = packageIdentity()
  const stamp: PresetStamp = { package: name, version, base: source.base, files }
  const root = presetRoot(home)
  mkdirSync(root, { recursive: true })
  // A scratch root whose name dsh's discovery skips (it starts with a dot), holding the new copy
  // under its real id, so dsh's discovery can check it exactly where it will be read.
  const scratch = join(root, `.stablemem-install-${process.pid}`)
  rmSync(scratch, { recursive: true, force: true })
  try {
    const fresh = join(scratch, PRESET_ID)
    mkdirSync(fresh, { recursive: true })
    for (const [file, text] of Object.entries(source.files)) writeFileSync(join(fresh, file), text)
    writeFileSync(join(fresh, STAMP_FILE), `${JSON.stringify(stamp, null, 2)}\n`)
    const problem = await options.validate?.(scratch)
    if (problem !== undefined) throw new Error(`the preset would not load in dsh: ${problem}`)
    const old = join(scratch, 'old')
    if (state.kind !== 'absent') renameSync(state.dir, old)
    renameSync(fresh, state.dir)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  return state.kind === 'absent' ? 'installed' : 'updated'
}

function sameFiles(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key])
}

/** Removes the installed copy; refuses an edited or foreign one unless `force`, and a symlink always. */
export function uninstallPreset(home: string, options: { force: boolean }): 'removed' | 'absent' {
  checkHome(home)
  const state = inspectPreset(home)
  if (state.kind === 'absent') return 'absent'
  const why = refusal(state, options.force)
  if (why !== undefined) throw new Error(why)
  rmSync(state.dir, { recursive: true, force: true })
  return 'removed'
}

/** One preset as dsh's discovery lists it. */
export interface DiscoveredPreset {
  id: string
  name?: string
  broken?: string
}

/**
 * dsh's own preset discovery (`scanRoot` of `@deepseek-ai/dsh-agent-presets`) from the dsh
 * installation linked into the home, or undefined when there is none.
 */
export async function dshDiscovery(home: string): Promise<((root: string) => Promise<DiscoveredPreset[]>) | undefined> {
  let resolved: string
  try {
    resolved = createRequire(join(home, 'profiles', 'package.json')).resolve('@deepseek-ai/dsh-agent-presets')
  } catch {
    return undefined
  }
  const mod = await import(pathToFileURL(resolved).href) as { scanRoot?: (root: { path: string, trust: string }) => Promise<DiscoveredPreset[]> }
  const scan = mod.scanRoot
  if (typeof scan !== 'function') return undefined
  return (root) => scan({ path: root, trust: 'user' })
}

/** A line diff of two texts: `-` removed, `+` added, two lines of context, `…` where unchanged lines are left out. */
export function lineDiff(before: string, after: string): string[] {
  const a = before.split('\n')
  const b = after.split('\n')
  // Longest common subsequence lengths from the end; the files are a few hundred lines.
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
  }
  const ops: string[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push(`  ${a[i]}`)
      i++
      j++
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) {
      ops.push(`+ ${b[j]}`)
      j++
    } else {
      ops.push(`- ${a[i]}`)
      i++
    }
  }
  const changed = (k: number) => ops[k] !== undefined && !ops[k]!.startsWith('  ')
  const shown = ops.map((_, k) => [-2, -1, 0, 1, 2].some((d) => changed(k + d)))
  const out: string[] = []
  ops.forEach((line, k) => {
    if (shown[k]) out.push(line)
    else if (k > 0 && shown[k - 1]) out.push('…')
  })
  return out
}

/**
 * The profiles of a dsh home that list this package as a bundle. The preset's kernel row needs
 * the host row in the profile that runs dsh web; without it sessions on the preset cannot start.
 */
export function profilesWithHostRow(home: string): string[] {
  const profiles = join(home, 'profiles')
  let names: string[]
  try {
    names = readdirSync(profiles)
  } catch {
    return []
  }
  const { name } = packageIdentity()
  return names.filter((profile) => {
    try {
      const manifest = JSON.parse(readFileSync(join(profiles, profile, 'package.json'), 'utf8')) as { dsh?: { profile?: { bundles?: unknown } } }
      const bundles = manifest.dsh?.profile?.bundles
      return Array.isArray(bundles) && bundles.includes(name)
    } catch {
      return false
    }
  })
}

