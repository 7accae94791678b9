/**
 * BlockStore on real files: round trips, content addresses, idempotent commits, batch
 * atomicity, edges, connection settings and access counting.
 */
import { DatabaseSync } from 'node:sqlite'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { blockId, isBlockId } from '../../lib/store/block-id.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { isInvisibleOnly } from '../../lib/text/invisible.ts'
import type { StableMemErrorCode } from '../../lib/errors.ts'
import { refusal } from '../helpers/refusal.ts'
import { tempStorePath } from '../helpers/harness.ts'

/** A store on a fresh file with a controllable clock, closed at teardown. */
function open(t: Test, options: { now?: () => number, maxBlockChars?: number } = {}): { store: BlockStore, path: string } {
  const path = tempStorePath()
  const store = new BlockStore(path, options)
  t.teardown(() => store.close())
  return { store, path }
}

/** Reads the raw row through a second, independent connection (what is really on disk). */
function rawRow(path: string, id: string): Record<string, unknown> | undefined {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return db.prepare('SELECT * FROM blocks WHERE id = ?').get(id) as Record<string, unknown> | undefined
  } finally {
    db.close()
  }
}

t.test('round trip on a real file: text byte-identical after NFC + trim, metadata kept', async (t) => {
  let clock = 1_000
  const { store, path } = open(t, { now: () => clock })
  const decomposed = '  cafe\u0301 服务 10.3.7.9:8499 😀\n第二行\t\n'
  const expected = decomposed.normalize('NFC').trim()
  const { id, created } = store.commit({ text: decomposed, source: 'ops', scene: 'chan:qq', semanticType: 'Fact' })
  t.equal(created, true)
  t.equal(id, blockId(expected))
  const block = store.get(id)!
  t.equal(block.text, expected)
  t.same(Buffer.from(block.text, 'utf8'), Buffer.from(expected, 'utf8'), 'byte-identical')
  t.match(block, { source: 'ops', scene: 'chan:qq', semanticType: 'Fact', createdAt: 1_000, updatedAt: 1_000, accessCount: 0, lastAccessAt: null })
  store.close()
  clock = 2_000
  const reopened = new BlockStore(path)
  t.teardown(() => reopened.close())
  t.same(reopened.get(id), block, 'a second connection on the same file reads the same block')
  t.equal(String(rawRow(path, id)!.text), expected, 'the raw column holds the canonical text')
})

t.test('block id: blk_ + 24 hex, stable, NFC-equivalent and trim-equivalent texts share it', async (t) => {
  const id = blockId('billing 8499')
  t.match(id, /^blk_[0-9a-f]{24}$/)
  t.ok(isBlockId(id))
  t.equal(blockId('billing 8499'), id, 'deterministic')
  // Pinned value: a change of hash, length or normalisation is a breaking change of every stored id.
  t.equal(blockId('billing 8499'), 'blk_' + (await import('node:crypto')).createHash('sha256').update('billing 8499').digest('hex').slice(0, 24))
  t.equal(blockId('e\u0301'), blockId('\u00e9'), 'NFD and NFC share an id')
  t.equal(blockId('  x\n'), blockId('x'), 'surrounding white space does not change the id')
  t.not(blockId('x'), blockId('X'), 'case is content')
  const { store } = open(t)
  const a = store.commit({ text: 'Cafe\u0301 on port 8080' })
  const b = store.commit({ text: 'Café on port 8080  ' })
  t.equal(a.id, b.id)
  t.same([a.created, b.created], [true, false])
  t.equal(store.count(), 1)
})

t.test('re-commit is idempotent and never blanks metadata; non-empty values update it', async (t) => {
  let clock = 10
  const { store, path } = open(t, { now: () => clock })
  const { id } = store.commit({ text: 'etcd 端口 2379', source: 'ops', scene: 's1', semanticType: 'Port' })
  clock = 20
  t.same(store.commit({ text: 'etcd 端口 2379' }), { id, created: false })
  t.match(store.get(id), { source: 'ops', scene: 's1', semanticType: 'Port', createdAt: 10, updatedAt: 10 }, 'nothing blanked, not even updated_at')
  clock = 30
  store.commit({ text: 'etcd 端口 2379', source: '', scene: 's2' })
  t.match(store.get(id), { source: 'ops', scene: 's2', semanticType: 'Port', createdAt: 10, updatedAt: 30 })
  t.equal(store.count(), 1)
  const ftsRows = new DatabaseSync(path, { readOnly: true })
  t.teardown(() => ftsRows.close())
  t.equal(Number((ftsRows.prepare("SELECT count(*) AS n FROM blocks_fts WHERE blocks_fts MATCH '\"2379\"'").get() as { n: number }).n), 1, 'indexed once')
})

