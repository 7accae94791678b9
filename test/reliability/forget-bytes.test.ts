/**
 * "Gone" means gone from the bytes: after `forget`, the raw bytes of the store file, its WAL and
 * its shared-memory file hold no trace of the note's text (English and Chinese, the sentence and
 * its distinctive tokens), while the store is still open (as in a running agent) and after it is
 * closed. Both ways of removing index entries are scanned: FTS5's secure delete (a few notes) and
 * the full rewrite (many notes at once). Each part of the mechanism has a mutation check: without
 * secure deletion of pages, without the index's secure-delete option, without the rewrite,
 * without switching secure-delete back on after it, with the wrong indexed text, or without the
 * WAL checkpoint, the same scan finds the text.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { DEFER_SCRUB_FROM } from '../../lib/store/forget.ts'
import { indexDeletion } from '../../lib/store/forget-index.ts'
import { indexColumns } from '../../lib/store/fts-columns.ts'
import { ftsStructure } from '../../lib/store/fts-structure.ts'
import { MIGRATIONS, migrate } from '../../lib/store/schema.ts'
import type { BlockStore as BlockStoreType } from '../../lib/store/store.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant, type Edit } from '../helpers/mutant.ts'

type StoreClass = typeof BlockStoreType

const SECRET_EN = 'The launch code for project Zorblaxquux is 7719-alpha-Quintessa'
const SECRET_ZH = '机密：王小明的护照号码是E12345678，住在翠湖苑七栋'
/** What must not be found: the sentences and tokens only they contain (as stored, and as indexed). */
const NEEDLES = ['Zorblaxquux', 'zorblaxquux', '7719-alpha', 'quintessa', 'Quintessa', '护照号码', '翠湖苑', 'E12345678', 'e12345678', SECRET_ZH, SECRET_EN]

/** The Chinese secret's bigrams, as an FTS5 expression over the index. */
const CJK_TERMS = 'cjk : ("护照" OR "号码" OR "翠湖" OR "湖苑" OR "七栋")'

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

/** The secrets' ids in a scenario's store, and the filler notes committed around them. */
interface Stored {
  en: string
  zh: string
  newer: string
  fillers: string[]
}

/** How a scenario forgets the secrets. */
type Forgetting = (store: BlockStoreType, stored: Stored) => void

/** Forgets the secrets a few at a time: every forget takes the secure-delete way. */
const fewAtATime: Forgetting = (store, { en, zh, newer }) => {
  store.forget(en)
  store.forget([zh, newer])
}

/**
 * Fillers of the stores where a large forget takes two phases: past `DEFER_SCRUB_FROM` indexed
 * notes (below, the scrub runs before the call returns).
 */
const LARGE = DEFER_SCRUB_FROM + 400

/** What a large forget left between its return and the scrub: the result's flag, the pending record, what reads still see, what the scan finds. */
interface BetweenPhases {
  bytesPending: boolean
  pendingForgets: number
  /** Reads that still find a forgotten English secret (get, the index). */
  visible: number
  found: string[]
}

const betweenPhases: BetweenPhases[] = []

function recordBetween(store: BlockStoreType, result: { bytesPending: boolean }, ids: readonly string[]): void {
  const visible = ids.filter((id) => store.get(id) !== undefined).length + store.matchCount('"zorblaxquux"') + store.matchCount('"quintessa"')
  betweenPhases.push({ bytesPending: result.bytesPending, pendingForgets: store.pendingScrubs().forgets, visible, found: scan(store.path) })
}

/**
 * Forgets the English secrets with 300 fillers (the rewrite way, in two phases: the call, then the
 * scrub), then the Chinese one alone (the secure-delete way again, which needs the option back on
 * after the rewrite).
 */
const rewriteThenOne: Forgetting = (store, { en, zh, newer, fillers }) => {
  const result = store.forget([en, newer, ...fillers.slice(0, 300)])
  recordBetween(store, result, [en, newer])
  store.scrub()
  store.forget(zh)
}

/** The large forget and its scrub, nothing after them. */
const rewriteAndScrub: Forgetting = (store, { en, zh, newer, fillers }) => {
  store.forget([en, zh, newer, ...fillers.slice(0, 300)])
  store.scrub()
}

