/**
 * Getting the real dsh CLI for the end-to-end test: installed once into `.cache/dsh-e2e/` inside
 * this package (git-ignored, rebuilt by CI from this file alone) and reused while its pinned
 * versions match. Also packs this package with `npm pack` and unpacks the tarball where a dsh
 * profile resolves it, beside the `@deepseek-ai/*` copies dsh links into every profile.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This package's root. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url))
/** Where the dsh CLI is installed. */
export const DSH_CACHE = join(PACKAGE_ROOT, '.cache', 'dsh-e2e')
/**
 * The lock file of that install, kept in the repository. Regenerate it after changing
 * `DSH_INSTALL`: delete `.cache/dsh-e2e`, run `npm install` there with the new package.json, and
 * copy its package-lock.json here.
 */
export const DSH_LOCK = join(PACKAGE_ROOT, 'e2e', 'dsh-install.lock.json')

/**
 * The dsh install (its package.json): the 0.1.0-rc.8 set that installs together, with Node 24 for the CLI, and the
 * HMR plugin pinned to a release that still has `registerConfig` (1.0.19 removed it and the
 * launcher calls it; see ../shared/research/dsh-contract.md §0).
 */
export const DSH_INSTALL = {
  name: 'stablemem-dsh-e2e-cache',
  private: true,
  type: 'module',
  dependencies: { 'node': '24.21.0', '@deepseek-ai/dsh': '0.1.0-rc.8' },
  overrides: { '@deepseek-ai/cordis-plugin-hmr': '1.0.16' },
}

/** The `bin` folder of the cached install (dsh and Node 24), installing first when needed. */
export function ensureDsh(log: (line: string) => void): string {
  const spec = `${JSON.stringify(DSH_INSTALL, null, 2)}\n`
  const stamp = join(DSH_CACHE, '.installed')
  const bin = join(DSH_CACHE, 'node_modules', '.bin')
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === spec && existsSync(join(bin, 'dsh'))) {
    log(`reusing the dsh install in ${DSH_CACHE}`)
    return bin
  }
  log(`installing @deepseek-ai/dsh@0.1.0-rc.8 into ${DSH_CACHE} (first time: several minutes)`)
  mkdirSync(DSH_CACHE, { recursive: true })
  rmSync(stamp, { force: true })
  writeFileSync(join(DSH_CACHE, 'package.json'), spec)
  // The committed lock pins every transitive package: the install is reproducible and skips
  // npm's dependency resolution, which is most of a cold install's time (about 30 minutes here
  // without it, under a minute with it and a warm npm cache). `npm install`, not `npm ci`: the
  // lock leaves out platform-specific optional packages that the registry does not have, and
  // `npm ci` refuses such a lock.
  copyFileSync(DSH_LOCK, join(DSH_CACHE, 'package-lock.json'))
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: DSH_CACHE, stdio: ['ignore', 'ignore', 'inherit'], timeout: 30 * 60_000 })
  writeFileSync(stamp, spec)
  return bin
}

/** Builds and packs this package; returns the tarball path in `dir`. */
export function packThisPackage(dir: string): string {
  execFileSync('npm', ['run', 'build'], { cwd: PACKAGE_ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
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
