/**
 * Isolation on a real PostgreSQL server: two team roles, each granted its own namespace, with
 * hand-written SQL — a role reads, changes and deletes only its own namespace's rows, cannot
 * write rows into another's, and cannot read who else has access. Mutation check: with the
 * policy made permissive, the same SQL reads the other team's notes. Also: the team layer ranks
 * like the local store (same ids, same order on a mixed Chinese/English set), and forgetting a
 * shared note takes it out of the statistics.
 */
import t from 'tap'
import type pg from 'pg'
import { BlockStore } from '../../lib/store/store.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { forgetShared } from '../../lib/team/forget.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let a: TeamRole
let b: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
  b = await db.role('team_b', 'beta')
})
t.teardown(() => db?.stop())

const as = (role: TeamRole, database = db.database): Promise<pg.Client> => db.connect(role, database)

const share = (client: pg.Client, namespace: string, text: string) => shareNotes(client, [{ text }], { namespace, member: 'm', secrets: 'redact', maxBlockChars: 32_768 })

/** What hand-written SQL as `reader` can do to the rows of `other`'s namespace. */
async function probe(reader: pg.Client, other: string): Promise<{ seen: number, updated: number, deleted: number }> {
  const seen = (await reader.query('SELECT count(*)::int AS n FROM stablemem.notes WHERE namespace = $1', [other])).rows[0].n as number
  const updated = (await reader.query("UPDATE stablemem.notes SET text = 'x' WHERE namespace = $1", [other])).rowCount ?? 0
  const deleted = (await reader.query('DELETE FROM stablemem.notes WHERE namespace = $1', [other])).rowCount ?? 0
  return { seen, updated, deleted }
}

t.test('a role reads and writes only its own namespace, whatever SQL it sends', async (t) => {
  const ca = await as(a)
  const cb = await as(b)
  t.teardown(async () => { await ca.end(); await cb.end() })
  await share(ca, 'alpha', 'alpha billing port 8499')
  await share(cb, 'beta', 'beta secret project codename 北极星')
  t.same((await ca.query('SELECT namespace, text FROM stablemem.notes')).rows, [{ namespace: 'alpha', text: 'alpha billing port 8499' }], 'SELECT * shows only its rows')
  t.same(await probe(ca, 'beta'), { seen: 0, updated: 0, deleted: 0 }, 'the other team\'s rows cannot be read, changed or deleted')
  await t.rejects(ca.query(`INSERT INTO stablemem.notes (namespace, id, text, toks, doc_len, member, created_at) VALUES ('beta', 'blk_000000000000000000000000', 'planted', '', 1, 'x', 0)`),
    /row-level security/, 'a row cannot be written into another namespace')
  await t.rejects(share(ca, 'beta', 'planted through the writer'), /row-level security/, 'nor through the writer')
  t.same((await ca.query('SELECT namespace FROM stablemem.terms GROUP BY namespace')).rows, [{ namespace: 'alpha' }], 'statistics too')
  t.same((await ca.query('SELECT role, namespace FROM stablemem.access')).rows, [{ role: 'team_a', namespace: 'alpha' }], 'and it sees only its own grant')
  await t.rejects(ca.query("UPDATE stablemem.access SET namespace = 'beta'"), /permission denied/, 'it cannot move itself to another namespace')
  await t.rejects(ca.query('ALTER TABLE stablemem.notes DISABLE ROW LEVEL SECURITY'), /must be owner/, 'nor switch the policy off')
  t.equal((await cb.query('SELECT count(*)::int AS n FROM stablemem.notes')).rows[0].n, 1, 'beta\'s note is intact')
})

