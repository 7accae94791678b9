/**
 * A turn while another real process holds the store's write lock (an import paused with Ctrl-Z,
 * a long backfill): recall reads the WAL without the lock, the notes are injected, and the access
 * counts wait in memory until the lock is free instead of making the turn wait and fail.
 */
import t from 'tap'
import type * as PluginModule from '../../lib/index.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, injected, reply, tempStorePath, textOf } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { startFixture } from './child.ts'

const NOTE = 'billing 服务端口 8499'

async function turnUnderLock(module?: typeof PluginModule): Promise<{ injectedText: string, during: Record<string, unknown>, after: Record<string, unknown>, accessCount: number | undefined }> {
  const path = tempStorePath('locked')
  const seed = new BlockStore(path)
  const { id } = seed.commit({ text: NOTE })
  seed.close()
  const h = await boot({ path }, [reply('8499'), reply('8499')], { module })
  const holder = startFixture('locker', [path])
  try {
    await holder.waitFor((l) => l === 'locked')
    await h.turn('billing 的端口是多少？')
    const injectedText = injected(h.adapter.requests.at(-1)!).map(textOf).join('')
    const during = await h.ctx.stablemem.stats() as unknown as Record<string, unknown>
    holder.proc.stdin.write('release\n')
    await holder.waitFor((l) => l === 'released')
    await h.turn('billing 端口是多少？')
    const after = await h.ctx.stablemem.stats() as unknown as Record<string, unknown>
    const accessCount = (await h.ctx.stablemem.get(id))?.accessCount
    if (h.errors.length > 0) throw h.errors[0]
    return { injectedText, during, after, accessCount }
  } finally {
    holder.proc.stdin.end()
    await holder.exited
    await h.dispose()
  }
}

t.test('a turn under another process\'s write lock still injects its notes; the access counts are written once the lock is free', async (t) => {
  const { injectedText, during, after, accessCount } = await turnUnderLock()
  t.match(injectedText, /8499/, 'the note is injected')
  t.match(during, { available: true, recallFailures: 0, injections: 1, accessDeferred: 1, accessPending: 1 })
  t.match(after, { available: true, recallFailures: 0, injections: 2, accessDeferred: 1, accessPending: 0 })
  t.equal(accessCount, 2, 'the deferred access and the later one are both counted')
})

t.test('mutation: recording accesses the blocking way waits for the lock and defers nothing', async (t) => {
  const m = mutant({ file: 'service.ts', from: 'this.access.record(ids)', to: 'store.recordAccess(ids)' })
  t.teardown(() => m.remove())
  const { during } = await turnUnderLock(await m.load<typeof PluginModule>('index.ts'))
  t.not(during.accessDeferred, 1, 'the turn waited for the lock (5 s) instead of deferring')
})

t.test('deferred counts are bounded: past the limit the oldest are dropped and counted', async (t) => {
  const { AccessRecorder, MAX_DEFERRED_NOTES } = await import('../../lib/store/access.ts')
  const path = tempStorePath('bounded')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const holder = startFixture('locker', [path])
  await holder.waitFor((l) => l === 'locked')
  const recorder = new AccessRecorder(store)
  t.equal(recorder.record(Array.from({ length: MAX_DEFERRED_NOTES + 5 }, (_, i) => `blk_${String(i).padStart(24, '0')}`)), false)
  t.same(recorder.stats(), { accessDeferred: 1, accessDropped: 5, accessPending: MAX_DEFERRED_NOTES })
  holder.proc.stdin.end()
  await holder.exited
  t.equal(recorder.record([]), true, 'the next recording writes the waiting counts')
  t.same(recorder.stats(), { accessDeferred: 1, accessDropped: 5, accessPending: 0 })
})
