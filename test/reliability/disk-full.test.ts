/**
 * A full disk is a passing failure, not damage: saving fails visibly (tool error, stats, context
 * line), recall keeps working, `doctor` says the disk is full, and once space is freed the next
 * save works without a restart. The disk is a real 2 MiB tmpfs mounted for the test (this needs
 * root, which CI has; elsewhere the test says it could not run).
 */
import { execFileSync } from 'node:child_process'
import { appendFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type * as PluginModule from '../../lib/index.ts'
import { boot, injected, reply, requestTexts, textOf, toolCall } from '../helpers/harness.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'
import { tempDir } from '../helpers/temp.ts'

/** A small tmpfs of its own, or undefined where this process may not mount. */
function smallDisk(): { dir: string, release: () => void } | undefined {
  const dir = tempDir('stablemem-full')
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir], { stdio: 'ignore' })
  } catch {
    return undefined
  }
  return { dir, release: () => execFileSync('umount', ['-l', dir]) }
}

/** Appends to a filler file until the disk refuses; returns its path. */
function fill(dir: string): string {
  const filler = join(dir, 'filler')
  const chunk = Buffer.alloc(16 << 10, 1)
  for (;;) {
    try {
      appendFileSync(filler, chunk)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return filler
      throw error
    }
  }
}

interface Outcome {
  whileFull: { toolText: string, injectedText: string, contextText: string, stats: Record<string, unknown>, doctor: string }
  afterFreed: { toolText: string, stats: Record<string, unknown>, recalled: string[] }
}

async function fullThenFreed(dir: string, module?: typeof PluginModule): Promise<Outcome> {
  const path = join(dir, 'memory.db')
  const h = await boot({ path }, [toolCall('c1', 'stablemem_commit', { text: 'billing 服务端口 8499' }), reply('ok')], { module })
  try {
    await h.turn('记住 billing 端口 8499')
    const filler = fill(dir)
    h.script(toolCall('c2', 'stablemem_commit', { text: 'gateway 10.0.0.1 是出口网关'.repeat(40) }), reply('ok'), reply('8499'))
    await h.turn('再记住网关')
    const toolText = requestTexts(h.adapter.requests.at(-1)!).join('\n')
    await h.turn('billing 端口是多少？')
    const last = h.adapter.requests.at(-1)!
    const whileFull = {
      toolText,
      injectedText: injected(last).map(textOf).join(''),
      contextText: requestTexts(last).join('\n'),
      stats: await h.ctx.stablemem.stats() as unknown as Record<string, unknown>,
      doctor: (await runCli(['doctor', '--db', path])).stdout,
    }
    rmSync(filler)
    h.script(toolCall('c3', 'stablemem_commit', { text: 'gateway 10.0.0.1 是出口网关' }), reply('ok'))
    await h.turn('再记住网关')
    const afterFreed = {
      toolText: requestTexts(h.adapter.requests.at(-1)!).join('\n'),
      stats: await h.ctx.stablemem.stats() as unknown as Record<string, unknown>,
      recalled: (await h.ctx.stablemem.recall('出口网关', { recordAccess: false }).catch(() => [])).map((hit) => hit.text),
    }
    return { whileFull, afterFreed }
  } finally {
    await h.dispose()
  }
}

t.test('disk full: saving fails visibly, recall goes on, doctor says so, and saving recovers once space is freed', async (t) => {
  const disk = smallDisk()
  if (disk === undefined) {
    t.pass('not checked: this process may not mount a tmpfs')
    return
  }
  t.teardown(disk.release)
  const { whileFull, afterFreed } = await fullThenFreed(disk.dir)
  t.match(whileFull.toolText, /long-term memory could not write just now \(the disk is full\); nothing stored was lost, and the next call tries again/)
  t.match(whileFull.injectedText, /8499/, 'recall still injects while the disk is full')
  t.match(whileFull.contextText, /The last save failed \(the disk is full\)/)
  t.match(whileFull.stats, { available: true, transientError: 'the disk is full' })
  t.ok((whileFull.stats.transientFailures as number) >= 1)
  t.notMatch(whileFull.stats.error ?? '', /damaged/)
  t.match(whileFull.doctor, /^fail  space +only \d+ KiB free in /m)
  t.match(whileFull.doctor, /^fail  write test +cannot write in .* \(the disk is full, ENOSPC\)/m)
  t.notMatch(whileFull.doctor, /no problems found/)
  t.match(afterFreed.toolText, /Saved to long-term memory as blk_/)
  t.match(afterFreed.stats, { available: true })
  t.equal(afterFreed.stats.transientError, undefined, 'the trouble is over')
  t.same(afterFreed.recalled, ['gateway 10.0.0.1 是出口网关'])
})

t.test('mutation: treating a full disk as damage turns memory off for good', async (t) => {
  const disk = smallDisk()
  if (disk === undefined) {
    t.pass('not checked: this process may not mount a tmpfs')
    return
  }
  t.teardown(disk.release)
  const m = mutant({ file: 'store/failure.ts', from: 'new Set([11 /* CORRUPT */, 26 /* NOTADB */])', to: 'new Set([11, 26, 13 /* FULL, as before */, 10 /* IOERR */])' })
  t.teardown(() => m.remove())
  const { afterFreed } = await fullThenFreed(disk.dir, await m.load<typeof PluginModule>('index.ts'))
  t.match(afterFreed.stats, { available: false }, 'memory stayed off after space was freed')
  t.notMatch(afterFreed.toolText, /Saved to long-term memory/)
})
