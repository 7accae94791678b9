/**
 * Forgetting team notes by filter on a real PostgreSQL server: `{ scene }`, `{ source }`,
 * `{ before }` (narrowing together) and `{ all: true }` delete exactly the matching notes of the
 * caller's namespace — never another team's, even when the namespace argument names it, as
 * row-level security refuses — with the statistics, postings and supersede marks kept in step;
 * `dryRun` changes nothing; malformed filters are refused before anything is sent. Mutation
 * checks: without the `before` clause a time filter deletes newer notes too; without the postings
 * delete the forgotten notes' postings stay behind.
 */
import t from 'tap'
import type pg from 'pg'
import { forgetShared } from '../../lib/team/forget.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { shareNotes, type SharedNoteInput } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, statisticsOf, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let a: TeamRole
let b: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
  b = await db.role('team_b', 'beta')
})
t.teardown(() => db?.stop())

const as = (role: TeamRole): Promise<pg.Client> => db.connect(role)

const DAY = 86_400_000
const T0 = Date.parse('2026-03-01T00:00:00Z')

/** Notes of three ages, two sources and two scenes, shared one call per age. */
async function seed(client: pg.Client, namespace: string): Promise<void> {
  const at = (day: number, notes: SharedNoteInput[]) => shareNotes(client, notes, { namespace, member: 'm', secrets: 'redact', maxBlockChars: 32_768, now: T0 + day * DAY })
  await at(0, [
    { text: `${namespace} billing 服务端口 8499`, source: 'ops', scene: 'chan:ops' },
    { text: `${namespace} nginx 配置在 /etc/nginx/nginx.conf`, source: 'ops', scene: 'chan:web' },
  ])
  await at(10, [
    { text: `${namespace} deploy 窗口是周四晚上`, source: 'release', scene: 'chan:ops' },
    { text: `${namespace} the release train leaves every second Tuesday`, source: 'release', scene: 'chan:web' },
  ])
  await at(20, [
    { text: `${namespace} Redis cache for sessions listens on 6379`, source: 'ops', scene: 'chan:ops' },
  ])
}

async function texts(client: pg.Client): Promise<string[]> {
  return (await client.query<{ text: string }>('SELECT text FROM stablemem.notes ORDER BY seq')).rows.map((r) => r.text)
}

t.test('each filter deletes exactly its notes in the caller\'s namespace, statistics in step', async (t) => {
  const ca = await as(a)
  const cb = await as(b)
  t.teardown(async () => { await ca.end(); await cb.end() })
  const reset = async () => {
    await forgetShared(ca, 'alpha', { all: true })
    await seed(ca, 'alpha')
  }
  await seed(cb, 'beta')
  const beta = await texts(cb)
  const cases: Array<[string, Parameters<typeof forgetShared>[2], string[]]> = [
    ['source', { source: 'ops' }, ['alpha deploy 窗口是周四晚上', 'alpha the release train leaves every second Tuesday']],
    ['scene (any spelling of the key)', { scene: 'Chan:OPS' }, ['alpha nginx 配置在 /etc/nginx/nginx.conf', 'alpha the release train leaves every second Tuesday']],
    ['before', { before: new Date(T0 + 10 * DAY).toISOString() }, ['alpha deploy 窗口是周四晚上', 'alpha the release train leaves every second Tuesday', 'alpha Redis cache for sessions listens on 6379']],
    ['scene and before narrow together', { scene: 'chan:ops', before: T0 + 15 * DAY }, ['alpha nginx 配置在 /etc/nginx/nginx.conf', 'alpha the release train leaves every second Tuesday', 'alpha Redis cache for sessions listens on 6379']],
    ['all', { all: true }, []],
  ]
  for (const [name, filter, left] of cases) {
    await reset()
    const before = await texts(ca)
    const preview = await forgetShared(ca, 'alpha', filter, { dryRun: true })
    t.same(await texts(ca), before, `${name}: a dry run changes nothing`)
    const result = await forgetShared(ca, 'alpha', filter)
    t.same(result.deleted.map((n) => n.text), before.filter((x) => !left.includes(x)), `${name}: the matching notes, oldest first`)
    t.same(preview.deleted.map((n) => n.id), result.deleted.map((n) => n.id), `${name}: what the dry run listed`)
    t.same(await texts(ca), left, `${name}: the rest stay`)
    const { kept, expected } = await statisticsOf(db.server, db.database, 'alpha')
    t.same(kept, expected, `${name}: counts, document frequencies and postings match the rows`)
    t.same(await texts(cb), beta, `${name}: the other team's notes are untouched`)
  }
  const found = await teamRecall(ca, 'alpha', 'billing 服务端口', 5)
  t.same(found.hits, [], 'a forgotten note is not recalled')
})

