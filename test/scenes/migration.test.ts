/**
 * The scene migration on a file of the previous schema: stored `scene` values are normalised
 * (never left raw), each becomes a declared scene, and its notes are attached to it.
 */
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { MIGRATIONS, SCHEMA_VERSION, migrate } from '../../lib/store/schema.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'

const BEFORE_SCENES = MIGRATIONS.findIndex((sql) => sql.includes('-- data-step: scenes'))

t.test('an older file opens with its scene values normalised and declared', async (t) => {
  t.ok(BEFORE_SCENES > 0)
  const path = tempStorePath('pre-scenes')
  const db = new DatabaseSync(path)
  migrate(db, BEFORE_SCENES)
  const insert = db.prepare(`INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at)
    VALUES (?, ?, 'legacy', ?, '', 5, 7) RETURNING rowid`)
  const rows: Array<[string, string]> = [['rule one', 'Chan:QQ'], ['rule two', 'chan:qq'], ['部署说明', ' 部署 / Nginx '], ['odd', '!!!']]
  for (const [text, scene] of rows) {
    const { rowid } = insert.get(blockId(text), text, scene) as { rowid: number }
    db.prepare("INSERT INTO memberships (block_rowid, scope, created_at) VALUES (?, 'global', 5)").run(rowid)
  }
  db.close()
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
  t.same(rows.map(([text]) => store.get(blockId(text))!.scene), ['chan:qq', 'chan:qq', '部署/nginx', ''])
  const scenes = store.scenes.list().map((s) => [s.key, s.origin, s.strength, s.refs]).sort((a, b) => String(a[0]) < String(b[0]) ? -1 : 1)
  t.same(scenes, [['chan:qq', 'declared', 1, 2], ['部署/nginx', 'declared', 1, 1]])
  t.same(store.scenes.attached(['chan:qq'], ['global'], 10).map((r) => r.blockId).sort(), [blockId('rule one'), blockId('rule two')].sort())
  t.same(store.integrityCheck(), ['ok'])
})
