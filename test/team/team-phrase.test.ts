/**
 * Multi-token phrases (IPs, versions, paths) on the team layer, on a real server: they are found
 * through the postings of their rarest tokens and confirmed token by token on the server, so the
 * team layer ranks them exactly like the local store — beside notes holding the same tokens in
 * another order, the same phrase written with other separators, a phrase with a repeated token
 * and one with a token no note holds. Mutation check: without the confirmation, notes holding the
 * tokens in another order are taken for holders, and an absent symbol no longer abstains.
 */
import t from 'tap'
import type pg from 'pg'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let role: TeamRole
/** One clock for both layers: pinned symbols tie on score, and ties go to the newer note. */
const NOW = 1_700_000_000_000
const store = new BlockStore(':memory:', { now: () => NOW })
t.teardown(() => store.close())

const NOTES = [
  'billing 服务部署在 10.3.7.9，端口 8499',
  'the metrics box is 10.3.9.7 (same numbers, other order)',
  'backup host written with dashes: 10-3-7-9',
  'Release v2.3.1 ships the new login page',
  'the 2.3.1 hotfix only touched the parser',
  'legacy parser config lives at /srv/parser/rules-17.conf',
  'rules-17 was replaced by rules-18 last week',
  'the null route is 0.0.0.0 on every edge box',
  'edge boxes answer on 10.0.0.1 and 10.0.0.2',
]
const QUERIES = ['10.3.7.9 上跑的是什么', 'what is 10.3.9.7 used for?', 'v2.3.1 发布了什么', '/srv/parser/rules-17.conf 在哪',
  'which box has 0.0.0.0', '10.0.0.2 是哪台', 'what is 10.7.3.99 used for?', 'what is 10.9.3.7 used for?', 'v9.9.9 changelog']

async function connect(): Promise<pg.Client> {
  const client = await db.connect(role)
  t.teardown(() => client.end())
  return client
}

t.before(async () => {
  db = await startTeamDb()
  role = await db.role('team_phrase', 'phrase')
  const client = await connect()
  // Filler, so that IDFs are positive and the digits are common tokens, as at scale.
  const filler = Array.from({ length: 40 }, (_, i) => `filler note ${i} about hosts 10.${i}.0.${i + 1} and port ${3000 + i}`)
  for (const text of [...filler, ...NOTES]) store.commit({ text })
  await shareNotes(client, [...filler, ...NOTES].map((text) => ({ text })), { namespace: 'phrase', member: 'm', secrets: 'redact', maxBlockChars: 32_768, now: NOW })
})
t.teardown(() => db?.stop())

/** Its tokens are all held (10.3.9.7, 10.3.7.9), never in this order: the team must still abstain on it. */
const ABSENT = 'what is 10.9.3.7 used for?'
const ranked = (hits: readonly { id: string, score: number }[]) => hits.map((h) => [h.id, h.score.toFixed(9)])

t.test('phrases rank on the team layer as in the local store', async (t) => {
  const client = await connect()
  for (const q of QUERIES) {
    const local = recallBlocks(store, q, { topK: 5, abstain: false })
    const team = await teamRecall(client, 'phrase', q, 5)
    t.same(ranked(team.hits), ranked(local), q)
  }
  const ip = await teamRecall(client, 'phrase', '10.3.7.9 上跑的是什么', 5)
  t.ok(ip.hits.some((h) => h.text.includes('10-3-7-9')), 'the phrase with other separators is found, as FTS5 finds it')
  t.notOk(ip.hits.slice(0, 2).some((h) => h.text.includes('10.3.9.7')), 'the same tokens in another order do not hold the phrase')
  t.ok(ip.heldSymbols.has('10.3.7.9'))
  t.same([...(await teamRecall(client, 'phrase', 'what is 10.7.3.99 used for?', 5)).heldSymbols], [], 'a phrase with a token no note holds is not held')
  t.same([...(await teamRecall(client, 'phrase', ABSENT, 5)).heldSymbols], [], 'nor one whose tokens notes hold only in other orders')
})

t.test('mutation: without the confirmation on the server, notes holding the tokens in another order are taken for holders', async (t) => {
  const m = mutant({ file: 'team/search.ts', from: "AND n.seq = c.seq\n      WHERE strpos(' ' || split_part(n.toks, chr(1), 1) || ' ', phrase.needle) > 0", to: 'AND n.seq = c.seq' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')
  const client = await connect() // its own connection: the mutated statement keeps the prepared statement's name
  t.same([...(await mutated.teamRecall(client, 'phrase', ABSENT, 5)).heldSymbols], ['10.9.3.7'], 'an absent symbol counts as held: no abstention')
})
