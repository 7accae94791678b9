/**
 * The team schema migrates forward from every older version on a real server: a database at
 * version 1 (notes with a tsvector, no postings), owned by a role that is not a superuser and
 * holding a team's notes behind forced row-level security, is brought to the current version by
 * its owner; the backfilled postings are exactly what writing the notes now would give, the team
 * role ranks them like the local store, and it can share and forget without new grants. A
 * database at version 2 loses its trigram index (no statement reads it) and keeps its notes.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { forgetShared } from '../../lib/team/forget.ts'
import { grantTeam, migrateTeamSchema, schemaState, TEAM_MIGRATIONS, TEAM_SCHEMA_VERSION } from '../../lib/team/schema.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { noteTerms, noteTokens, packTokens } from '../../lib/team/terms.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startPostgres, type PgServer } from '../helpers/postgres.ts'
import { statisticsOf } from './setup.ts'

let server: PgServer
t.before(async () => {
  server = await startPostgres()
})
t.teardown(() => server?.stop())

const NOTES = ['billing 服务端口 8499，部署在 10.3.7.9', 'The staging database runs PostgreSQL 15 on port 5433', '发布流程：先跑 npm test 再打 tag v2.3.1',
  'Redis cache for sessions listens on 6379', 'billing 的数据库备份每天凌晨三点', 'The VPN gateway is vpn.corp.example at 10.8.0.1']
const QUERIES = ['billing 服务端口是多少？', '10.3.7.9 上跑的是什么', 'which port does redis use', 'v2.3.1 发布流程', '数据库备份时间']

async function connect(user: string, password: string, database: string): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: server.port, user, password, database })
  await client.connect()
  return client
}

/**
 * A database at version 1 as its release created it, by an owner that is not a superuser, with
 * the grant it gave a team role, and the team's notes as version 1 wrote them.
 */
async function versionOne(t: Test, names: { database: string, owner: string, team: string }): Promise<{ owner: pg.Client, team: pg.Client, store: BlockStore }> {
  const admin = await server.admin()
  await admin.query(`CREATE ROLE ${names.owner} LOGIN PASSWORD 'keeper'`)
  await admin.query(`CREATE ROLE ${names.team} LOGIN PASSWORD 'team'`)
  await admin.query(`CREATE DATABASE ${names.database} OWNER ${names.owner}`)
  await admin.end()
  const owner = await connect(names.owner, 'keeper', names.database)
  t.teardown(() => owner.end())
  await owner.query('BEGIN')
  await owner.query(TEAM_MIGRATIONS[0]!)
  await owner.query("UPDATE stablemem.meta SET value = '1' WHERE key = 'version'")
  await owner.query("INSERT INTO stablemem.access VALUES ($1, 'old')", [names.team])
  await owner.query(`GRANT USAGE ON SCHEMA stablemem TO ${names.team}; GRANT SELECT ON stablemem.meta, stablemem.access TO ${names.team};
    GRANT SELECT, INSERT, UPDATE, DELETE ON stablemem.notes, stablemem.terms, stablemem.stats TO ${names.team}; GRANT EXECUTE ON FUNCTION stablemem.my_namespace() TO ${names.team}`)
  await owner.query('COMMIT')
  const team = await connect(names.team, 'team', names.database)
  t.teardown(() => team.end())
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const df = new Map<string, number>()
  let tokens = 0
  for (const [i, text] of NOTES.entries()) {
    const { id } = store.commit({ text })
    const toks = noteTokens(text)
    const terms = noteTerms(toks)
    tokens += toks.latin.length + toks.cjk.length
    for (const k of terms) df.set(k, (df.get(k) ?? 0) + 1)
    await team.query(`INSERT INTO stablemem.notes (namespace, id, text, terms, toks, doc_len, member, created_at)
      VALUES ('old', $1, $2, array_to_tsvector($3::text[]), $4, $5, 'm', $6)`, [id, text, terms, packTokens(toks), toks.latin.length + toks.cjk.length, 1_000 + i])
  }
  await team.query("INSERT INTO stablemem.terms SELECT 'old', t, n FROM unnest($1::text[], $2::int[]) AS u(t, n)", [[...df.keys()], [...df.values()]])
  await team.query("INSERT INTO stablemem.stats VALUES ('old', $1, $2)", [NOTES.length, tokens])
  return { owner, team, store }
}

/** Rows of the team's notes the owner can see: 0 while row-level security is forced on it. */
async function ownerSees(owner: pg.Client): Promise<number> {
  return Number((await owner.query('SELECT count(*) FROM stablemem.notes')).rows[0].count)
}

