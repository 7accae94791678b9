/**
 * Real processes on a real PostgreSQL server: two dsh agent processes on different SQLite stores
 * share a note through the team layer (the model's tool call in one, the next turn of the other);
 * eight processes commit shared notes at once and every acknowledged one is stored, with the
 * namespace's statistics matching its rows exactly.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { tempStorePath } from '../helpers/harness.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'
import { noteTerms, noteTokens } from '../../lib/team/terms.ts'

let db: TeamDb
let a: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
})
t.teardown(() => db?.stop())

const AGENT = fileURLToPath(new URL('./fixtures/agent.ts', import.meta.url))

/** Runs the agent fixture to its end; its stdout lines. */
function run(args: Record<string, unknown>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [AGENT, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env })
    let out = ''
    let err = ''
    proc.stdout.on('data', (c: Buffer) => { out += c.toString() })
    proc.stderr.on('data', (c: Buffer) => { err += c.toString() })
    proc.on('close', (code) => code === 0 ? resolve(out.split('\n').filter((l) => l !== '')) : reject(new Error(`agent exited ${code}: ${err.slice(-2000)}`)))
  })
}

t.test('two agent processes on different stores share a note', async (t) => {
  const shared = await run({ mode: 'share', path: tempStorePath('alice'), team: a.config('alice', { budgetMs: 10_000 }), text: 'billing 服务端口 8499，团队共享' })
  t.match(JSON.parse(shared.at(-1)!), { done: true, errors: 0, team: { state: 'ready', shared: 1 } })
  const asked = JSON.parse((await run({ mode: 'ask', path: tempStorePath('bob'), team: a.config('bob', { budgetMs: 10_000 }), prompt: 'billing 服务端口是多少？' })).at(-1)!)
  t.match(asked.injected.join('\n'), /team note · shared by alice · .*\n> billing 服务端口 8499，团队共享/)
})

t.test('eight concurrent writer processes lose nothing acknowledged', async (t) => {
  const writers = Array.from({ length: 8 }, (_, w) => run({ mode: 'write', path: tempStorePath(`w${w}`), team: a.config(`writer${w}`), count: 25, prefix: `writer ${w}` }))
  const acked = (await Promise.all(writers)).flat().filter((l) => l.startsWith('ack ')).map((l) => l.slice(4))
  t.equal(acked.length, 200)
  const admin = await db.server.admin(db.database)
  t.teardown(() => admin.end())
  const { rows } = await admin.query<{ id: string, text: string }>("SELECT id, text FROM stablemem.notes WHERE namespace = 'alpha'")
  const stored = new Set(rows.map((r) => r.id))
  t.same(acked.filter((id) => !stored.has(id)), [], 'every acknowledged note is stored')
  // The statistics bm25 reads are exactly what the rows say, though 8 writers updated them at once.
  const df = new Map<string, number>()
  let tokens = 0
  for (const r of rows) {
    const toks = noteTokens(r.text)
    tokens += toks.latin.length + toks.cjk.length
    for (const k of noteTerms(toks)) df.set(k, (df.get(k) ?? 0) + 1)
  }
  const stats = (await admin.query("SELECT notes::int, tokens::int FROM stablemem.stats WHERE namespace = 'alpha'")).rows[0]
  t.same(stats, { notes: rows.length, tokens })
  const terms = (await admin.query<{ term: string, df: number }>("SELECT term, df FROM stablemem.terms WHERE namespace = 'alpha'")).rows
  t.same(new Map(terms.map((r) => [r.term, r.df])), df, 'document frequencies match the rows')
})
