/**
 * The team recall in one round trip (`RECALL` in `lib/team/search.ts`), on a real server: the
 * server chooses the search terms from the document frequencies it reads, by `searchTerms`' rule,
 * and ranks with them; on a varied fixture every query gets the hits, scores, held symbols and
 * superseded ids of the two-statement path (the terms chosen on the client), in one statement.
 * The fixture makes each part of the rule decide something: a lone term past the postings bound
 * (its newest holders), that term beside an exact symbol, terms past the bound, more equally rare
 * terms than the term cap (the alphabetical tie-break), a transcript's weights, more exact
 * symbols than the OR list holds. Mutation checks: each part of the rule changed on the server
 * (the bound, the cap, the tie-break, the listing cap, the newest mode) → the client sees
 * another choice, counts a fallback and asks again, and the answer stays exact; with the check
 * removed, a different choice gives wrong hits. The layer counts fallbacks in `stats()`.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { MAX_MATCH_TERMS } from '../../lib/recall/fts-query.ts'
import { MAX_SEARCH_TERMS, SEARCH_POSTINGS } from '../../lib/recall/recall.ts'
import { TeamLayer } from '../../lib/team/layer.ts'
import { teamRecall, type TeamResult } from '../../lib/team/search.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let role: TeamRole
const NOW = 1_700_000_000_000
const options = (now: number) => ({ namespace: 'trip', member: 'm', secrets: 'redact' as const, maxBlockChars: 32_768, now })

/** Equally rare words (two notes each), more than the term cap: which are searched is the tie-break's choice. */
const TIED = Array.from({ length: MAX_SEARCH_TERMS + 6 }, (_, i) => `zk${String.fromCharCode(97 + i % 26)}${i >= 26 ? 'x' : ''}mble`)
/** Notes per common word: together they pass the postings bound. */
const COMMON = { gamma: 600, delta: 700, omega: 800 }
const LONE = SEARCH_POSTINGS + 100

const QUERIES = [
  '服务', // one term past the bound: its newest holders
  '服务 8499', // the same beside an exact symbol
  'gamma delta omega', // past the bound from the third term
  TIED.join(' '), // more equally rare terms than the cap
  [...TIED].reverse().join(' '),
  `A: ${TIED.slice(0, 10).join(' ')} gamma\nB: ${TIED.slice(10, 20).join(' ')} 服务\nA: ${TIED.slice(5, 15).join(' ')} omega delta`, // a transcript's weights
  `${Array.from({ length: MAX_MATCH_TERMS + 4 }, (_, i) => `h${(0x1000 + i).toString(16)}x`).join(' ')} ${TIED.join(' ')}`, // past the OR list's length
  'what is on 10.6.6.6', 'v2.3.1 发布了什么', 'which zkamble note mentions gamma and 服务端口', 'nothing here xyzzy', '的', '',
]

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: db.server.port, user: role.role, password: role.password, database: db.database })
  await client.connect()
  t.teardown(() => client.end())
  return client
}

t.before(async () => {
  db = await startTeamDb()
  role = await db.role('team_trip', 'trip')
  const client = await connect()
  const common = Array.from({ length: LONE }, (_, i) => ({
    text: `第${i}号服务 ${Object.entries(COMMON).filter(([, n]) => i < n).map(([w]) => w).join(' ')} port ${9000 + i}`,
  }))
  for (let from = 0; from < common.length; from += 500) await shareNotes(client, common.slice(from, from + 500), options(NOW))
  // Tied words shared last-first, so the alphabetically first are the newest: the tie-break decides the top hits.
  for (const [k, word] of [...TIED].reverse().entries()) {
    await shareNotes(client, [{ text: `a ${word} note` }, { text: `another ${word} note` }], options(NOW + 1_000 + k))
  }
  await shareNotes(client, [{ text: 'billing 服务的端口是 8499' }, { text: 'edge box 10.6.6.6 answers pings' }, { text: 'Release v2.3.1 ships the new login page' }], options(NOW + 100_000))
})
t.teardown(() => db?.stop())

type Recall = typeof teamRecall
const answer = (r: TeamResult) => ({ hits: r.hits, held: [...r.heldSymbols], superseded: [...r.supersededLocal] })

/** Each query through `recall` (one round trip) and the two-statement path; how many fell back. */
async function compare(t: Test, recall: Recall, client: pg.Client, label: string): Promise<{ fallbacks: number, different: number }> {
  let fallbacks = 0
  let different = 0
  for (const query of QUERIES) {
    const one = await recall(client, 'trip', query, 5)
    const two = await teamRecall(client, 'trip', query, 5, undefined, undefined, { twoStatements: true })
    t.equal(two.statements, 2, `${label} ${JSON.stringify(query.slice(0, 40))}: the two-statement path`)
    if (one.fallback) fallbacks++
    if (JSON.stringify(answer(one)) !== JSON.stringify(answer(two))) different++
  }
  return { fallbacks, different }
}

