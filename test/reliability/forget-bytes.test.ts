/**
 * "Gone" means gone from the bytes: after `forget`, the raw bytes of the store file, its WAL and
 * its shared-memory file hold no trace of the note's text (English and Chinese, the sentence and
 * its distinctive tokens), while the store is still open (as in a running agent) and after it is
 * closed. Each part of the mechanism has a mutation check: without secure deletion, without the
 * index rewrite, or without the WAL checkpoint, the same scan finds the text.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import t, { type Test } from 'tap'
import type { BlockStore as BlockStoreType } from '../../lib/store/store.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant, type Edit } from '../helpers/mutant.ts'

type StoreClass = typeof BlockStoreType

const SECRET_EN = 'The launch code for project Zorblaxquux is 7719-alpha-Quintessa'
const SECRET_ZH = '机密：王小明的护照号码是E12345678，住在翠湖苑七栋'
/** What must not be found: the sentences and tokens only they contain (as stored, and as indexed). */
const NEEDLES = ['Zorblaxquux', 'zorblaxquux', '7719-alpha', 'quintessa', 'Quintessa', '护照号码', '翠湖苑', 'E12345678', 'e12345678', SECRET_ZH, SECRET_EN]

/** Which needles occur in the raw bytes of the file, its WAL and its shared-memory file. */
function scan(path: string): string[] {
  const found: string[] = []
  for (const suffix of ['', '-wal', '-shm']) {
    if (!existsSync(path + suffix)) continue
    const bytes = readFileSync(path + suffix)
    for (const needle of NEEDLES) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.push(`${needle} in ${suffix || 'db'}`)
  }
  return found
}

/**
 * A store with ordinary history around the secrets: filler notes before and after, tag updates
 * and access counts (which rewrite the secrets' rows), a supersede, an edge; then forget. Returns
 * what the scan finds before forgetting, right after (store open), and after closing.
 */
function scenario(Store: StoreClass, label: string): { before: string[], open: string[], closed: string[], path: string } {
  const path = tempStorePath(label)
  const store = new Store(path)
  const filler = (i: number) => ({ text: `filler note ${i}: service s${i} listens on port ${20000 + i}, 服务 ${i} 部署在 机房${i % 7}`, source: 'seed' })
  store.commitMany(Array.from({ length: 400 }, (_, i) => filler(i)))
  const en = store.commit({ text: SECRET_EN, source: 'user', scene: 'secret' }).id
  const zh = store.commit({ text: SECRET_ZH, source: 'user' }).id
  store.commit({ text: SECRET_EN, scene: 'secret-2', semanticType: 'Code' }) // rewrites the row with new tags
  store.recordAccess([en, zh, en])
  const newer = store.commit({ text: `${SECRET_EN} (confirmed)`, supersedes: en }).id
  store.link({ sourceKind: 'block', sourceId: zh, targetKind: 'scene', targetId: 'people', type: 'in' })
  store.commitMany(Array.from({ length: 400 }, (_, i) => filler(400 + i)))
  const before = scan(path)
  store.forget([en, zh, newer])
  const open = scan(path)
  store.commit({ text: 'a note written after the forget' }) // the agent goes on writing
  store.close()
  return { before, open, closed: scan(path), path }
}

t.test('after forget no byte of the note is left in the file, the WAL or the shared-memory file', async (t) => {
  const { before, open, closed, path } = scenario(BlockStore, 'bytes')
  t.ok(before.length >= 6, `the scan sees the notes while they are stored (${before.length} hits)`)
  t.same(open, [], 'nothing found while the store is still open')
  t.same(closed, [], 'nothing found after it is closed')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.same(store.integrityCheck(), ['ok'])
  t.equal(store.count(), 801)
})

t.test('forgetting everything (which drops the whole index) leaves no trace either, and the store works on', async (t) => {
  const path = tempStorePath('bytes-all')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 300 }, (_, i) => ({ text: `filler ${i} 服务 ${i}` })))
  store.commit({ text: SECRET_EN })
  store.commit({ text: SECRET_ZH })
  t.equal(store.forget({ all: true }).deleted.length, 302)
  t.same(scan(path), [])
  store.commit({ text: 'fresh start: gateway port 8080' })
  t.equal(store.matchCount('"8080"'), 1, 'the index works after being dropped')
  t.same(store.integrityCheck(), ['ok'])
})

t.test('vacuum shrinks the file after a large forget and leaves no trace either', async (t) => {
  const path = tempStorePath('vacuum')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: 2000 }, (_, i) => ({ text: `bulk note ${i} about 服务 ${i} and port ${30000 + i}`, scene: i % 2 === 0 ? 'bulk' : 'kept' })))
  store.commit({ text: SECRET_ZH, scene: 'bulk' })
  store.forget({ scene: 'bulk' })
  const result = store.vacuum()
  t.ok(result.bytesAfter < result.bytesBefore, `smaller after vacuum (${result.bytesBefore} → ${result.bytesAfter} bytes)`)
  t.equal(result.bytesAfter, statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0))
  t.ok(result.walCleared)
  t.same(scan(path), [])
  t.equal(store.count(), 1000)
  t.same(store.integrityCheck(), ['ok'])
})

/** Runs the scenario on a copy of lib/ with one edit; returns what the scan found after forgetting. */
async function mutated(t: Test, edit: Edit): Promise<string[]> {
  const m = mutant(edit)
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  const { open, closed } = scenario(Mutated, 'bytes-mutant')
  return [...open, ...closed]
}

t.test('mutation check: without secure deletion the text is found', async (t) => {
  const found = await mutated(t, { file: 'store/store.ts', from: 'PRAGMA secure_delete = ON;', to: '' })
  t.ok(found.some((f) => f.startsWith(SECRET_ZH) || f.startsWith('护照号码')), `found: ${found.join('; ')}`)
})

t.test('mutation check: without rewriting the full-text index its terms are found', async (t) => {
  const found = await mutated(t, { file: 'store/forget.ts', from: `if (!dryRun && deleted.length > 0 && !everything) db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")`, to: '' })
  t.ok(found.some((f) => /^(zorblaxquux|quintessa|e12345678) /.test(f)), `found: ${found.join('; ')}`)
})

t.test('mutation check: without the WAL checkpoint the old pages in the WAL still hold it', async (t) => {
  const found = await mutated(t, { file: 'store/forget.ts', from: 'if (!dryRun && result.deleted.length > 0) result.walCleared = clearWal(db, host.busyTimeoutMs)', to: '' })
  t.ok(found.some((f) => f.endsWith(' in -wal')), `found: ${found.join('; ')}`)
})
