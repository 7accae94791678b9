/**
 * Temporary folders for tests, removed when the test process exits, so a run of the suite leaves
 * nothing behind in the system temp folder (it used to leave several hundred stores per run).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const created: string[] = []
process.on('exit', () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true })
})

/** A fresh folder `<prefix>-XXXXXX` under the system temp folder, removed when the process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  created.push(dir)
  return dir
}

/** Removes a folder made by someone else (a child process, the demo) when this process exits. */
export function removeAtExit(dir: string): void {
  created.push(dir)
}