t.test('commitMany is one transaction: a bad item rejects the batch and nothing is written', async (t) => {
  const { store, path } = open(t, { maxBlockChars: 100 })
  store.commit({ text: 'existing 1', source: 'old' })
  const bad: Array<[string, unknown, RegExp, StableMemErrorCode]> = [
    ['empty text', { text: '   ' }, /inputs\[1\]\.text is empty/, 'invalid_input'],
    ['too large', { text: 'x'.repeat(101) }, /inputs\[1\]\.text has 101 characters; the limit is 100/, 'too_large'],
    ['not a string', { text: 42 }, /inputs\[1\]\.text must be a string/, 'invalid_input'],
    ['lone surrogate', { text: 'a\uD800b' }, /inputs\[1\]\.text contains an unpaired UTF-16 surrogate/, 'invalid_input'],
    ['null item', null, /inputs\[1\] must be an object/, 'invalid_input'],
    ['bad source', { text: 'ok', source: 'x'.repeat(300) }, /inputs\[1\]\.source is longer than 256/, 'too_large'],
  ]
  for (const [label, item, message, code] of bad) {
    t.match(await refusal(() => store.commitMany([{ text: 'new one 7001', source: 'new' }, item as never, { text: 'existing 1', source: 'blanked?' }])),
      { code, message }, label)
  }
  t.equal(store.count(), 1, 'the good items of a refused batch were not written')
  t.equal(store.get(blockId('existing 1'))!.source, 'old', 'the existing block was not touched')
  t.equal(rawRow(path, blockId('new one 7001')), undefined, 'nothing on disk either')
  // A failure inside the transaction (after validation) rolls back too.
  const db = new DatabaseSync(path)
  db.exec("CREATE TRIGGER refuse BEFORE INSERT ON blocks WHEN NEW.text LIKE '%refuse-me%' BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END")
  db.close()
  t.throws(() => store.commitMany([{ text: 'first ok 7002' }, { text: 'refuse-me' }]), /refused by trigger/)
  t.equal(store.count(), 1, 'rolled back: the first item of the failed batch is gone')
  t.same(store.commitMany([{ text: 'a 1' }, { text: 'b 2' }, { text: 'a 1' }]).map((r) => r.created), [true, true, false], 'a duplicate inside one batch is not a second block')
  t.equal(store.count(), 3)
})

t.test('edges: unique per (source kind, source id, target kind, target id, type); a missing block endpoint is refused', async (t) => {
  const { store } = open(t)
  const a = store.commit({ text: 'old port 8080' }).id
  const b = store.commit({ text: 'new port 8443' }).id
  t.same(store.link({ sourceKind: 'block', sourceId: b, targetKind: 'block', targetId: a, type: 'supersedes' }), { created: true })
  t.same(store.link({ sourceKind: 'block', sourceId: b, targetKind: 'block', targetId: a, type: 'supersedes' }), { created: false }, 'same five fields: no second edge')
  t.same(store.link({ sourceKind: ' block', sourceId: `${b} `, targetKind: 'block', targetId: a, type: 'supersedes ' }), { created: false }, 'the same edge spelt with spaces is still the same edge')
  t.same(store.link({ sourceKind: 'block', sourceId: b, targetKind: 'block', targetId: a, type: 'relates' }), { created: true }, 'another type is another edge')
  t.same(store.link({ sourceKind: 'block', sourceId: a, targetKind: 'block', targetId: b, type: 'supersedes' }), { created: true }, 'direction matters')
  t.same(store.link({ sourceKind: 'scene', sourceId: b, targetKind: 'block', targetId: a, type: 'supersedes' }), { created: true }, 'kind matters')
  const ghost = blockId('never committed')
  for (const [label, edge] of [
    ['missing target', { sourceKind: 'block', sourceId: a, targetKind: 'block', targetId: ghost, type: 'x' }],
    ['missing source', { sourceKind: 'block', sourceId: ghost, targetKind: 'block', targetId: a, type: 'x' }],
    ['missing source spelt with a space', { sourceKind: ' block ', sourceId: ghost, targetKind: 'block', targetId: a, type: 'x' }],
  ] as const) {
    t.match(await refusal(() => store.link(edge)), { code: 'not_found', message: new RegExp(ghost) }, label)
  }
  t.throws(() => store.link({ sourceKind: 'block', sourceId: a, targetKind: 'block', targetId: b, type: '' }), /type is empty/)
  t.same(store.edgesOf('block', a).map((e) => `${e.sourceKind}:${e.sourceId === a ? 'a' : 'b'}>${e.targetId === a ? 'a' : 'b'}:${e.type}`).sort(),
    ['block:a>b:supersedes', 'block:b>a:relates', 'block:b>a:supersedes', 'scene:b>a:supersedes'])
  t.equal(store.stats().edges, 4)
})

