/**
 * The second phase of a large forget in a running agent (issue 30): `ctx.stablemem.forget` returns
 * once the notes are invisible, and the service scrubs their bytes in the background within
 * seconds; `wait: true` returns with them gone; a scrub left by a process that exited is finished
 * when the plugin opens the store. Real plugin, real agent loop, real store files; the bytes are
 * searched for in the file, its WAL and its shared memory. Mutation checks: without the service's
 * two hooks the bytes stay.
 */
import { existsSync, readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import type * as plugin from '../../lib/index.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { DEFER_SCRUB_FROM } from '../../lib/store/forget.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, tempStorePath, type BootOptions, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const SECRET = 'The launch code for project Quorvantile is 8842-delta-Prismethane'
/** The note's words as stored and as indexed (the index stems them, quorvantil: a Latin needle is its first eight letters). */
const NEEDLES = ['quorvant', 'prismeth', 'Quorvantile', 'Prismethane', '8842-delta']

function scan(path: string): string[] {
  const found: string[] = []
  for (const suffix of ['', '-wal', '-shm']) {
    if (!existsSync(path + suffix)) continue
    const bytes = readFileSync(path + suffix)
    for (const needle of NEEDLES) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.push(`${needle} in ${suffix || 'db'}`)
  }
  return found
}

/** A store large enough for a forget of its `doomed` scene to take two phases. */
function bigStore(): string {
  const path = tempStorePath('scrub-bg')
  const store = new BlockStore(path)
  store.commitMany(Array.from({ length: DEFER_SCRUB_FROM + 200 }, (_, i) => ({ text: `kept note ${i}: host h${i} on port ${10000 + (i % 50000)}`, scene: 'kept' })))
  store.commitMany(Array.from({ length: 300 }, (_, i) => ({ text: `doomed note ${i}: temp job d${i}`, scene: 'doomed' })))
  store.commit({ text: SECRET, scene: 'doomed' })
  store.close()
  return path
}

/** Resolves when `done()` holds, checking every 50 ms; false if `ms` pass first. */
async function until(done: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await done()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return done()
}

async function start(t: Test, path: string, options: BootOptions = {}): Promise<Harness> {
  const h = await boot({ path }, [], options)
  t.teardown(() => h.dispose())
  return h
}

const pending = async (h: Harness) => {
  const stats = await h.ctx.stablemem.stats()
  return stats.available ? stats.pendingScrubs?.forgets ?? -1 : -1
}

t.test('a large forget returns with the notes invisible; the service scrubs the bytes in the background', async (t) => {
  const path = bigStore()
  const h = await start(t, path)
  const result = await h.ctx.stablemem.forget({ scene: 'doomed' })
  t.equal(result.deleted.length, 301)
  t.ok(result.bytesPending, 'returned before the scrub')
  t.equal(await h.ctx.stablemem.get(blockId(SECRET)), undefined, 'get no longer finds it')
  t.same((await h.ctx.stablemem.recall('Quorvantile launch code')).filter((hit) => hit.text.includes('Quorvantile')), [], 'nor does recall')
  t.ok(await until(async () => await pending(h) === 0, 15_000), 'the scrub finished by itself')
  t.same(scan(path), [], 'and no byte of the note is left in the db, WAL or shm')
})

t.test('wait: true returns with the bytes gone', async (t) => {
  const path = bigStore()
  const h = await start(t, path)
  const result = await h.ctx.stablemem.forget({ scene: 'doomed' }, { wait: true })
  t.notOk(result.bytesPending)
  t.equal(await pending(h), 0)
  t.same(scan(path), [], 'nothing left at return')
})

t.test('a scrub left by a process that exited is finished when the plugin opens the store', async (t) => {
  const path = bigStore()
  const other = new BlockStore(path)
  t.ok(other.forget({ scene: 'doomed' }).bytesPending)
  other.close() // exits without scrubbing
  t.ok(scan(path).length > 0, 'the old index segments still hold the words')
  const h = await start(t, path)
  t.ok(await until(async () => await pending(h) === 0, 15_000), 'the service finished it')
  t.same(scan(path), [])
})

t.test('mutation checks: without the service\'s hooks the bytes stay', async (t) => {
  const m = mutant(
    { file: 'service.ts', from: 'if (result.bytesPending) this.scrubLater()', to: '' },
    { file: 'service.ts', from: 'if (store.pendingScrubs().forgets > 0) this.scrubLater()', to: '' },
  )
  t.teardown(() => m.remove())
  const module = await m.load<typeof plugin>('index.ts')
  const path = bigStore()
  const h = await start(t, path, { module })
  t.ok((await h.ctx.stablemem.forget({ scene: 'doomed' })).bytesPending)
  // The real service finishes this store's scrub in about a tenth of a second; three seconds is thirty times that.
  t.notOk(await until(async () => await pending(h) === 0, 3_000), 'after a forget nothing scrubs')
  t.ok(scan(path).length > 0, 'the words are still on disk')
  await h.dispose()
  const h2 = await start(t, path, { module })
  t.notOk(await until(async () => await pending(h2) === 0, 3_000), 'nor at the next open')
})