t.test('mutation: with a permissive policy the same SQL reads the other team\'s notes', async (t) => {
  const m = mutant({ file: 'team/schema.ts', from: 'USING (namespace = (SELECT stablemem.my_namespace())) WITH CHECK', to: 'USING (true) WITH CHECK' })
  t.teardown(() => m.remove())
  await db.migratedDatabase('mutated', await m.load<typeof import('../../lib/team/schema.ts')>('team/schema.ts'), [a, b])
  const ca = await as(a, 'mutated')
  const cb = await as(b, 'mutated')
  t.teardown(async () => { await ca.end(); await cb.end() })
  await share(cb, 'beta', 'beta secret project codename 北极星')
  t.equal((await ca.query('SELECT count(*)::int AS n FROM stablemem.notes WHERE namespace = $1', ['beta'])).rows[0].n, 1, 'the guard is what keeps the rows apart')
})

const NOTES = [
  'billing 服务端口 8499，部署在 10.3.7.9', 'nginx 配置文件在 /etc/nginx/nginx.conf', '值班室分机号 4324，值班人 老周',
  'The staging database runs PostgreSQL 15 on port 5433', 'Deploy the billing service with make deploy-billing', 'Alice prefers tabs over spaces in Go code',
  '发布流程：先跑 npm test 再打 tag v2.3.1', 'The VPN gateway is vpn.corp.example at 10.8.0.1', '周报每周五下午五点前发给老王', 'Redis cache for sessions listens on 6379',
  'billing 的数据库备份每天凌晨三点', 'The release train leaves every second Tuesday', 'Grafana dashboards live at grafana.internal:3000', '新同事入职先申请 VPN 和 GitLab 账号',
]
const QUERIES = ['billing 服务端口是多少？', 'where is the nginx config', '10.3.7.9 上跑的是什么', 'which port does redis use', 'v2.3.1 发布流程', 'when is the release train',
  '老王', 'postgres staging port', 'VPN gateway address', '数据库备份时间', 'grafana', 'tabs or spaces']

t.test('the team layer ranks like the local store', async (t) => {
  const ca = await as(a)
  t.teardown(() => ca.end())
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  await forgetShared(ca, 'alpha', { all: true })
  for (const text of NOTES) {
    store.commit({ text })
    await share(ca, 'alpha', text)
  }
  for (const q of QUERIES) {
    const local = recallBlocks(store, q, { topK: 5, abstain: false })
    const team = await teamRecall(ca, 'alpha', q, 5)
    t.same(team.hits.map((h) => [h.id, h.score.toFixed(9), h.relevance.toFixed(9)]), local.map((h) => [h.id, h.score.toFixed(9), h.relevance.toFixed(9)]), q)
  }
})

t.test('forgetting a shared note takes it out of the statistics; what it superseded is current again', async (t) => {
  const ca = await as(a)
  t.teardown(() => ca.end())
  await forgetShared(ca, 'alpha', { all: true })
  const [old] = await share(ca, 'alpha', 'billing port 8499')
  const [next] = await shareNotes(ca, [{ text: 'billing port 8500', supersedes: old!.id }], { namespace: 'alpha', member: 'm', secrets: 'redact', maxBlockChars: 32_768 })
  t.same((await teamRecall(ca, 'alpha', 'billing port', 5)).hits.map((h) => h.id), [next!.id], 'the superseded note is not recalled')
  t.same((await forgetShared(ca, 'alpha', [next!.id])).deleted.map((n) => n.id), [next!.id])
  t.same((await teamRecall(ca, 'alpha', 'billing port', 5)).hits.map((h) => h.id), [old!.id], 'the older note is current again')
  t.same((await ca.query('SELECT notes::int FROM stablemem.stats')).rows, [{ notes: 1 }])
  t.same((await ca.query("SELECT df FROM stablemem.terms WHERE term = 'l:8500'")).rows, [], 'its terms are gone')
  const [masked] = await share(ca, 'alpha', 'deploy token sk-live-abcdefghijklmnopqrstuvwxyz0123456789')
  t.ok(masked!.redacted, 'the secrets policy applies to shared notes')
  t.notMatch((await ca.query('SELECT text FROM stablemem.notes WHERE id = $1', [masked!.id])).rows[0].text, /abcdefghijklmnop/)
})
