/**
 * Schema versions: every older file is brought forward with its data intact; a newer file is
 * refused and left byte-identical (the version check runs before any statement that writes).
 */
import { existsSync, readFileSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { MIGRATIONS, SCHEMA_VERSION, migrate, refuseNewerSchema, schemaVersion } from '../../lib/store/schema.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { refusal } from '../helpers/refusal.ts'
import { tempStorePath } from '../helpers/harness.ts'

/** Inserts one block (and its index row) with the columns every released version has. */
function insertV1Block(db: DatabaseSync, text: string): void {
  const row = db.prepare(`INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at)
    VALUES (?, ?, 'legacy', 'old-scene', '', 1, 1) RETURNING rowid`).get(blockId(text), text) as { rowid: number }
  db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)').run(row.rowid, text, '')
}

t.test('the current version is the number of migrations, and a fresh file gets it', async (t) => {
  t.equal(SCHEMA_VERSION, MIGRATIONS.length)
  t.ok(SCHEMA_VERSION >= 1)
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
})

t.test('a file at version 0 (empty) opens at the current version', async (t) => {
  const path = tempStorePath()
  const db = new DatabaseSync(path)
  t.equal(schemaVersion(db), 0)
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
  t.same(store.integrityCheck(), ['ok'])
})

for (let version = 1; version <= SCHEMA_VERSION; version++) {
  t.test(`a file written at version ${version} reopens at ${SCHEMA_VERSION} with its data intact`, async (t) => {
    const path = tempStorePath(`v${version}`)
    const db = new DatabaseSync(path)
    migrate(db, version)
    t.equal(schemaVersion(db), version, `built at version ${version}`)
    insertV1Block(db, 'legacy gateway 10.0.0.1:8443')
    db.prepare('INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at) VALUES (?, ?, ?, ?, ?, 1)')
      .run('block', blockId('legacy gateway 10.0.0.1:8443'), 'scene', 'old-scene', 'in')
    db.close()
    const store = new BlockStore(path)
    t.teardown(() => store.close())
    t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
    t.match(store.get(blockId('legacy gateway 10.0.0.1:8443')), { text: 'legacy gateway 10.0.0.1:8443', source: 'legacy', scene: 'old-scene', createdAt: 1 })
    t.equal(store.edgesOf('scene', 'old-scene').length, 1)
    t.same(store.commit({ text: 'legacy gateway 10.0.0.1:8443' }).created, false, 'the old block is the same content address')
    t.same(store.integrityCheck(), ['ok'])
  })
}

t.test('migration steps are atomic: a failing step leaves the file at the previous version', async (t) => {
  const path = tempStorePath()
  const db = new DatabaseSync(path)
  db.exec('CREATE TABLE edges (x)') // collides with v1's CREATE TABLE edges
  t.throws(() => migrate(db), /already exists/)
  t.equal(schemaVersion(db), 0)
  t.equal(db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 'blocks'").get()!.n, 0, 'the half-done step was rolled back')
  db.close()
  t.match(await refusal(() => new BlockStore(path)), { code: 'unavailable', message: /SQLite database of another program .*refusing to change it/ }, 'the store says why it cannot use the file (and leaves it alone)')
})

/** A file claiming a schema version newer than this code, in rollback-journal mode. */
function newerFile(): string {
  const path = tempStorePath('newer')
  const db = new DatabaseSync(path)
  db.exec(`CREATE TABLE blocks (id TEXT); INSERT INTO blocks VALUES ('from the future'); PRAGMA user_version = ${SCHEMA_VERSION + 1}`)
  db.close()
  return path
}

t.test('a newer-schema file is refused, named, and left byte-identical', async (t) => {
  const path = newerFile()
  const before = readFileSync(path)
  t.match(await refusal(() => new BlockStore(path)), {
    code: 'newer_schema',
    message: new RegExp(`version ${SCHEMA_VERSION + 1} is newer than this dsh-stablemem supports \\(${SCHEMA_VERSION}\\)`),
  })
  t.same(readFileSync(path), before, 'not one byte changed')
  t.notOk(existsSync(`${path}-wal`), 'no WAL file created')
  t.match(await refusal(() => new BlockStore(path)), { code: 'newer_schema' }, 'refused again, same reason')
})

t.test('mutation: an opener that switches to WAL before checking the version changes the refused file', async (t) => {
  // Proves the byte-identical assertion above can fail: the order the store had before this fix.
  const path = newerFile()
  const before = readFileSync(path)
  const db = new DatabaseSync(path)
  db.exec('PRAGMA journal_mode = WAL')
  t.throws(() => refuseNewerSchema(db), /newer/)
  db.close()
  t.notSame(readFileSync(path), before, 'the WAL switch rewrote the header of a file we were about to refuse')
})
