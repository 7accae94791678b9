/**
 * The built package (`dist/`) for the tests that run or pack it, built only when it is older
 * than the sources. CI builds before the suite, and the test files that need `dist/` used to run
 * `npm run build` each (10–30 s of tsc apiece, two of them at once on two jobs, writing the same
 * files); now the first one that finds `dist/` stale builds it under a lock and the others reuse it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { underLock } from './lock.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const lock = join(root, '.cache', 'build.lock')

/** Every file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? sources(join(dir, e.name)) : [join(dir, e.name)])
}

/** The file under `dist/` that `npm run build` makes from `source` (a `.ts` becomes `.js`; static files are copied). */
function output(source: string): string {
  return join(root, 'dist', relative(join(root, 'lib'), source).replace(/\.ts$/, '.js'))
}

/** Whether every file under lib/ has its `dist/` output, written after the source and the configurations. */
function fresh(): boolean {
  const configs = Math.max(...['tsconfig.json', 'tsconfig.build.json'].map((f) => statSync(join(root, f)).mtimeMs))
  return sources(join(root, 'lib')).every((source) => {
    const out = output(source)
    if (!existsSync(out)) return false
    const built = statSync(out).mtimeMs
    return built >= statSync(source).mtimeMs && built >= configs
  })
}

/** Runs `npm run build` unless `dist/` is already current; one test process builds at a time. */
export function ensureBuilt(): void {
  if (fresh()) return
  underLock(lock, 'dist/ being built', () => {
    if (!fresh()) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }) // tsc's errors come on stdout, in the thrown error
  })
}
