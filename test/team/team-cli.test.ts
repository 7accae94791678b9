/**
 * The team layer from the shell, on a real PostgreSQL server: `stablemem team init` creates the
 * schema in an empty database and grants a role its namespace; `commit --shared` and
 * `share <id>` write team notes another agent's store then recalls; `doctor --team` reports the
 * server, schema, namespace grant and access, and names what to fix when they are wrong;
 * `forget --shared` deletes team notes by filter with `forget`'s preview, confirmation, `--yes`,
 * `--dry-run` and `--json` rules (mutation check: without the dry-run guard `--dry-run --yes`
 * deletes).
 */
import t from 'tap'
import { runCli } from '../helpers/cli.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { startPostgres, type PgServer } from '../helpers/postgres.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { TeamLayer } from '../../lib/team/layer.ts'
import { mutant } from '../helpers/mutant.ts'
import { join } from 'node:path'

let server: PgServer
const ROLE_PW = 'ops-password-1'
t.before(async () => {
  server = await startPostgres()
  const admin = await server.admin()
  await admin.query('CREATE DATABASE teamcli')
  await admin.query(`CREATE ROLE ops LOGIN PASSWORD '${ROLE_PW}'`)
  await admin.end()
})
t.teardown(() => server?.stop())

const asOwner = () => ({ ...process.env, STABLEMEM_TEAM_URL: server.url('teamcli'), STABLEMEM_TEAM_NAMESPACE: 'ops', STABLEMEM_TEAM_PASSWORD: server.password })
const asOps = () => ({ ...process.env, STABLEMEM_TEAM_URL: server.url('teamcli', 'ops'), STABLEMEM_TEAM_NAMESPACE: 'ops', STABLEMEM_TEAM_MEMBER: 'oscar', STABLEMEM_TEAM_PASSWORD: ROLE_PW })

t.test('team init, commit --shared, share, doctor --team', async (t) => {
  const before = await runCli(['doctor', '--team', '--db', tempStorePath()], { env: asOps() })
  t.equal(before.code, 1)
  t.match(before.stdout, /fail\s+schema\s+no dsh-stablemem schema in teamcli; create it with `stablemem team init`/)
  const init = await runCli(['team', 'init', '--role', 'ops'], { env: asOwner() })
  t.equal(init.code, 0, init.stderr)
  t.match(init.stdout, /schema version \d+ \(was 0\); role ops granted namespace ops/)
  const db = tempStorePath()
  const committed = await runCli(['commit', 'ops 值班电话 4321', '--shared', '--db', db], { env: asOps() })
  t.equal(committed.code, 0, committed.stderr)
  t.match(committed.stdout, /^saved blk_[0-9a-f]{24}\nshared with ops\n$/)
  const local = await runCli(['commit', 'ops wiki lives at wiki.ops.example', '--db', db, '--json'], { env: asOps() })
  const id = JSON.parse(local.stdout).id as string
  const shared = await runCli(['share', id, '--db', db], { env: asOps() })
  t.equal(shared.code, 0, shared.stderr)
  t.equal(shared.stdout, `shared ${id} with ops\n`)
  t.equal((await runCli(['share', id, '--db', db], { env: asOps() })).stdout, `already shared ${id} with ops\n`)
  const doctor = await runCli(['doctor', '--team', '--db', db], { env: asOps() })
  t.equal(doctor.code, 0, doctor.stdout)
  t.match(doctor.stdout, /ok\s+server\s+ops@127\.0\.0\.1:\d+\/teamcli answers/)
  t.match(doctor.stdout, /ok\s+namespace\s+ops granted to ops/)
  t.match(doctor.stdout, /ok\s+access\s+reads \(2 notes\) and writes/)
  // Another agent's (empty) store recalls both through the team layer.
  process.env.STABLEMEM_TEST_OPS_PW = ROLE_PW
  const layer = new TeamLayer({ url: server.url('teamcli', 'ops'), namespace: 'ops', member: 'x', passwordEnv: 'STABLEMEM_TEST_OPS_PW', budgetMs: 10_000, connectTimeoutMs: 3000, poolSize: 1 },
    { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })
  t.teardown(() => layer.close())
  const answer = await layer.recall('值班电话是多少', 5)
  t.match(answer, { result: { hits: [{ text: 'ops 值班电话 4321', team: { member: 'oscar' } }] } })
  t.ok(new BlockStore(db).get(id))
})