/** The same large forget with `wait`: the bytes are gone when it returns. */
const rewriteWaiting: Forgetting = (store, { en, zh, newer, fillers }) => {
  const result = store.forget([en, newer, ...fillers.slice(0, 300)], { wait: true })
  recordBetween(store, result, [en, newer])
  store.forget(zh)
}

/** Levels of the index that a merge under way is reading, read on a connection of its own. */
function mergingLevels(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return ftsStructure(db, 'blocks_fts').levels.filter((l) => l.merging > 0).length
  } finally {
    db.close()
  }
}

/** Whether a merge of the index was under way at each forget of `duringUpkeep`. */
const mergingAtForget: boolean[] = []

/**
 * Forgets in the middle of index upkeep (lib/store/fts-upkeep.ts): one-page slices start a merge,
 * the secrets are forgotten while it is under way, and the merge then finishes (it must not bring
 * any entry back from the segments it reads).
 */
const duringUpkeep: Forgetting = (store, { en, zh, newer }) => {
  for (let i = 0; i < 3; i++) store.upkeepSlice({ pages: 1 })
  mergingAtForget.push(mergingLevels(store.path) > 0)
  store.forget(en)
  store.upkeepSlice({ pages: 1 })
  mergingAtForget.push(mergingLevels(store.path) > 0)
  store.forget([zh, newer])
  store.upkeep()
}

/** Merges the index first, forgets, and merges again (upkeep before and after forget). */
const aroundUpkeep: Forgetting = (store, stored) => {
  store.upkeep()
  fewAtATime(store, stored)
  store.commit({ text: 'a note between the forget and the next upkeep' })
  store.upkeep()
}

/**
 * A store with ordinary history around the secrets: filler notes before and after, tag updates
 * and access counts (which rewrite the secrets' rows), a supersede, an edge; then forget. Returns
 * what the scan finds before forgetting, right after (store open), and after closing.
 */
function scenario(Store: StoreClass, label: string, forget: Forgetting, fillerCount = 800): { before: string[], open: string[], closed: string[], path: string } {
  const path = tempStorePath(label)
  const store = new Store(path)
  const filler = (i: number) => ({ text: `filler note ${i}: service s${i} listens on port ${20000 + i}, 服务 ${i} 部署在 机房${i % 7}`, source: 'seed' })
  const half = fillerCount / 2
  const fillers = store.commitMany(Array.from({ length: half }, (_, i) => filler(i))).map((r) => r.id)
  const en = store.commit({ text: SECRET_EN, source: 'user', scene: 'secret' }).id
  const zh = store.commit({ text: SECRET_ZH, source: 'user' }).id
  store.commit({ text: SECRET_EN, scene: 'secret-2', semanticType: 'Code' }) // rewrites the row with new tags
  store.recordAccess([en, zh, en])
  const newer = store.commit({ text: `${SECRET_EN} (confirmed)`, supersedes: en }).id
  store.link({ sourceKind: 'block', sourceId: zh, targetKind: 'scene', targetId: 'people', type: 'in' })
  fillers.push(...store.commitMany(Array.from({ length: half }, (_, i) => filler(half + i))).map((r) => r.id))
  const before = scan(path)
  forget(store, { en, zh, newer, fillers })
  const open = scan(path)
  store.commit({ text: 'a note written after the forget' }) // the agent goes on writing
  store.close()
  return { before, open, closed: scan(path), path }
}

t.test('the scenarios take the way they are named for', async (t) => {
  t.equal(indexDeletion(1, 803), 'secure-delete')
  t.equal(indexDeletion(2, 802), 'secure-delete')
  t.equal(indexDeletion(302, 803), 'rewrite')
})

t.test('after forget no byte of the note is left in the file, the WAL or the shared-memory file', async (t) => {
  const { before, open, closed, path } = scenario(BlockStore, 'bytes', fewAtATime)
  t.ok(before.length >= 6, `the scan sees the notes while they are stored (${before.length} hits)`)
  t.same(open, [], 'nothing found while the store is still open')
  t.same(closed, [], 'nothing found after it is closed')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.same(store.integrityCheck(), ['ok'])
  t.equal(store.count(), 801)
  t.equal(store.matchCount('"filler"'), 800, 'the other notes are still found')
  t.equal(store.matchCount(CJK_TERMS), 0, 'the index holds none of its bigrams')
})

