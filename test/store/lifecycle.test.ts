/**
 * Disposal and reopen through the plugin: disposing the fiber closes the SQLite handle (checked
 * by the process's open file descriptors), and remounting on the same file finds everything.
 */
import { existsSync, readdirSync, readlinkSync } from 'node:fs'
import t from 'tap'
import * as plugin from '../../lib/index.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { boot, injected, reply, tempStorePath, textOf, type BootOptions } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Open file descriptors of this process on the store file or its WAL/SHM companions. */
function openHandles(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try { return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path) } catch { return false }
  }).length
}

/** Mounts, commits, disposes; returns the handles open before and after disposal. */
async function mountCommitDispose(path: string, options: BootOptions = {}): Promise<{ before: number, after: number }> {
  const h = await boot({ path }, [], options)
  await h.ctx.stablemem.commit({ text: 'postgres 主库 10.0.0.5:5432', source: 'ops' })
  await h.ctx.stablemem.commit({ text: 'postgres 从库 10.0.0.6:5432' })
  await h.ctx.stablemem.link({ sourceKind: 'block', sourceId: blockId('postgres 从库 10.0.0.6:5432'), targetKind: 'block', targetId: blockId('postgres 主库 10.0.0.5:5432'), type: 'replica_of' })
  const before = openHandles(path)
  await h.dispose()
  return { before, after: openHandles(path) }
}

const procFs = existsSync('/proc/self/fd')

t.test('dispose closes the handle; remounting the same file finds everything', { skip: procFs ? false : 'needs /proc' }, async (t) => {
  const path = tempStorePath()
  const { before, after } = await mountCommitDispose(path)
  t.ok(before > 0, `${before} handle(s) open while mounted`)
  t.equal(after, 0, 'no handle left after dispose')
  const h = await boot({ path }, [reply('5432')])
  t.teardown(() => h.dispose())
  t.match(await h.ctx.stablemem.stats(), { available: true, blocks: 2, edges: 1 })
  t.match(await h.ctx.stablemem.get(blockId('postgres 主库 10.0.0.5:5432')), { source: 'ops' })
  await h.turn('postgres 主库 10.0.0.5 的端口？')
  t.match(textOf(injected(h.adapter.requests[0]!)[0]!), /> postgres 主库 10\.0\.0\.5:5432/, 'recalled in a turn after the remount')
})

t.test('mutation: without the close effect the handle outlives the fiber', { skip: procFs ? false : 'needs /proc' }, async (t) => {
  const m = mutant({ file: 'service.ts', from: "ctx.effect(() => () => this.close(), 'stablemem.close')", to: '' })
  t.teardown(() => m.remove())
  const { after } = await mountCommitDispose(tempStorePath(), { module: await m.load<typeof plugin>('index.ts') })
  t.ok(after > 0, `${after} handle(s) still open after dispose`)
})
