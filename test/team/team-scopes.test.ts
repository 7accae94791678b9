/**
 * A workspace note never reaches another workspace through the team layer (issue 31): only a
 * note saved with `shared: true` goes to the team, so a note saved in workspace A (or globally)
 * without it is recalled neither by a teammate nor by its own agent in workspace B, in a real
 * turn or through the service; the team's table holds only what was shared. Mutation check: a
 * commit that shares every note hands A's note to a teammate working in B (its text is matched in
 * lib/service.ts; if that file is split, the mutation follows the commit's team branch).
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { SessionId } from '@deepseek-ai/dsh-session'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { boot, injected, realBatch, reply, tempStorePath, textOf, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { tempDir } from '../helpers/temp.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let a: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
})
t.teardown(() => db?.stop())

const root = realpathSync(tempDir('stablemem-team-scopes'))
const A = join(root, 'project-a')
const B = join(root, 'project-b')
mkdirSync(A)
mkdirSync(B)

const WS_FACT = 'orion 服务的数据库密码轮换在每月 3 号，端口 6421'
const QUESTION = 'orion 服务的端口是多少？'

async function agent(t: Tap, member: string, module?: typeof plugin): Promise<Harness> {
  const h = await boot({ path: tempStorePath(`team-scopes-${member}`), team: a.config(member, { budgetMs: 10_000 }) as never }, [], module ? { module } : {})
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.teamReady()
  return h
}
type Tap = Test

let serial = 0
/** What the pre-step injected for `question` in a new session whose header records `cwd`. */
async function askAt(h: Harness, cwd: string, question: string): Promise<string> {
  h.script(reply('好的。'))
  const before = h.adapter.requests.length
  const handle = await h.ctx.agents.create({ sessionId: SessionId(`team-scope-${++serial}`), meta: { cwd }, agentOptions: { provider: 'mock', model: 'mock-1' } })
  handle.agent.followup(realBatch(question)[0]!)
  await handle.agent.whenIdle()
  await handle.dispose()
  return injected(h.adapter.requests[before]!).map(textOf).join('\n')
}

async function seed(alice: Harness): Promise<void> {
  await alice.ctx.stablemem.forgetShared({ all: true })
  await alice.ctx.stablemem.commit({ text: WS_FACT, scope: 'workspace', workspace: A })
  await alice.ctx.stablemem.commit({ text: 'orion 服务的负责人是 alice（她自己的全局笔记）', scope: 'global' })
  await alice.ctx.stablemem.commit({ text: 'orion 服务的值班群是 #orion-oncall（团队）', scope: 'global', shared: true })
}

t.test('a note saved in workspace A without shared reaches neither a teammate nor its own agent in B', async (t) => {
  const alice = await agent(t, 'alice')
  const bob = await agent(t, 'bob')
  await seed(alice)
  t.match(await askAt(alice, A, QUESTION), /> orion 服务的数据库密码轮换在每月 3 号，端口 6421/, 'alice in A recalls it')
  const aliceInB = await askAt(alice, B, QUESTION)
  t.notMatch(aliceInB, /6421/, 'alice in B does not')
  t.match(aliceInB, /#orion-oncall/, 'the shared note is recalled there (team notes have the namespace as their scope)')
  for (const cwd of [A, B]) {
    const text = await askAt(bob, cwd, QUESTION)
    t.notMatch(text, /6421/, `bob in ${cwd.slice(root.length)}: not A's note`)
    t.notMatch(text, /她自己的全局笔记/, `bob in ${cwd.slice(root.length)}: nor alice's global note`)
    t.match(text, /team note · shared by alice/, `bob in ${cwd.slice(root.length)}: the shared one`)
  }
  for (const scope of ['all', { workspace: A }, { workspace: B }] as const) {
    const hits = await bob.ctx.stablemem.recall('orion 服务 端口 6421', { scope })
    t.notOk(hits.some((h) => h.text.includes('6421')), `bob's service recall with scope ${typeof scope === 'string' ? scope : `workspace ${scope.workspace.slice(root.length)}`}`)
  }
  const admin = await db.server.admin(db.database)
  t.teardown(() => admin.end())
  t.same((await admin.query('SELECT text FROM stablemem.notes')).rows.map((r) => r.text), ['orion 服务的值班群是 #orion-oncall（团队）'], 'the team\'s table holds only the shared note')
  t.same([...alice.errors, ...bob.errors], [])
})

t.test('mutation: a commit that shares every note hands A\'s note to a teammate in B', async (t) => {
  const m = mutant({ file: 'service.ts', from: '    if (shared) {\n      try {\n        await this.team!.share(', to: '    if (this.team) {\n      try {\n        await this.team!.share(' })
  t.teardown(() => m.remove())
  const alice = await agent(t, 'alice', await m.load<typeof plugin>('index.ts'))
  const bob = await agent(t, 'bob')
  await seed(alice)
  t.match(await askAt(bob, B, QUESTION), /6421/, 'the shared flag is what keeps it home')
})
