/**
 * Scopes in the store: membership is not part of the content id, so the same text saved in two
 * workspaces is one block in both; removing one membership keeps the other; moving to global
 * replaces workspace memberships; export/import keep scopes; a store written before scopes
 * existed opens with every note global and recalls exactly as the golden fixture says.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { MIGRATIONS, migrate, SCHEMA_VERSION } from '../../lib/store/schema.ts'
import { GLOBAL_SCOPE, workspaceScope } from '../../lib/store/scope-key.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../../lib/store/transfer.ts'
import { cjkIndexText, withoutCjk } from '../../lib/text/cjk.ts'
import { GOLDEN_NOTES, GOLDEN_QUERIES, readGolden } from '../recall/golden-recall.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { refusal } from '../helpers/refusal.ts'
import { tempDir } from '../helpers/temp.ts'

const root = realpathSync(tempDir('stablemem-scopes'))
const A = join(root, 'project-a')
const B = join(root, 'project-b')
mkdirSync(A)
mkdirSync(B)
const WS_A = workspaceScope(A)
const WS_B = workspaceScope(B)

t.test('the same text saved in two workspaces is one block in both scopes; each workspace recalls it', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const first = store.commit({ text: 'billing 服务端口 8499', scope: WS_A })
  const second = store.commit({ text: ' billing 服务端口 8499 ', scope: WS_B })
  t.same(second, { id: first.id, created: false }, 'one content address, the second commit creates nothing')
  t.equal(first.id, blockId('billing 服务端口 8499'), 'the id is the hash of the text alone')
  t.equal(store.count(), 1)
  t.same(store.scopes.of(first.id), [WS_A, WS_B])
  t.same(store.scopes.counts(), [{ scope: WS_A, notes: 1 }, { scope: WS_B, notes: 1 }])
  for (const scope of [WS_A, WS_B]) t.same(recallBlocks(store, 'billing 端口', { scopes: [GLOBAL_SCOPE, scope] }).map((h) => h.id), [first.id], `recalled in ${scope}`)
  t.same(recallBlocks(store, 'billing 端口', { scopes: [GLOBAL_SCOPE] }), [], 'not a global note')
})

t.test('removing one membership keeps the other; the last one cannot be removed', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const { id } = store.commit({ text: 'redis 端口 6380', scope: WS_A })
  store.commit({ text: 'redis 端口 6380', scope: WS_B })
  t.equal(store.scopes.remove([id], WS_A), 1)
  t.same(store.scopes.of(id), [WS_B])
  t.same(recallBlocks(store, 'redis 端口', { scopes: [GLOBAL_SCOPE, WS_A] }), [], 'gone from A')
  t.same(recallBlocks(store, 'redis 端口', { scopes: [GLOBAL_SCOPE, WS_B] }).map((h) => h.id), [id], 'still in B')
  t.equal(store.scopes.remove([id], WS_A), 0, 'removing a membership it does not have changes nothing')
  t.match(await refusal(() => store.scopes.remove([id], WS_B)), { code: 'invalid_input', message: /belongs only to workspace:/ })
  t.same(store.scopes.of(id), [WS_B], 'the refused removal changed nothing')
  t.match(await refusal(() => store.scopes.remove(['blk_000000000000000000000000'], WS_B)), { code: 'not_found' })
})

t.test('moving to global replaces workspace memberships; moving to a workspace leaves global', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const { id } = store.commit({ text: '回复用中文', scope: WS_A })
  store.commit({ text: '回复用中文', scope: WS_B })
  t.equal(store.scopes.set([id], GLOBAL_SCOPE), 1)
  t.same(store.scopes.of(id), [GLOBAL_SCOPE])
  t.equal(store.scopes.set([id], GLOBAL_SCOPE), 0, 'already there: nothing changes')
  t.equal(store.scopes.set([id], WS_A), 1)
  t.same(store.scopes.of(id), [WS_A])
  t.equal(store.scopes.add([id], GLOBAL_SCOPE), 1)
  t.same(store.scopes.of(id), [GLOBAL_SCOPE, WS_A], 'global is listed first')
  t.match(await refusal(() => store.scopes.set([id], 'workspace:relative/dir')), { code: 'invalid_input', message: /normalised absolute directory/ })
  t.match(await refusal(() => store.scopes.set([id], 'team')), { code: 'invalid_input', message: /not a scope/ })
  t.match(await refusal(() => store.commit({ text: 'x', scope: 'workspace:/a/../b' })), { code: 'invalid_input', message: /scope: .*normalised/ })
  t.equal(store.get(blockId('x')), undefined, 'a commit with a bad scope stores nothing')
})

t.test('abstention and supersede work within the union', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务端口 8499', scope: WS_A })
  store.commit({ text: 'billing 服务部署在 10.3.7.9' })
  const inB = recallBlocks(store, 'billing 端口是 8499 吗', { scopes: [GLOBAL_SCOPE, WS_B] })
  t.same(inB, [])
  t.same(inB.abstained?.missing, ['8499'], 'B abstains: no note it can see holds 8499')
  t.notOk(recallBlocks(store, 'billing 端口是 8499 吗', { scopes: [GLOBAL_SCOPE, WS_A] }).abstained, 'A holds it')

  const old = store.commit({ text: 'gateway 端口 9000' })
  const next = store.commit({ text: 'gateway 端口 9100', supersedes: old.id, scope: WS_A })
  const ids = (scopes?: string[]) => recallBlocks(store, 'gateway 端口', { scopes }).map((h) => h.id)
  t.same(ids([GLOBAL_SCOPE, WS_A]).filter((id) => id === old.id || id === next.id), [next.id], 'in A the replacement wins')
  t.same(ids([GLOBAL_SCOPE, WS_B]), [old.id], 'B cannot see the replacement, so the global note stays current there')
  t.same(ids().filter((id) => id === old.id || id === next.id), [next.id], 'unscoped: superseded as before')
})

t.test('mutation: without the membership test in the FTS query, another workspace\'s note is recalled', async (t) => {
  const m = mutant({ file: 'store/scopes.ts', from: 'WHERE blocks_fts MATCH ? AND ${inUnion(\'blocks_fts.rowid\')}\n      ORDER BY', to: 'WHERE blocks_fts MATCH ? AND (? IS NOT NULL)\n      ORDER BY' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const { recallBlocks: mutatedRecall } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const store = new Mutated(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务端口 8499', scope: WS_A })
  t.equal(mutatedRecall(store, 'billing 端口', { scopes: [GLOBAL_SCOPE, WS_B] }).length, 1, 'leaks into B')
})

t.test('mutation: abstention counting every note lets another workspace\'s symbol suppress the "no record" answer', async (t) => {
  const m = mutant({ file: 'recall/recall.ts', from: '    return scopes === undefined || store.scopes.anyMatch(match, scopes)\n', to: '    return true\n' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutatedRecall } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务端口 8499', scope: WS_A })
  t.notOk(mutatedRecall(store, 'billing 端口是 8499 吗', { scopes: [GLOBAL_SCOPE, WS_B] }).abstained, 'no abstention: a note outside the union was counted')
})

t.test('mutation: supersede across the whole store hides a global note in a workspace that cannot see its replacement', async (t) => {
  const m = mutant({ file: 'recall/recall.ts', from: 'b.supersededBy === null || (visible !== undefined && !visible.has(b.supersededBy))', to: 'b.supersededBy === null' })
  t.teardown(() => m.remove())
  const { recallBlocks: mutatedRecall } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const old = store.commit({ text: 'gateway 端口 9000' })
  store.commit({ text: 'gateway 端口 9100', supersedes: old.id, scope: WS_A })
  t.same(mutatedRecall(store, 'gateway 端口', { scopes: [GLOBAL_SCOPE, WS_B] }), [], 'B lost the only gateway note it can see')
})

t.test('export and import keep scopes; an export without scopes imports as global', async (t) => {
  const source = new BlockStore(':memory:')
  t.teardown(() => source.close())
  const both = source.commit({ text: 'billing 服务端口 8499', scope: WS_A }).id
  source.commit({ text: 'billing 服务端口 8499', scope: WS_B })
  const global = source.commit({ text: '我的时区是上海' }).id
  const preset = source.commit({ text: 'reviewer 只看 diff', scope: 'preset:review' }).id
  const lines = [...exportJsonl(source)]
  t.match(JSON.parse(lines[1]!), { record: 'block', id: both, scopes: [WS_A, WS_B] })

  const target = new BlockStore(tempStorePath('import'))
  t.teardown(() => target.close())
  t.match(await importJsonl(target, lines), { blocksCreated: 3 })
  t.same([both, global, preset].map((id) => target.scopes.of(id)), [[WS_A, WS_B], [GLOBAL_SCOPE], ['preset:review']])
  t.match(await importJsonl(target, lines), { blocksCreated: 0, blocksMerged: 3 }, 'idempotent')
  t.same(target.scopes.counts().reduce((n, c) => n + c.notes, 0), 4, 'no membership duplicated')

  const legacy = new BlockStore(':memory:')
  t.teardown(() => legacy.close())
  const old = lines.map((line) => { const r = JSON.parse(line) as Record<string, unknown>; delete r.scopes; return JSON.stringify(r) })
  t.match(await importJsonl(legacy, old), { blocksCreated: 3 })
  t.same([both, global, preset].map((id) => legacy.scopes.of(id)), [[GLOBAL_SCOPE], [GLOBAL_SCOPE], [GLOBAL_SCOPE]], 'exports made before scopes: every note global')
  const bad = lines.map((line, i) => i === 1 ? line.replace(`"scopes":["${WS_A}"`, '"scopes":["team"') : line)
  const fresh = new BlockStore(':memory:')
  t.teardown(() => fresh.close())
  t.match(await importJsonl(fresh, bad), { failure: { line: 2, message: /not a scope/ } }, 'an unknown scope stops the import at its line')
})

/** The schema version files had before scopes (found by content: the integrator may reorder migrations). */
const BEFORE_SCOPES = MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE memberships'))

