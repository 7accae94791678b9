/**
 * The FTS5 structure decoder (the segment count `stats`, `doctor` and index upkeep read) agrees
 * with the index's own pages (segment ids and leaf pages read from `_data` rowids, an independent
 * source), in both record layouts.
 */
import t from 'tap'
import { DatabaseSync } from 'node:sqlite'
import { decodeFtsStructure, ftsStructure } from '../../lib/store/fts-structure.ts'

/** Leaf pages per segment id, from the `_data` rowids (segid << 37 | dlidx << 36 | height << 31 | pgno). */
function leafPages(db: DatabaseSync, table: string): Map<number, number> {
  const pages = new Map<number, number>()
  for (const row of db.prepare(`SELECT id FROM ${table}_data WHERE id > 10`).all() as Array<{ id: number }>) {
    const id = BigInt(row.id)
    if (((id >> 31n) & 0x3fn) !== 0n) continue // b-tree interior pages and doclist indexes
    const segid = Number(id >> 37n)
    pages.set(segid, (pages.get(segid) ?? 0) + 1)
  }
  return pages
}

function fill(db: DatabaseSync, table: string, transactions: number): void {
  const insert = db.prepare(`INSERT INTO ${table} (rowid, body) VALUES (?, ?)`)
  let rowid = 0
  for (let tx = 0; tx < transactions; tx++) {
    db.exec('BEGIN')
    for (let i = 0; i < 400; i++) insert.run(++rowid, `note ${rowid} about term${rowid % 97} and word${(rowid * 7) % 389} ${'filler '.repeat(rowid % 5)}`)
    db.exec('COMMIT')
  }
}

for (const [layout, options] of [['original', ''], ['with tombstones (contentless_delete)', ", content = '', contentless_delete = 1"]] as const) {
  t.test(`the decoded structure matches the index's pages: ${layout}`, async (t) => {
    const db = new DatabaseSync(':memory:')
    db.exec(`CREATE VIRTUAL TABLE f USING fts5(body${options}); INSERT INTO f (f, rank) VALUES ('automerge', 0)`)
    fill(db, 'f', 5)
    const s = ftsStructure(db, 'f')
    const pages = leafPages(db, 'f')
    t.equal(s.segments, 5, 'one segment per transaction with automerge off')
    t.equal(s.segments, pages.size, 'as many segments as segment ids in _data')
    t.equal(s.pages, [...pages.values()].reduce((a, b) => a + b, 0), 'and as many leaf pages')
    t.same(s.levels.map((l) => [l.level, l.pages.length]), [[0, 5]], 'all at level 0')
    db.exec("INSERT INTO f (f) VALUES ('optimize')")
    const merged = ftsStructure(db, 'f')
    t.equal(merged.segments, 1, 'optimize leaves one segment')
    t.equal(merged.pages, [...leafPages(db, 'f').values()].reduce((a, b) => a + b, 0))
    db.close()
  })
}

t.test('a record that does not add up is refused; an empty index has no segments', async (t) => {
  const db = new DatabaseSync(':memory:')
  db.exec('CREATE VIRTUAL TABLE f USING fts5(body)')
  t.same(ftsStructure(db, 'f'), { segments: 0, pages: 0, writes: 0, levels: [] })
  fill(db, 'f', 2)
  const record = (db.prepare('SELECT block FROM f_data WHERE id = 10').get() as { block: Uint8Array }).block
  const lying = Uint8Array.from(record)
  lying[5] = lying[5]! + 1 // the declared segment count, one more than listed
  t.throws(() => decodeFtsStructure(lying), /declares/)
  t.throws(() => decodeFtsStructure(record.subarray(0, record.length - 1)), /ends inside/)
  t.throws(() => ftsStructure(db, 'f; DROP TABLE f'), /not a table name/)
  db.close()
})
