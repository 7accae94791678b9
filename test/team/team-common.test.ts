/**
 * A query whose only searched term is past the postings bound (a common 服务 in a namespace where
 * more than `SEARCH_POSTINGS` notes hold it) beside an exact symbol, on a real server: the team
 * layer takes the newest holders of that common term, as the local search does, and the symbol's
 * holders beside them: the symbol pinned first, then notes holding 服务 from among its newest
 * holders. (Which of those tie-ranked notes come back can differ from the local store's: the
 * team sends its best `RANKED_ROWS` of the newest, the local search scores all of them.)
 * Mutation check: looking up the newest holders of the OR list's first key (the symbol, listed
 * first) loses every note holding only 服务.
 */
import t from 'tap'
import type pg from 'pg'
import { CANDIDATES, recallBlocks, SEARCH_POSTINGS } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let role: TeamRole
const NOW = 1_700_000_000_000
const store = new BlockStore(':memory:', { now: () => NOW })
t.teardown(() => store.close())

/** More holders of 服务 than the postings bound, each otherwise distinct; the symbol's note last (the newest). */
const COMMON = Array.from({ length: SEARCH_POSTINGS + 100 }, (_, i) => `第 ${i} 号服务跑在机房 r${i % 37} 的 node${i} 上`)
const SYMBOL = 'billing 服务的端口是 8499'
const QUERY = '服务 8499 是哪个'

async function connect(): Promise<pg.Client> {
  const client = await db.connect(role)
  t.teardown(() => client.end())
  return client
}

t.before(async () => {
  db = await startTeamDb()
  role = await db.role('team_common', 'common')
  const client = await connect()
  const texts = [...COMMON, SYMBOL]
  store.commitMany(texts.map((text) => ({ text })))
  await shareNotes(client, texts.map((text) => ({ text })), { namespace: 'common', member: 'm', secrets: 'redact', maxBlockChars: 32_768, now: NOW })
})
t.teardown(() => db?.stop())

t.test('a lone common term beside an exact symbol: the newest holders of the term, as locally', async (t) => {
  const client = await connect()
  const local = recallBlocks(store, QUERY, { topK: 5, abstain: false })
  t.equal(local.length, 5, 'the local search finds the symbol and four notes holding only 服务')
  t.ok(local[0]!.text.includes('8499'), 'the symbol is pinned first')
  const team = await teamRecall(client, 'common', QUERY, 5)
  t.equal(team.hits.length, 5, 'as many hits as locally')
  t.equal(team.hits[0]!.id, local[0]!.id, 'the same note pinned first')
  const newest = new Set(COMMON.slice(-CANDIDATES))
  t.ok(team.hits.slice(1).every((h) => newest.has(h.text)), 'then notes from among the newest holders of 服务')
})

t.test('mutation: the newest holders of the first key of the OR list (the symbol) lose the common term\'s notes', async (t) => {
  const m = mutant({ file: 'team/search.ts', from: 'p.term = $9::text', to: 'p.term = coalesce(($2::text[])[1], $9::text)' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')
  const client = await connect() // its own connection: the mutated statement keeps the prepared statement's name
  const team = await mutated.teamRecall(client, 'common', QUERY, 5)
  t.ok(team.hits.length < 5, `only the symbol's holders are left (${team.hits.length} hits)`)
})
