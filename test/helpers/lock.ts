/**
 * One process at a time for work that several test processes may start at once and that must
 * run once (building `dist/`, installing the e2e dsh): a lock folder made with `mkdir`, holding
 * the holder's process id, so a lock left by a process that died is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** Blocks the thread for `ms` (the lock wait; nothing else runs in the test meanwhile). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/** Whether process `pid` still runs. */
function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

/**
 * Runs `work` while holding the lock folder `lock`, waiting up to 10 minutes for another holder;
 * `work` should first check whether the holder before it already did the job. `what` names the
 * work in the timeout error.
 */
export function underLock<T>(lock: string, what: string, work: () => T): T {
  const deadline = Date.now() + 10 * 60_000
  for (;;) {
    try {
      mkdirSync(lock, { recursive: false })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') { mkdirSync(dirname(lock), { recursive: true }); continue }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      let holder = 0
      try { holder = Number(readFileSync(join(lock, 'pid'), 'utf8')) } catch { /* not written yet, or the lock is gone */ }
      if (holder > 0 && !alive(holder)) rmSync(lock, { recursive: true, force: true }) // its holder died
      if (Date.now() > deadline) throw new Error(`${what}: still held by process ${holder} after 10 minutes (lock ${lock})`)
      sleep(250)
      continue
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid))
      return work()
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
}