t.test('a store written before scopes opens with every note global, and recall matches the golden fixture', async (t) => {
  t.ok(BEFORE_SCOPES > 0 && BEFORE_SCOPES < SCHEMA_VERSION)
  const path = tempStorePath('pre-scopes')
  const db = new DatabaseSync(path)
  migrate(db, BEFORE_SCOPES)
  // The golden notes as the previous release stored them: same times, tags and index rows.
  let clock = Date.UTC(2026, 0, 1)
  const insert = db.prepare(`INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at) VALUES (?, ?, 'golden', ?, '', ?, ?) RETURNING rowid`)
  for (const note of GOLDEN_NOTES) {
    const { rowid } = insert.get(blockId(note.text), note.text, note.scene ?? '', clock, clock) as { rowid: number }
    db.prepare('INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)').run(rowid, withoutCjk(note.text), cjkIndexText(note.text))
    clock += 1000
  }
  db.close()

  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.equal(store.stats().schemaVersion, SCHEMA_VERSION)
  t.same(store.scopes.counts(), [{ scope: GLOBAL_SCOPE, notes: GOLDEN_NOTES.length }], 'every note is global')
  const expected = readGolden()
  for (const scopes of [[GLOBAL_SCOPE], [GLOBAL_SCOPE, WS_A], undefined]) {
    const actual = GOLDEN_QUERIES.map(({ query, topK }) => {
      const hits = recallBlocks(store, query, { topK, scopes })
      return { query, topK, hits: [...hits], abstained: hits.abstained !== undefined }
    })
    t.strictSame(actual, expected, `golden fixture unchanged with scopes ${JSON.stringify(scopes ?? 'all')}`)
  }
  t.same(store.integrityCheck(), ['ok'])
})
