/**
 * Forgetting a note forgets what cooling distilled from it: the facts with a `derived_from` edge
 * to it (and facts distilled from those) go in the same transaction, by id or by filter, their
 * bytes leave the file, its WAL and its shared-memory file, and the note's origin rows go too.
 * The mutation check removes the step that follows the edges: the facts stay recallable.
 */
import { existsSync, readFileSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { coolTick, type CoolingOptions } from '../../lib/kernel/layers/cooling.ts'
import type { CapturePiece } from '../../lib/store/layers.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1, 6, 0)
const RULE: CoolingOptions = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 50 }
const NEEDLE = '记一下：quasarvault 服务端口 13917，部署在 10.44.7.93。'
const TRACES = ['13917', '10.44.7.93', 'quasarvault']

function piece(text: string, seq: number): CapturePiece {
  return { text, origin: { sessionId: 's1', seq, eventType: 'user/message', role: 'user', eventTime: T0, compactionId: 'c' } }
}

/** A store (of the given class) with the needle captured at T0 and cooled into facts at +73 h. */
async function cooled(Store: typeof BlockStore): Promise<{ path: string, store: BlockStore, needle: string, keep: string }> {
  const path = tempStorePath('forget-derived')
  const early = new Store(path, { now: () => T0 })
  const [needle] = early.layers.capture([piece(NEEDLE, 0)], () => 'compaction:user').ids as [string]
  early.close()
  const store = new Store(path)
  const keep = store.commit({ text: 'The dashboard lives at grafana.internal.' }).id
  const report = await coolTick(store, T0 + 73 * HOUR, RULE, 'p1')
  if (report.cooled !== 1) throw new Error(`expected the needle to cool, got ${JSON.stringify(report)}`)
  return { path, store, needle, keep }
}

function traces(path: string): string[] {
  const found: string[] = []
  for (const suffix of ['', '-wal', '-shm']) {
    if (!existsSync(path + suffix)) continue
    const bytes = readFileSync(path + suffix)
    for (const needle of TRACES) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.push(`${needle} in ${suffix || 'db'}`)
  }
  return found
}

t.test('forget by id: the facts distilled from the note go with it, bytes and origin rows too', async (t) => {
  const { path, store, needle, keep } = await cooled(BlockStore)
  const facts = recallBlocks(store, 'quasarvault 端口', { topK: 5 }).filter((h) => h.id !== needle)
  t.ok(facts.length >= 1 && facts.every((h) => h.text.includes('quasarvault')), 'before: the distilled facts are recalled')
  const preview = store.forget(needle, { dryRun: true })
  t.same(preview.derived.sort(), facts.map((h) => h.id).sort(), 'the dry run names the facts')
  const result = store.forget(needle)
  t.same(result.derived.sort(), facts.map((h) => h.id).sort(), 'the result names them')
  t.same(result.deleted.map((b) => b.id).sort(), [needle, ...result.derived].sort(), 'and they are among the deleted')
  t.same(recallBlocks(store, 'quasarvault 端口 13917', { topK: 5 }), [], 'nothing of it is recalled')
  t.ok(store.get(keep), 'an unrelated note stays')
  t.same(traces(path), [], 'no trace in the db, WAL or shm while open')
  store.close()
  t.same(traces(path), [], 'nor after close')
  const db = new DatabaseSync(path, { readOnly: true })
  t.equal(Number((db.prepare('SELECT count(*) AS n FROM block_origins').get() as { n: number }).n), 0, 'the origin rows are gone')
  t.equal(Number((db.prepare("SELECT count(*) AS n FROM edges WHERE type = 'derived_from'").get() as { n: number }).n), 0, 'the edges are gone')
  db.close()
})

t.test('forget by filter: a fact created after the cut-off still goes with its note', async (t) => {
  const { store, needle, keep } = await cooled(BlockStore)
  t.teardown(() => store.close())
  const result = store.forget({ before: T0 + HOUR })
  t.ok(result.deleted.some((b) => b.id === needle), 'the captured note is older than the cut-off')
  t.ok(result.derived.length >= 1, 'its facts, created at +73 h, go with it')
  t.same(recallBlocks(store, 'quasarvault', { topK: 5 }), [])
  t.ok(store.get(keep), 'a note made after the cut-off and not derived stays')
})

t.test('mutation: without following the derived_from edges the facts outlive the note', async (t) => {
  const m = mutant({ file: 'store/forget.ts', from: 'const derived = pickDerived(host)', to: 'const derived: string[] = []' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { recallBlocks: mutatedRecall } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { path, store, needle } = await cooled(Mutated)
  store.forget(needle)
  t.ok(mutatedRecall(store, 'quasarvault 端口', { topK: 5 }).length > 0, 'red: a fact of the forgotten note is still recalled')
  store.close()
  t.ok(traces(path).length > 0, 'red: its bytes are still in the file')
})