t.test('a forget large enough to rewrite the index leaves no trace either, nor does a small one after it', async (t) => {
  betweenPhases.length = 0
  const { before, open, closed, path } = scenario(BlockStore, 'bytes-rewrite', rewriteThenOne, LARGE)
  t.ok(before.length >= 6, `the scan sees the notes while they are stored (${before.length} hits)`)
  const [between] = betweenPhases
  t.ok(between!.bytesPending, 'the call returned with the bytes pending')
  t.equal(between!.pendingForgets, 1, 'recorded durably')
  t.equal(between!.visible, 0, 'and the notes invisible: neither get nor the index finds them')
  t.ok(between!.found.some(enTerm), `before the scrub the old index segments still hold their terms (${between!.found.length} hits)`)
  t.same(open, [], 'nothing found while the store is still open')
  t.same(closed, [], 'nothing found after it is closed')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.same(store.integrityCheck(), ['ok'])
  t.equal(store.count(), LARGE - 299)
  t.equal(store.matchCount('"filler"'), LARGE - 300)
  t.equal(store.matchCount('"部署"'), LARGE - 300)
  t.equal(store.matchCount(CJK_TERMS), 0, 'the index holds none of its bigrams')
})

t.test('a large forget with wait returns with the bytes gone', async (t) => {
  betweenPhases.length = 0
  const { open, closed } = scenario(BlockStore, 'bytes-wait', rewriteWaiting, LARGE)
  t.match(betweenPhases, [{ bytesPending: false, pendingForgets: 0, visible: 0, found: [] }], 'nothing pending, nothing found at return')
  t.same(open, [])
  t.same(closed, [])
  const m = mutant({ file: 'store/forget.ts', from: 'if (result.bytesPending && (options.wait === true || scrubNow)) {', to: 'if (false) {' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  betweenPhases.length = 0
  scenario(Mutated, 'bytes-mutant', rewriteWaiting, LARGE)
  t.ok(betweenPhases[0]!.found.some(enTerm), 'mutation check: without the wait the call returns with the terms on disk')
})

t.test('index upkeep brings nothing back: forgetting during a merge under way, or before and after one, leaves no trace', async (t) => {
  for (const [label, forget] of [['bytes-during-upkeep', duringUpkeep], ['bytes-around-upkeep', aroundUpkeep]] as const) {
    const { before, open, closed, path } = scenario(BlockStore, label, forget)
    t.ok(before.length >= 6, `${label}: the scan sees the notes while they are stored (${before.length} hits)`)
    t.same(open, [], `${label}: nothing found while the store is still open`)
    t.same(closed, [], `${label}: nothing found after it is closed`)
    const store = new BlockStore(path)
    t.same(store.integrityCheck(), ['ok'])
    t.ok(store.ftsSegments() <= 2, `${label}: merged (${store.ftsSegments()} segments, the note written after)`)
    t.equal(store.matchCount('"filler"'), 800, `${label}: the other notes are still found`)
    t.equal(store.matchCount(CJK_TERMS), 0, `${label}: the index holds none of its bigrams`)
    store.close()
  }
  t.same(mergingAtForget, [true, true], 'a merge was under way at both forgets')
})

t.test('a store written before the index had secure-delete is rebuilt on upgrade and forgets without a trace', async (t) => {
  const step = MIGRATIONS.findIndex((sql) => sql.includes("VALUES ('secure-delete', 1)"))
  t.ok(step > 0, 'the migration that sets the option exists')
  const path = tempStorePath('bytes-upgrade')
  const db = new DatabaseSync(path)
  // As the release before wrote it (secure deletion of pages was already on; residue from older
  // releases is `vacuum`'s job, docs/reliability.md).
  db.exec('PRAGMA journal_mode = WAL; PRAGMA secure_delete = ON')
  migrate(db, step)
  const insert = db.prepare(`INSERT INTO blocks (id, text, source, created_at, updated_at) VALUES (?, ?, 'legacy', 1, 1) RETURNING rowid`)
  const index = db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
  db.exec('BEGIN')
  for (const text of [SECRET_EN, SECRET_ZH, ...Array.from({ length: 500 }, (_, i) => `legacy note ${i} 旧服务 ${i}`)]) {
    const { rowid } = insert.get(blockId(text), text) as { rowid: number }
    index.run(rowid, ...indexColumns(text))
  }
  db.exec('COMMIT')
  db.close()
  t.ok(scan(path).length >= 6, 'the old file holds the secrets')
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.matchCount('"zorblaxquux"'), 1, 'the rebuilt index finds an old note')
  t.equal(store.matchCount('"旧服"'), 500, 'and its Chinese')
  store.forget(blockId(SECRET_EN))
  store.forget(blockId(SECRET_ZH))
  t.same(scan(path), [], 'nothing left, neither from the old index nor from the deletes')
  t.equal(store.matchCount('"legacy"'), 500)
  t.same(store.integrityCheck(), ['ok'])
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

/** Runs a scenario on a copy of lib/ with one edit; returns what the scan found after forgetting. */
async function mutated(t: Test, edit: Edit, forget: Forgetting = fewAtATime, fillerCount?: number): Promise<string[]> {
  const m = mutant(edit)
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  const { open, closed } = scenario(Mutated, 'bytes-mutant', forget, fillerCount)
  return [...open, ...closed]
}

/** A hit on an indexed term of the English secret (the index lowercases and stems). */
const enTerm = (f: string) => /^(zorblaxquux|quintessa|e12345678) /.test(f)

t.test('mutation check: without secure deletion the text is found', async (t) => {
  const found = await mutated(t, { file: 'store/open-store.ts', from: 'PRAGMA secure_delete = ON;', to: '' })
  t.ok(found.some((f) => f.startsWith(SECRET_ZH) || f.startsWith('护照号码')), `found: ${found.join('; ')}`)
})

t.test('mutation check: without secure deletion of pages, forgetting during index upkeep leaves the text', async (t) => {
  const found = await mutated(t, { file: 'store/open-store.ts', from: 'PRAGMA secure_delete = ON;', to: '' }, duringUpkeep)
  t.ok(found.length > 0, `the merge's freed pages keep it: ${found.join('; ')}`)
})

t.test('mutation check: without the index\'s secure-delete option its terms are found', async (t) => {
  const found = await mutated(t, { file: 'store/schema.ts', from: "INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('secure-delete', 1);", to: '' })
  t.ok(found.some(enTerm), `found: ${found.join('; ')}`)
})

t.test('mutation check: a scrub that does not merge the index leaves its terms', async (t) => {
  const m = mutant(
    { file: 'store/scrub.ts', from: 'while (ftsSegments(db) > 1) {', to: 'while (false) {' },
    { file: 'store/scrub.ts', from: 'if (ftsSegments(db) > 1) {\n      db.exec(\'ROLLBACK\')', to: 'if (false) {\n      db.exec(\'ROLLBACK\')' },
  )
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  const { open, closed } = scenario(Mutated, 'bytes-mutant', rewriteThenOne, LARGE)
  const found = [...open, ...closed]
  t.ok(found.some(enTerm), `found: ${found.join('; ')}`)
})

t.test('mutation check: leaving secure-delete off after a rewrite, the next small forget leaves its terms', async (t) => {
  const found = await mutated(t, {
    file: 'store/forget-index.ts',
    from: `\n    option('secure-delete', 1)`,
    to: '',
  }, rewriteThenOne)
  t.ok(found.some((f) => f.startsWith('e12345678 ')) && !found.some((f) => /^(zorblaxquux|quintessa) /.test(f)),
    `found only the Chinese note, forgotten after the rewrite: ${found.join('; ')}`)
})

t.test('mutation check: deleting with other text than was indexed leaves the terms', async (t) => {
  const found = await mutated(t, { file: 'store/forget-index.ts', from: 'remove.run(rids[i]!, ...indexColumns(deleted[i]!.text))', to: "remove.run(rids[i]!, '', indexColumns(deleted[i]!.text)[1])" })
  t.ok(found.some(enTerm), `found: ${found.join('; ')}`)
})

t.test('mutation check: deleting without the Chinese column leaves its bigrams in the index', async (t) => {
  // Index pages store terms prefix-compressed, so a two-character term is not reliably one run of
  // bytes; the index itself says whether the bigrams are still there.
  const m = mutant({ file: 'store/forget-index.ts', from: 'remove.run(rids[i]!, ...indexColumns(deleted[i]!.text))', to: "remove.run(rids[i]!, indexColumns(deleted[i]!.text)[0], '')" })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  const { path } = scenario(Mutated, 'bytes-mutant', fewAtATime)
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.ok(store.matchCount(CJK_TERMS) > 0)
})

t.test('mutation check: without the WAL checkpoint the old pages in the WAL still hold it', async (t) => {
  const found = await mutated(t, { file: 'store/forget.ts', from: 'result.walCleared = clearWal(db, host.busyTimeoutMs)', to: '' })
  t.ok(found.some((f) => f.endsWith(' in -wal')), `found: ${found.join('; ')}`)
})

t.test('mutation check: a scrub without its WAL checkpoint leaves the old pages in the WAL', async (t) => {
  const found = await mutated(t, { file: 'store/scrub.ts', from: 'if (!clearWal(db, host.busyTimeoutMs, wait ? CHECKPOINT_WAIT_MS : 0)) return', to: 'if (false) return' }, rewriteAndScrub, LARGE)
  t.ok(found.some((f) => f.endsWith(' in -wal')), `found: ${found.join('; ')}`)
  const clean = scenario(BlockStore, 'bytes-scrub', rewriteAndScrub, LARGE)
  t.same(clean.open, [], 'the real scrub leaves nothing')
})

/** A large forget, then the scrub while another connection holds a read snapshot, then again after it ends. */
function scrubUnderReader(Store: StoreClass): { whileRead: { pending: boolean, records: number }, after: { pending: boolean, records: number }, found: string[] } {
  const path = tempStorePath('scrub-reader')
  const store = new Store(path)
  try {
    store.commitMany(Array.from({ length: LARGE }, (_, i) => ({ text: `kept note ${i} on port ${20000 + i}`, scene: 'kept' })))
    store.commitMany(Array.from({ length: 300 }, (_, i) => ({ text: `doomed note ${i}`, scene: 'doomed' })))
    store.commit({ text: SECRET_EN, scene: 'doomed' })
    store.commit({ text: SECRET_ZH, scene: 'doomed' })
    store.forget({ scene: 'doomed' })
    const reader = new DatabaseSync(path, { readOnly: true })
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) AS n FROM blocks').get()
    const first = store.scrub({ wait: false })
    const whileRead = { pending: first.pending, records: store.pendingScrubs().forgets }
    reader.exec('COMMIT')
    reader.close()
    const second = store.scrub()
    return { whileRead, after: { pending: second.pending, records: store.pendingScrubs().forgets }, found: scan(path) }
  } finally {
    store.close()
  }
}

t.test('a reader holding an old snapshot: the scrub keeps its record until the WAL is empty', async (t) => {
  const real = scrubUnderReader(BlockStore)
  t.same(real.whileRead, { pending: true, records: 1 }, 'while the reader holds the WAL, the scrub is not done and says so')
  t.same(real.after, { pending: false, records: 0 }, 'once it ends, the next scrub finishes')
  t.same(real.found, [], 'and nothing is left')
  const m = mutant({ file: 'store/scrub.ts', from: 'if (!clearWal(db, host.busyTimeoutMs, wait ? CHECKPOINT_WAIT_MS : 0)) return { pending: true, slices, walCleared: false }', to: 'clearWal(db, host.busyTimeoutMs, 0)' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: StoreClass }>('store/store.ts')
  const mutated = scrubUnderReader(Mutated)
  t.equal(mutated.whileRead.records, 0, 'mutation check: clearing the record whatever the checkpoint did, it is gone while the reader holds the WAL')
  t.ok(mutated.found.some((f) => f.endsWith(' in -wal')), `and the old pages stay in the WAL with nothing left to scrub them (${mutated.found.join('; ')})`)
})