t.test('another team\'s namespace cannot be named; bad filters are refused before anything is sent', async (t) => {
  const ca = await as(a)
  const cb = await as(b)
  t.teardown(async () => { await ca.end(); await cb.end() })
  await forgetShared(cb, 'beta', { all: true })
  await seed(cb, 'beta')
  const beta = await texts(cb)
  const result = await forgetShared(ca, 'beta', { all: true })
  t.same(result.deleted, [], 'row-level security shows alpha\'s role no beta rows to delete')
  t.same(await texts(cb), beta)
  await t.rejects(forgetShared(ca, 'alpha', {}), /the filter is empty/)
  await t.rejects(forgetShared(ca, 'alpha', { when: 'x' } as never), /unknown filter field when/)
  await t.rejects(forgetShared(ca, 'alpha', { all: true, source: 'ops' } as never), /all cannot be combined/)
  await t.rejects(forgetShared(ca, 'alpha', { before: 'last week' }), /before must be a time/)
  await t.rejects(forgetShared(ca, 'alpha', ['not-an-id']), /not a block id/)
  t.same(await texts(cb), beta, 'nothing was deleted')
})

t.test('a forgotten note\'s supersede is undone; ids report unknown', async (t) => {
  const ca = await as(a)
  t.teardown(() => ca.end())
  await forgetShared(ca, 'alpha', { all: true })
  const options = { namespace: 'alpha', member: 'm', secrets: 'redact' as const, maxBlockChars: 32_768 }
  const [old] = await shareNotes(ca, [{ text: 'billing port 8499', source: 'ops' }], options)
  const [next] = await shareNotes(ca, [{ text: 'billing port 8500', source: 'fix', supersedes: old!.id }], options)
  const result = await forgetShared(ca, 'alpha', { source: 'fix' })
  t.same(result.restored, [old!.id], 'the replaced note is current again')
  t.same((await teamRecall(ca, 'alpha', 'billing port', 5)).hits.map((h) => h.id), [old!.id])
  const missing = 'blk_000000000000000000000000'
  const byIds = await forgetShared(ca, 'alpha', [old!.id, missing, next!.id])
  t.same([byIds.deleted.map((n) => n.id), byIds.unknown], [[old!.id], [missing, next!.id]])
})

t.test('mutation: without the before clause a time filter deletes newer notes too', async (t) => {
  const m = mutant({ file: 'team/forget.ts', from: 'if (filter.before !== undefined) {', to: 'if (filter.before === undefined && false) {' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/forget.ts')>('team/forget.ts')
  const ca = await as(a)
  t.teardown(() => ca.end())
  await forgetShared(ca, 'alpha', { all: true })
  await seed(ca, 'alpha')
  const result = await mutated.forgetShared(ca, 'alpha', { before: T0 + 5 * DAY })
  t.equal(result.deleted.length, 5, 'the guard is what keeps the newer notes')
})

t.test('mutation: without the postings delete the statistics drift from the rows', async (t) => {
  const m = mutant({ file: 'team/forget.ts', from: 'await client.query(`DELETE FROM stablemem.postings p', to: 'void (`DELETE FROM stablemem.postings p' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/forget.ts')>('team/forget.ts')
  const ca = await as(a)
  t.teardown(() => ca.end())
  await forgetShared(ca, 'alpha', { all: true })
  await seed(ca, 'alpha')
  await mutated.forgetShared(ca, 'alpha', { source: 'ops' })
  const { kept, expected } = await statisticsOf(db.server, db.database, 'alpha')
  t.not(JSON.stringify(kept), JSON.stringify(expected), 'the check sees the postings left behind')
})