t.test('version 1 → current: postings backfilled under forced row-level security, ranking and writes work', async (t) => {
  const { owner, team, store } = await versionOne(t, { database: 'old', owner: 'keeper', team: 'team_old' })
  t.same(await schemaState(owner), { kind: 'ours', version: 1 })
  t.equal(await migrateTeamSchema(owner, 'old'), 1, 'the owner migrates from version 1')
  t.same(await schemaState(owner), { kind: 'ours', version: TEAM_SCHEMA_VERSION })
  const { kept, expected } = await statisticsOf(server, 'old', 'old')
  t.same(kept, expected, 'the postings are what the rows say')
  t.equal(await ownerSees(owner), 0, 'row-level security is forced again: the owner sees no team rows')
  t.equal((await owner.query("SELECT to_regclass('stablemem.notes_text_trgm') AS trgm")).rows[0].trgm, null, 'the trigram index, read by no statement since phrases go through the postings, is gone')
  for (const q of QUERIES) {
    const local = recallBlocks(store, q, { topK: 5, abstain: false })
    const found = await teamRecall(team, 'old', q, 5)
    t.same(found.hits.map((h) => [h.id, h.score.toFixed(9)]), local.map((h) => [h.id, h.score.toFixed(9)]), q)
  }
  const [shared] = await shareNotes(team, [{ text: 'the build cache lives on 10.4.4.4' }], { namespace: 'old', member: 'm', secrets: 'redact', maxBlockChars: 32_768 })
  t.ok(shared!.created, 'the team role shares without a new grant')
  t.same((await forgetShared(team, 'old', [shared!.id])).deleted.map((n) => n.id), [shared!.id], 'and forgets')
  const after = await statisticsOf(server, 'old', 'old')
  t.same(after.kept, after.expected)
})

t.test('version 2 → current: the trigram index goes, the notes stay, phrases are found without it', async (t) => {
  const admin = await server.admin()
  await admin.query("CREATE ROLE keeper2 LOGIN PASSWORD 'keeper'")
  await admin.query("CREATE ROLE team_two LOGIN PASSWORD 'team'")
  await admin.query('CREATE DATABASE two OWNER keeper2')
  await admin.end()
  const owner = await connect('keeper2', 'keeper', 'two')
  t.teardown(() => owner.end())
  await owner.query('BEGIN')
  for (const [v, sql] of TEAM_MIGRATIONS.slice(0, 2).entries()) {
    await owner.query(sql)
    await owner.query("UPDATE stablemem.meta SET value = $1 WHERE key = 'version'", [String(v + 1)])
  }
  await grantTeam(owner, 'team_two', 'two')
  await owner.query('COMMIT')
  const team = await connect('team_two', 'team', 'two')
  t.teardown(() => team.end())
  const store = new BlockStore(':memory:', { now: () => 1_000 })
  t.teardown(() => store.close())
  for (const text of NOTES) store.commit({ text })
  await shareNotes(team, NOTES.map((text) => ({ text })), { namespace: 'two', member: 'm', secrets: 'redact', maxBlockChars: 32_768, now: 1_000 })
  t.not((await owner.query("SELECT to_regclass('stablemem.notes_text_trgm') AS trgm")).rows[0].trgm, null, 'version 2 has the trigram index')
  t.equal(await migrateTeamSchema(owner, 'two'), 2, 'the owner migrates from version 2')
  t.same(await schemaState(owner), { kind: 'ours', version: TEAM_SCHEMA_VERSION })
  t.equal((await owner.query("SELECT to_regclass('stablemem.notes_text_trgm') AS trgm")).rows[0].trgm, null, 'and it is gone')
  const { kept, expected } = await statisticsOf(server, 'two', 'two')
  t.same(kept, expected, 'the statistics are untouched')
  for (const q of QUERIES) {
    const local = recallBlocks(store, q, { topK: 5, abstain: false })
    const found = await teamRecall(team, 'two', q, 5)
    t.same(found.hits.map((h) => [h.id, h.score.toFixed(9)]), local.map((h) => [h.id, h.score.toFixed(9)]), q)
  }
})

t.test('mutation: without forcing row-level security again, the migrating owner reads every team row', async (t) => {
  const m = mutant({ file: 'team/schema.ts', from: '  ALTER TABLE stablemem.notes FORCE ROW LEVEL SECURITY;\n  ALTER TABLE stablemem.postings ENABLE', to: '  ALTER TABLE stablemem.postings ENABLE' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/schema.ts')>('team/schema.ts')
  const { owner } = await versionOne(t, { database: 'old_mutant', owner: 'keeper_mutant', team: 'team_mutant' })
  t.equal(await mutated.migrateTeamSchema(owner, 'old'), 1)
  t.equal(await ownerSees(owner), NOTES.length, 'the guard is what hides the team rows from the owner')
})
