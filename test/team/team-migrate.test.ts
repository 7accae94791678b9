/**
 * The team schema migrates forward from every older version on a real server: a database at
 * version 1 (notes with a tsvector, no postings), owned by a role that is not a superuser and
 * holding a team's notes behind forced row-level security, is brought to the current version by
 * its owner; the backfilled postings are exactly what writing the notes now would give, the team
 * role ranks them like the local store, and it can share and forget without new grants.
 */
import t from 'tap'
import pg from 'pg'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { forgetShared } from '../../lib/team/forget.ts'
import { migrateTeamSchema, schemaState, TEAM_MIGRATIONS, TEAM_SCHEMA_VERSION } from '../../lib/team/schema.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { noteTerms, noteTokens, packTokens } from '../../lib/team/terms.ts'
import { shareNotes } from '../../lib/team/write.ts'
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

async function connect(user: string, password: string): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: server.port, user, password, database: 'old' })
  await client.connect()
  return client
}

t.test('version 1 → current: postings backfilled under forced row-level security, ranking and writes work', async (t) => {
  const admin = await server.admin()
  await admin.query("CREATE ROLE keeper LOGIN PASSWORD 'keeper'")
  await admin.query("CREATE ROLE team_old LOGIN PASSWORD 'team'")
  await admin.query('CREATE DATABASE old OWNER keeper')
  await admin.end()
  // Version 1 as its release created it, by the database owner, and the grant it gave a team role.
  const owner = await connect('keeper', 'keeper')
  t.teardown(() => owner.end())
  await owner.query('BEGIN')
  await owner.query(TEAM_MIGRATIONS[0]!)
  await owner.query("UPDATE stablemem.meta SET value = '1' WHERE key = 'version'")
  await owner.query("INSERT INTO stablemem.access VALUES ('team_old', 'old')")
  await owner.query(`GRANT USAGE ON SCHEMA stablemem TO team_old; GRANT SELECT ON stablemem.meta, stablemem.access TO team_old;
    GRANT SELECT, INSERT, UPDATE, DELETE ON stablemem.notes, stablemem.terms, stablemem.stats TO team_old; GRANT EXECUTE ON FUNCTION stablemem.my_namespace() TO team_old`)
  await owner.query('COMMIT')
  // The team's notes as version 1 wrote them.
  const team = await connect('team_old', 'team')
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

  t.same(await schemaState(owner), { kind: 'ours', version: 1 })
  t.equal(await migrateTeamSchema(owner, 'old'), 1, 'the owner migrates from version 1')
  t.same(await schemaState(owner), { kind: 'ours', version: TEAM_SCHEMA_VERSION })
  const { kept, expected } = await statisticsOf(server, 'old', 'old')
  t.same(kept, expected, 'the postings are what the rows say')
  t.equal(Number((await owner.query('SELECT count(*) FROM stablemem.notes')).rows[0].count), 0, 'row-level security is forced again: the owner sees no team rows')
  for (const q of QUERIES) {
    const local = recallBlocks(store, q, { topK: 5, abstain: false })
    const found = await teamRecall(team, 'old', q, 5, () => [])
    t.same(found.hits.map((h) => [h.id, h.score.toFixed(9)]), local.map((h) => [h.id, h.score.toFixed(9)]), q)
  }
  const [shared] = await shareNotes(team, [{ text: 'the build cache lives on 10.4.4.4' }], { namespace: 'old', member: 'm', secrets: 'redact', maxBlockChars: 32_768 })
  t.ok(shared!.created, 'the team role shares without a new grant')
  t.same((await forgetShared(team, 'old', [shared!.id])).deleted.map((n) => n.id), [shared!.id], 'and forgets')
  const after = await statisticsOf(server, 'old', 'old')
  t.same(after.kept, after.expected)
})