t.test('doctor --team and commit --shared name what is wrong; nothing is saved when sharing cannot work', async (t) => {
  const wrong = { ...asOps(), STABLEMEM_TEAM_PASSWORD: 'nope' }
  const doctor = await runCli(['doctor', '--team', '--db', tempStorePath()], { env: wrong })
  t.equal(doctor.code, 1)
  t.match(doctor.stdout, /fail\s+server\s+team database ops@127\.0\.0\.1:\d+\/teamcli refused the login/)
  const db = tempStorePath()
  const commit = await runCli(['commit', 'never saved', '--shared', '--db', db], { env: wrong })
  t.equal(commit.code, 1)
  t.match(commit.stderr, /team memory is unavailable: .*refused the login.*; nothing was saved/)
  t.equal(commit.stderr.trim().split('\n').length, 1, 'one line')
  const other = await runCli(['doctor', '--team', '--db', tempStorePath()], { env: { ...asOps(), STABLEMEM_TEAM_NAMESPACE: 'finance' } })
  t.match(other.stdout, /fail\s+namespace\s+role ops is granted "ops", not "finance"/)
  t.equal((await runCli(['share', 'blk_000000000000000000000000'], { env: { ...process.env, STABLEMEM_TEAM_URL: '' } })).code, 2, 'no team database: a usage error')
})

t.test('forget --shared: by filter, with the preview, --yes, --dry-run and --json rules of forget', async (t) => {
  process.env.STABLEMEM_TEST_OPS_PW = ROLE_PW
  const layer = new TeamLayer({ url: server.url('teamcli', 'ops'), namespace: 'ops', member: 'rita', passwordEnv: 'STABLEMEM_TEST_OPS_PW', budgetMs: 10_000, connectTimeoutMs: 3000, poolSize: 1 },
    { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })
  t.teardown(() => layer.close())
  await layer.forget({ all: true })
  await layer.share([{ text: 'ops 旧的值班表在 wiki', source: 'import' }, { text: 'ops old runbook at /srv/runbook', source: 'import' }, { text: 'ops pager rota starts Monday', source: 'chat' }])
  const count = async () => (await layer.forget({ all: true }, { dryRun: true })).deleted.length
  const refused = await runCli(['forget', '--shared', '--source', 'import'], { env: asOps() })
  t.equal(refused.code, 2, 'not a terminal and no --yes: a usage error')
  t.match(refused.stderr, /pass --yes to delete, or --dry-run to look/)
  t.equal(await count(), 3, 'nothing deleted')
  const look = await runCli(['forget', '--shared', '--source', 'import', '--dry-run'], { env: asOps() })
  t.equal(look.code, 0, look.stderr)
  t.match(look.stdout, /^would forget 2 team notes from ops:\n  blk_[0-9a-f]{24}  rita: ops 旧的值班表在 wiki\n  blk_[0-9a-f]{24}  rita: ops old runbook at \/srv\/runbook\n$/)
  t.equal(await count(), 3)
  const done = await runCli(['forget', '--shared', '--source', 'import', '--yes', '--json'], { env: asOps() })
  t.equal(done.code, 0, done.stderr)
  t.match(JSON.parse(done.stdout), { deleted: [{ text: 'ops 旧的值班表在 wiki', member: 'rita' }, { text: 'ops old runbook at /srv/runbook' }], unknown: [], dryRun: false })
  t.equal(await count(), 1, 'the other source stays')
  t.equal((await runCli(['forget', '--shared', '--source', 'import', '--yes'], { env: asOps() })).stdout, 'nothing matches: no team note deleted\n')
  t.equal((await runCli(['forget', '--shared', '--all', '--keep-superseded', '--yes'], { env: asOps() })).code, 2, 'a local-only option is a usage error')
  t.equal((await runCli(['forget', '--shared', '--yes'], { env: asOps() })).code, 2, 'an empty filter is a usage error')
  const none = await runCli(['forget', '--shared', '--all', '--yes'], { env: { ...process.env, STABLEMEM_TEAM_URL: '' } })
  t.equal(none.code, 2)
  t.match(none.stderr, /no team database/)
  t.equal(await count(), 1)
})

t.test('mutation: without the dry-run guard, forget --shared --dry-run --yes deletes', async (t) => {
  const m = mutant({ file: 'cli/commands/forget.ts', from: 'if (dryRun || preview.deleted.length === 0) {\n      shown(', to: 'if (preview.deleted.length === 0) {\n      shown(' })
  t.teardown(() => m.remove())
  process.env.STABLEMEM_TEST_OPS_PW = ROLE_PW
  const layer = new TeamLayer({ url: server.url('teamcli', 'ops'), namespace: 'ops', member: 'rita', passwordEnv: 'STABLEMEM_TEST_OPS_PW', budgetMs: 10_000, connectTimeoutMs: 3000, poolSize: 1 },
    { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })
  t.teardown(() => layer.close())
  await layer.share([{ text: 'ops note the mutant deletes', source: 'mutant' }])
  const left = async () => (await layer.forget({ source: 'mutant' }, { dryRun: true })).deleted.length
  await runCli(['forget', '--shared', '--source', 'mutant', '--dry-run', '--yes'], { env: asOps() })
  t.equal(await left(), 1, 'the real command only looks')
  await runCli(['forget', '--shared', '--source', 'mutant', '--dry-run', '--yes'], { env: asOps(), entry: join(m.dir, 'lib', 'cli', 'main.ts') })
  t.equal(await left(), 0, 'the guard is what keeps the note')
})