t.test('every query: the answer of the two-statement path, in one statement', async (t) => {
  const client = await connect()
  for (const query of QUERIES) {
    const one = await teamRecall(client, 'trip', query, 5)
    const two = await teamRecall(client, 'trip', query, 5, undefined, undefined, { twoStatements: true })
    const label = JSON.stringify(query.slice(0, 40))
    t.same(answer(one), answer(two), `${label}: the same hits, scores, held symbols and superseded ids`)
    t.equal(one.fallback, false, `${label}: the server chose what the client chose`)
    t.equal(one.statements, 1, `${label}: one round trip`)
  }
  const lone = await teamRecall(client, 'trip', '服务', 5)
  t.equal(lone.hits.length, 5, 'the lone common term finds notes')
  t.ok(lone.hits.every((h) => /第\d+号服务/.test(h.text)), 'its holders')
  const tied = await teamRecall(client, 'trip', TIED.join(' '), 5)
  t.ok(tied.hits.every((h) => TIED.slice(0, MAX_SEARCH_TERMS).some((w) => h.text.includes(w))), 'the tie-break keeps the alphabetically first of the equally rare terms')
})

t.test('each part of the rule changed on the server: counted fallbacks, the answer still exact. Mutation: without the check, wrong hits', async (t) => {
  const rules = [
    ['the postings bound', `WHERE postings <= \${SEARCH_POSTINGS}`, 'WHERE postings <= 1000000'],
    ['the term cap', 'i <= least(${MAX_SEARCH_TERMS}, ', 'i <= least(1000, '],
    ['the tie-break', 'ORDER BY h.df, h.r ROWS', 'ORDER BY h.df, h.r DESC ROWS'],
    ['the OR list\'s length', '${MAX_MATCH_TERMS} - $12::int', '100000 - $12::int'],
    ['the newest mode', `> \${SEARCH_POSTINGS} AS newest`, '> 1000000 AS newest'],
  ] as const
  for (const [name, from, to] of rules) {
    const m = mutant({ file: 'team/search.ts', from, to })
    t.teardown(() => m.remove())
    const mutated = (await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')).teamRecall
    // A connection of its own: the mutated module prepares its statement under the same name.
    const { fallbacks, different } = await compare(t, mutated, await connect(), name)
    t.ok(fallbacks > 0, `${name} changed: the client saw another choice and fell back (${fallbacks})`)
    t.equal(different, 0, `${name} changed: every answer still exact`)
  }
  const unchecked = mutant(
    { file: 'team/search.ts', from: 'ORDER BY h.df, h.r ROWS', to: 'ORDER BY h.df, h.r DESC ROWS' },
    { file: 'team/search.ts', from: 'if (plan !== undefined && sameChoice(choice, serverKeys, serverListings, serverNewest)) {', to: 'if (plan !== undefined) {' },
  )
  t.teardown(() => unchecked.remove())
  const mutated = (await unchecked.load<typeof import('../../lib/team/search.ts')>('team/search.ts')).teamRecall
  const { different } = await compare(t, mutated, await connect(), 'unchecked')
  t.ok(different > 0, `without the check, another choice gives other hits (${different} queries)`)
})

t.test('the layer counts fallbacks in stats(). Mutation: with the tie-break changed on the server, it counts them', async (t) => {
  const m = mutant({ file: 'team/search.ts', from: 'ORDER BY h.df, h.r ROWS', to: 'ORDER BY h.df, h.r DESC ROWS' })
  t.teardown(() => m.remove())
  const counted = async (Layer: typeof TeamLayer) => {
    const layer = new Layer({ ...(role.config('bob') as Record<string, unknown>), budgetMs: 10_000, connectTimeoutMs: 3000, poolSize: 2 } as never,
      { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })
    t.teardown(() => layer.close())
    await layer.start()
    for (const query of QUERIES) t.ok('result' in await layer.recall(query, 5), `answered: ${JSON.stringify(query.slice(0, 30))}`)
    return layer.stats()
  }
  const real = await counted(TeamLayer)
  t.equal(real.fallbacks, 0, 'no fallback')
  t.equal(real.recalls, QUERIES.length)
  const mutated = await counted((await m.load<typeof import('../../lib/team/layer.ts')>('team/layer.ts')).TeamLayer)
  t.ok(mutated.fallbacks > 0, `another choice on the server is counted (${mutated.fallbacks})`)
})
