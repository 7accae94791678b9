/**
 * Getting the real dsh CLI for the end-to-end tests: installed once into `.cache/dsh-e2e/` inside
 * this package (git-ignored, rebuilt by CI) with the installer the package ships, and reused while
 * its pinned versions match. Also packs this package with `npm pack` and unpacks the tarball where a dsh
 * profile resolves it, beside the `@deepseek-ai/*` copies dsh links into every profile.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { MARKER_FILE, installDsh } from '../lib/cli/dsh-installer.ts'
import { ensureBuilt } from '../test/helpers/build.ts'
import { underLock } from '../test/helpers/lock.ts'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This package's root. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url))
/** Where the dsh CLI is installed for the tests. */
export const DSH_CACHE = join(PACKAGE_ROOT, '.cache', 'dsh-e2e')

/**
 * The `bin` folder of the cached dsh install (dsh, Node 24 and pnpm), installed first when needed
 * by the same installer users run (`stablemem install-dsh`, from `dsh-install/`: dsh 0.1.0-rc.8
 * with the HMR plugin pinned to a release that still has `registerConfig`). To change the pinned
 * set, edit `dsh-install/package.json`, run `npm install` in a copy of that folder with its lock,
 * and copy the new package-lock.json back.
 */
export function ensureDsh(log: (line: string) => void): string {
  // One e2e file installs at a time (they run two at once); the others then reuse its install.
  const result = underLock(join(PACKAGE_ROOT, '.cache', 'dsh-e2e.lock'), 'the e2e dsh install', () => {
    const marker = join(DSH_CACHE, MARKER_FILE)
    if (existsSync(DSH_CACHE) && !existsSync(marker)) rmSync(DSH_CACHE, { recursive: true, force: true }) // an install by an older version of this file
    return installDsh(DSH_CACHE, { log })
  })
  log(result.outcome === 'unchanged' ? `reusing the dsh install in ${DSH_CACHE}` : `installed dsh into ${DSH_CACHE}`)
  return result.bin
}

/** Builds this package if `dist/` is stale and packs it; returns the tarball path in `dir`. */
export function packThisPackage(dir: string): string {
  ensureBuilt()
  const out = execFileSync('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], { cwd: PACKAGE_ROOT, encoding: 'utf8' })
  return join(dir, out.trim().split('\n').at(-1)!)
}

/**
 * Unpacks the tarball as `node_modules/<name>` of a profile directory, so a patch row
 * `name: <name>` resolves it from the profile, and installs its own runtime dependencies (never
 * its peers: those must be the `@deepseek-ai/*` copies dsh links into `profiles/node_modules`).
 */
export function installIntoProfile(tarball: string, profileDir: string): string {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string }
  const target = join(profileDir, 'node_modules', pkg.name)
  rmSync(target, { recursive: true, force: true })
  mkdirSync(target, { recursive: true })
  execFileSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'])
  // The same command the README gives users: runtime dependencies only, no second copy of dsh.
  execFileSync('npm', ['install', '--omit=dev', '--omit=peer', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: target, stdio: ['ignore', 'ignore', 'inherit'] })
  return target
}