t.test('connection settings: WAL, busy_timeout, foreign keys, synchronous FULL', async (t) => {
  const { store, path } = open(t)
  const db = (store as unknown as { db: DatabaseSync }).db
  const pragma = (name: string) => Object.values(db.prepare(`PRAGMA ${name}`).get() as object)[0]
  t.equal(pragma('journal_mode'), 'wal')
  t.equal(Number(pragma('busy_timeout')), 5000)
  t.equal(Number(pragma('foreign_keys')), 1)
  t.equal(Number(pragma('synchronous')), 2)
  const custom = new BlockStore(path, { busyTimeoutMs: 1234 })
  t.teardown(() => custom.close())
  t.equal(Number(Object.values((custom as unknown as { db: DatabaseSync }).db.prepare('PRAGMA busy_timeout').get() as object)[0]), 1234)
  t.same(store.integrityCheck(), ['ok'])
})

t.test('access counting: recordAccess bumps count and time, ignores unknown ids, survives reopen', async (t) => {
  let clock = 100
  const { store, path } = open(t, { now: () => clock })
  const { id } = store.commit({ text: 'nginx /etc/nginx/nginx.conf' })
  clock = 200
  store.recordAccess([id, id, blockId('unknown')])
  clock = 300
  store.recordAccess([id])
  store.recordAccess([])
  t.match(store.get(id), { accessCount: 3, lastAccessAt: 300, updatedAt: 100 }, 'access is not a write of the note')
  store.close()
  const again = new BlockStore(path)
  t.teardown(() => again.close())
  t.match(again.get(id), { accessCount: 3, lastAccessAt: 300 })
})

t.test('a closed store refuses every call with a clear error, and close is idempotent', async (t) => {
  const { store } = open(t)
  store.commit({ text: 'x 1' })
  store.close()
  store.close()
  t.ok(store.isClosed)
  for (const [label, call] of [
    ['commit', () => store.commit({ text: 'y' })],
    ['get', () => store.get(blockId('x 1'))],
    ['stats', () => store.stats()],
    ['link', () => store.link({ sourceKind: 'a', sourceId: 'b', targetKind: 'c', targetId: 'd', type: 'e' })],
  ] as const) {
    t.match(await refusal(call), { code: 'unavailable', message: /is closed/ }, label)
  }
})

t.test('property: any text without lone surrogates round-trips exactly (NUL, controls, astral, RTL, CJK)', async (t) => {
  const { store } = open(t)
  const text = fc.array(fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('\0', '\u202e', '\ufeff', '\r\n', '😀', '端口', "'; DROP TABLE blocks; --", '"quoted" NEAR(a b) col:x*'),
  ), { minLength: 1, maxLength: 20 }).map((parts) => parts.join('')).filter((s) => !isInvisibleOnly(s.normalize('NFC').trim())) // those are refused
  fc.assert(fc.property(text, (raw) => {
    const { id } = store.commit({ text: raw })
    const back = store.get(id)
    return back !== undefined && back.text === raw.normalize('NFC').trim() && id === blockId(raw)
  }), { numRuns: 300, seed: 4242 })
  t.same(store.integrityCheck(), ['ok'])
})
