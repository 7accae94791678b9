/**
 * The built package (`dist/`) for the tests that run or pack it, built only when it is older
 * than the sources. CI builds before the suite, and the test files that need `dist/` used to run
 * `npm run build` each (10–30 s of tsc apiece, two of them at once on two jobs, writing the same
 * files); now the first one that finds `dist/` stale builds it under a lock and the others reuse it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

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

/** Blocks the thread for `ms` (the lock wait; nothing else runs in the test meanwhile). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/** Whether process `pid` still runs. */
function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

/** Runs `npm run build` unless `dist/` is already current; one test process builds at a time. */
export function ensureBuilt(): void {
  const deadline = Date.now() + 10 * 60_000
  for (;;) {
    if (fresh()) return
    try {
      mkdirSync(lock, { recursive: false })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') { mkdirSync(join(root, '.cache'), { recursive: true }); continue }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      let holder = 0
      try { holder = Number(readFileSync(join(lock, 'pid'), 'utf8')) } catch { /* not written yet, or the lock is gone */ }
      if (holder > 0 && !alive(holder)) rmSync(lock, { recursive: true, force: true }) // its builder died
      if (Date.now() > deadline) throw new Error(`dist/ still being built by process ${holder} after 10 minutes (lock ${lock})`)
      sleep(250)
      continue
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid))
      if (!fresh()) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }) // tsc's errors come on stdout, in the thrown error
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
    return
  }
}
