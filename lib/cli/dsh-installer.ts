/**
 * Installs dsh itself at the versions this package is tested with. `npm i -g @deepseek-ai/dsh`
 * takes the `latest` tag, which does not install, and a plain install of 0.1.0-rc.8 pulls an HMR
 * plugin release the launcher cannot use. The package therefore ships the install it is tested
 * against (`dsh-install/package.json` and its lock: dsh 0.1.0-rc.8, the HMR plugin pinned, Node 24
 * for dsh, pnpm for `dsh plugin`), and this writes both into a prefix the user names, runs
 * `npm install` there, and adds `<prefix>/bin/dsh`, a launcher that runs dsh on that Node 24.
 * `npm install`, not `npm ci`: the lock leaves out platform-specific optional packages the
 * registry does not serve, and `npm ci` refuses such a lock.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

/** The install this package ships. */
const INSTALL_DIR = new URL('../../dsh-install/', import.meta.url)

/** The marker the installer leaves in the prefix: which install it holds. */
export const MARKER_FILE = '.dsh-stablemem-install.json'

/** The shipped install: its package.json and lock, as text. */
export function shippedInstall(): { manifest: string, lock: string } {
  return {
    manifest: readFileSync(new URL('package.json', INSTALL_DIR), 'utf8'),
    lock: readFileSync(new URL('package-lock.json', INSTALL_DIR), 'utf8'),
  }
}

/** The dsh version the shipped install pins. */
export function pinnedDshVersion(): string {
  const manifest = JSON.parse(shippedInstall().manifest) as { dependencies: Record<string, string> }
  return manifest.dependencies['@deepseek-ai/dsh']!
}

/** A wrong prefix (a file, or a folder holding something else): a usage error, exit code 2. */
export class PrefixError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PrefixError'
  }
}

/** What `installDsh` did. */
export interface InstallResult {
  prefix: string
  /** `<prefix>/bin/dsh`. */
  launcher: string
  /** `<prefix>/node_modules/.bin`: dsh, node and pnpm. */
  bin: string
  outcome: 'installed' | 'unchanged'
}

/** The launcher script: dsh on the Node 24 and pnpm of the prefix, whatever Node the caller's PATH has. */
function launcher(prefix: string): string {
  const quoted = `'${prefix.replaceAll('\'', '\'\\\'\'')}'`
  return [
    '#!/bin/sh',
    '# dsh installed by dsh-stablemem (stablemem install-dsh): the pinned versions in the',
    '# node_modules beside this folder, run on the Node 24 installed there (pnpm, for',
    '# `dsh plugin`, comes from there too).',
    `dir=${quoted}`,
    'PATH="$dir/node_modules/.bin:$PATH"',
    'export PATH',
    'exec "$dir/node_modules/.bin/dsh" "$@"',
    '',
  ].join('\n')
}

/**
 * Installs the pinned dsh into `prefix`. A prefix that already holds this exact install is left
 * as it is; an existing file, or a non-empty folder that holds something else, is refused. If
 * `npm install` fails, what this call created is removed again.
 */
export function installDsh(prefixArg: string, options: { log?: (line: string) => void, env?: NodeJS.ProcessEnv } = {}): InstallResult {
  const prefix = resolve(prefixArg)
  const { manifest, lock } = shippedInstall()
  const stamp = `${createHash('sha256').update(manifest).update('\0').update(lock).digest('hex')}\n`
  const bin = join(prefix, 'node_modules', '.bin')
  const result = { prefix, launcher: join(prefix, 'bin', 'dsh'), bin }
  let created = false
  if (existsSync(prefix)) {
    if (!statSync(prefix).isDirectory()) throw new PrefixError(`${prefix} is a file, not a folder for dsh`)
    const marker = join(prefix, MARKER_FILE)
    if (existsSync(marker) && readFileSync(marker, 'utf8') === stamp && existsSync(join(bin, 'dsh')) && existsSync(result.launcher)) {
      return { ...result, outcome: 'unchanged' }
    }
    const entries = readdirSync(prefix)
    if (entries.length > 0 && !entries.includes(MARKER_FILE)) {
      throw new PrefixError(`${prefix} is not empty and holds no dsh installed by stablemem; name a new or empty folder`)
    }
  } else {
    mkdirSync(prefix, { recursive: true })
    created = true
  }
  options.log?.(`installing @deepseek-ai/dsh@${pinnedDshVersion()} (pinned, with Node 24 and pnpm) into ${prefix} …`)
  rmSync(join(prefix, MARKER_FILE), { force: true })
  writeFileSync(join(prefix, 'package.json'), manifest)
  writeFileSync(join(prefix, 'package-lock.json'), lock)
  // Options npx passes down (the package it ran, --yes) must not reach this install.
  const env = Object.fromEntries(Object.entries(options.env ?? process.env).filter(([key]) => !/^npm_config_(package|yes|call)$/i.test(key)))
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: prefix, env, stdio: ['ignore', 'inherit', 'inherit'] })
  if (npm.error !== undefined || npm.status !== 0) {
    if (created) rmSync(prefix, { recursive: true, force: true })
    const why = npm.error !== undefined ? npm.error.message : `exit code ${npm.status ?? npm.signal}`
    throw new Error(`npm install failed in ${prefix} (${why})${created ? '; the folder was removed again' : ''}`)
  }
  mkdirSync(join(prefix, 'bin'), { recursive: true })
  writeFileSync(result.launcher, launcher(prefix))
  chmodSync(result.launcher, 0o755)
  writeFileSync(join(prefix, MARKER_FILE), stamp)
  return { ...result, outcome: 'installed' }
}
