/**
 * PostgreSQL stalled mid-turn (issue 31): a stage handler that runs before the recall freezes
 * the server (SIGSTOP of the postmaster and every backend, as a host that stops answering: its
 * sockets stay open and nothing comes back). The turn answers from the local store within the
 * team budget, the next turn's context line says what degraded, and once the server runs again
 * team notes come back by themselves. Mutation check: without the budget the turn waits for the
 * frozen server until it is resumed.
 */
import { readdirSync, readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import type { Context } from '@deepseek-ai/cordis'
import * as plugin from '../../lib/index.ts'
import { boot, injected, reply, requestTexts, tempStorePath, textOf, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let a: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
  const sharer = await boot({ path: tempStorePath('stall-sharer'), team: a.config('alice', { budgetMs: 10_000 }) as never })
  await sharer.ctx.stablemem.teamReady()
  await sharer.ctx.stablemem.commit({ text: 'deploy 窗口是周四晚上（团队）', scope: 'global', shared: true })
  await sharer.dispose()
})

/** The server's processes: the postmaster (parent of the backends) and all its children, read from /proc. */
async function serverPids(): Promise<number[]> {
  const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1])
  const admin = await db.server.admin()
  // Read while the connection is open: its backend leaves when it ends.
  const postmaster = parentOf((await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)
  await admin.end()
  const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try { return parentOf(pid) === postmaster } catch { return false }
  })
  return [postmaster, ...children]
}

let frozen: number[] = []
function freeze(pids: number[]): void {
  frozen = pids
  for (const pid of pids) process.kill(pid, 'SIGSTOP')
}
function thaw(): void {
  for (const pid of frozen) {
    try { process.kill(pid, 'SIGCONT') } catch { /* gone */ }
  }
  frozen = []
}
t.teardown(async () => { thaw(); await db?.stop() })

const BUDGET_MS = 400

/** An agent whose stage handler freezes the server once, before the recall of its next turn. */
async function agent(t: Tap, module?: typeof plugin): Promise<{ h: Harness, arm: (pids: number[]) => void }> {
  let armed: number[] | undefined
  const freezer = {
    name: 'freezer',
    inject: ['stablemem'],
    apply(ctx: Context) {
      ctx.stablemem.stages.on('pre_action', () => {
        if (armed !== undefined) {
          freeze(armed)
          armed = undefined
        }
        return undefined
      }, { order: 0, name: 'freezer' })
    },
  }
  const h = await boot({ path: tempStorePath('stall'), team: a.config('carol', { budgetMs: BUDGET_MS }) as never }, [], { extra: [{ plugin: freezer }], ...(module ? { module } : {}) })
  t.teardown(async () => { thaw(); await h.dispose() })
  await h.ctx.stablemem.teamReady()
  await h.ctx.stablemem.commit({ text: 'carol 本地：deploy 窗口开始前先通知值班', scope: 'global' })
  return { h, arm: (pids) => { armed = pids } }
}
type Tap = Test

async function timedTurn(h: Harness, question: string): Promise<{ ms: number, text: string, context: string }> {
  h.script(reply('ok'))
  const started = performance.now()
  await h.turn(question)
  const ms = performance.now() - started
  const request = h.adapter.requests.at(-1)!
  return { ms, text: injected(request).map(textOf).join('\n'), context: requestTexts(request).join('\n') }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('a server frozen mid-turn: local notes within the budget, the reason said, team notes back once it runs', async (t) => {
  const { h, arm } = await agent(t)
  // The first recalls start the team's thread and connections: on a loaded machine they can take
  // longer than the budget, so warm up until the team note comes back.
  let warm = await timedTurn(h, 'deploy 窗口是什么时候？')
  for (let i = 0; i < 20 && !/周四晚上/.test(warm.text); i++) warm = await timedTurn(h, 'deploy 窗口是什么时候？')
  t.match(warm.text, /周四晚上/, 'before: the team note is recalled')
  // The budget bounds the wait for the team; the rest of a turn gets 2.5 s, or three steady turns on a loaded machine.
  const steady = await timedTurn(h, 'deploy 窗口是什么时候？')
  const bound = BUDGET_MS + Math.max(2500, 3 * Math.min(warm.ms, steady.ms))
  arm(await serverPids())
  const during = await timedTurn(h, 'deploy 窗口是什么时候？')
  t.ok(frozen.length > 0, 'the server was frozen during the turn')
  t.match(during.text, /deploy 窗口开始前先通知值班/, 'the local note is injected')
  t.notMatch(during.text, /周四晚上/, 'the team note is not')
  t.ok(during.ms < bound, `the turn answered within its budget (${Math.round(during.ms)} ms, budget ${BUDGET_MS} ms, bound ${Math.round(bound)} ms)`)
  t.same(h.errors, [], 'the turn completed')
  t.ok((await h.ctx.stablemem.stats()).team!.degraded.timeout >= 1, 'counted as a timeout')
  const next = await timedTurn(h, 'deploy 窗口是什么时候？')
  t.match(next.context, /Team memory \(alpha\) is degraded \((?:[a-z_]+ \d+, )*timeout \d+/, 'the next turn\'s context line says what degraded')
  t.ok(next.ms < bound, `and it too answers within the budget (${Math.round(next.ms)} ms)`)
  thaw()
  let back = ''
  for (let i = 0; i < 80 && !/周四晚上/.test(back); i++) {
    await sleep(250)
    back = (await timedTurn(h, 'deploy 窗口是什么时候？')).text
  }
  t.match(back, /team note · shared by alice/, 'team notes are back without a restart')
})

t.test('mutation: without the budget the turn waits for the frozen server', async (t) => {
  const m = mutant({ file: 'team/layer.ts', from: 'timer = setTimeout(() => resolve(TIMEOUT), budgetMs)', to: 'timer = undefined' },
    { file: 'team/layer.ts', from: 'const lateAfter = performance.now() + budgetMs', to: 'const lateAfter = Infinity' })
  t.teardown(() => m.remove())
  const { h, arm } = await agent(t, await m.load<typeof plugin>('index.ts'))
  await timedTurn(h, 'deploy 窗口是什么时候？') // without the budget the first recall waits for the team, however slow
  arm(await serverPids())
  const resume = setTimeout(thaw, 5000)
  t.teardown(() => clearTimeout(resume))
  const during = await timedTurn(h, 'deploy 窗口是什么时候？')
  t.ok(during.ms >= 4500, `the guard is what ends the wait (${Math.round(during.ms)} ms: until the server was resumed)`)
})
