/**
 * The team recall on its own thread (`lib/team/recall-thread.ts`), on a real server: the thread
 * returns what the same recall returns on the caller's thread (hits, scores, who shared them, the
 * held symbols); a local recall that finishes only after the team's candidates were asked for
 * still has its notes checked for team notes superseding them (in a namespace with more
 * superseding notes than `SUPERSEDED_SET`); with fewer, the superseded ids come with the counts
 * and a recall needs no local ids at all; past the bound, a recall the team has no hit for still
 * reports the local note a team note supersedes; a local recall that never finishes does not hold the
 * thread's connection past the budget; a thread that dies fails its pending recall and the next
 * recall starts another; the recall pool keeps idle connections past the layer's 30 s. Mutation
 * checks: without the wait for the local ids, a superseded local note stays; without the bound
 * on the superseded set, a crowded namespace's list misses the local note; without using the
 * set, a recall waits for local ids that never come; skipping the ask when the team has no hit,
 * the superseded local note is recalled; without the deadline on that wait, the next
 * recall finds no free connection; with the dead thread kept, the next recall is never answered;
 * with the layer's idle timeout, the recall pool closes connections after 30 s.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type pg from 'pg'
import { recallPoolConfig, RECALL_IDLE_MS, teamPoolConfig } from '../../lib/team/connection.ts'
import { TeamRecallThread } from '../../lib/team/recall-thread.ts'
import { TeamLayer } from '../../lib/team/layer.ts'
import { mergeTeamHits } from '../../lib/team/merge.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { SUPERSEDED_SET, teamRecall, untilLate, type LocalIds } from '../../lib/team/search.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let role: TeamRole
let client: pg.Client
/** A namespace with more notes that supersede something than `SUPERSEDED_SET`: recalls there ask about the local ids. */
let crowdedRole: TeamRole
let crowded: pg.Client
let crowdedId = ''
const store = new BlockStore(':memory:')
t.teardown(() => store.close())
let localId = ''

const connect = async (as: TeamRole = role): Promise<pg.Client> => {
  const c = await db.connect(as)
  t.teardown(() => c.end())
  return c
}

t.before(async () => {
  db = await startTeamDb()
  role = await db.role('team_thread', 'thread')
  client = await connect()
  localId = store.commit({ text: 'the nightly backup runs on host 10.4.4.4' }).id
  const filler = Array.from({ length: 30 }, (_, i) => ({ text: `filler note ${i}: the ${['billing', 'search', 'auth'][i % 3]} service listens on port ${4000 + i}` }))
  await shareNotes(client, [...filler, { text: 'the nightly backup moved to host 10.6.6.6', supersedes: localId }, { text: 'billing 服务的端口是 8499' }],
    { namespace: 'thread', member: 'alice', secrets: 'redact', maxBlockChars: 32_768 })
  crowdedRole = await db.role('team_crowded', 'crowded')
  crowded = await connect(crowdedRole)
  // A local note whose id sorts after every other superseded id: a list cut at the bound would miss it.
  let i = 0
  let text = ''
  do text = `the nightly backup runs on host 10.4.4.4 (${i++})`; while (!blockId(text).startsWith('blk_f'))
  crowdedId = store.commit({ text }).id
  const gone: string[] = []
  for (let k = 0; gone.length <= SUPERSEDED_SET; k++) if (blockId(`gone ${k}`) < crowdedId) gone.push(blockId(`gone ${k}`))
  await shareNotes(crowded, [...filler, ...gone.map((id, k) => ({ text: `retired runbook ${k}`, supersedes: id })), { text: 'the nightly backup moved to host 10.6.6.6', supersedes: crowdedId }],
    { namespace: 'crowded', member: 'alice', secrets: 'redact', maxBlockChars: 32_768 })
})
t.teardown(() => db?.stop())

const layerOf = (Layer: typeof TeamLayer, extra: Record<string, unknown> = {}, as: TeamRole = role) => new Layer({ ...(as.config('bob') as Record<string, unknown>), budgetMs: 10_000, connectTimeoutMs: 3000, poolSize: 4, ...extra } as never,
  { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })

/** Local ids not known yet when the team recall first asks (for its candidates), known a moment later. */
function lateLocal(ids: readonly string[]): LocalIds {
  let known: readonly string[] | undefined
  let arrive: (ids: readonly string[]) => void = () => {}
  const done = new Promise<readonly string[]>((resolve) => { arrive = resolve })
  return {
    now: () => {
      const seen = known
      if (seen === undefined) setImmediate(() => { known = ids; arrive(ids) })
      return seen
    },
    done,
  }
}

t.test('the thread returns what the recall returns on this thread', async (t) => {
  const layer = layerOf(TeamLayer)
  t.teardown(() => layer.close())
  await layer.start()
  for (const query of ['billing 服务端口是多少', 'where does the nightly backup run', 'which service listens on port 4007', 'what is on 10.6.6.6']) {
    const here = await teamRecall(client, 'thread', query, 5)
    const there = await layer.recall(query, 5)
    t.ok('result' in there, query)
    if (!('result' in there)) continue
    t.same(there.result.hits, here.hits, `${query}: the same hits, scores and labels`)
    t.same([...there.result.heldSymbols], [...here.heldSymbols], `${query}: the same held symbols`)
  }
  const answer = await layer.recall('where does the nightly backup run', 5, Promise.resolve([localId]))
  t.same('result' in answer ? [...answer.result.supersededLocal] : answer, [localId], 'the local ids reach the thread')
})

t.test('a local recall done after the candidates: its notes are still checked for supersedes. Mutation: without the wait they are not', async (t) => {
  const found = await teamRecall(crowded, 'crowded', 'where does the nightly backup run', 5, lateLocal([crowdedId]))
  t.same([...found.supersededLocal], [crowdedId], 'the local note the team note replaces is dropped by the merge')
  const m = mutant({ file: 'team/search.ts', from: 'const after = ids !== undefined ? [] : await untilLate(local.done, deadline)', to: 'const after: readonly string[] = []' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')
  const own = await connect(crowdedRole) // its own connection: the mutated module prepares statements under the same names
  const missed = await mutated.teamRecall(own, 'crowded', 'where does the nightly backup run', 5, lateLocal([crowdedId]))
  t.same([...missed.supersededLocal], [], 'the superseded local note would stay')
})

t.test('a namespace with few superseding notes: their targets come with the counts, and no local ids are needed. Mutations: without the bound, or without the set', async (t) => {
  const never: LocalIds = { now: () => undefined, done: new Promise(() => {}) }
  const found = await teamRecall(client, 'thread', 'where does the nightly backup run', 5, never, performance.now() + 5_000)
  t.same([...found.supersededLocal], [localId], 'the superseded local id is known without the local recall')
  t.ok(found.hits.length > 0, 'with the team hits')
  const many = await teamRecall(crowded, 'crowded', 'where does the nightly backup run', 5, lateLocal([crowdedId]))
  t.same([...many.supersededLocal], [crowdedId], 'past the bound only the local ids are checked')

  const unbounded = mutant({ file: 'team/search.ts', from: 'CASE WHEN count(*) <= ${SUPERSEDED_SET} THEN coalesce', to: 'CASE WHEN true THEN coalesce' })
  t.teardown(() => unbounded.remove())
  const cut = await (await unbounded.load<typeof import('../../lib/team/search.ts')>('team/search.ts'))
    .teamRecall(await connect(crowdedRole), 'crowded', 'where does the nightly backup run', 5, lateLocal([crowdedId]))
  t.notOk(cut.supersededLocal.has(crowdedId), 'a list cut at the bound misses the local note')

  const unused = mutant({ file: 'team/search.ts', from: 'const ids = supersededAll !== null ? [] : local.now()', to: 'const ids = local.now()' })
  t.teardown(() => unused.remove())
  const waited = await (await unused.load<typeof import('../../lib/team/search.ts')>('team/search.ts'))
    .teamRecall(await connect(), 'thread', 'where does the nightly backup run', 5, never, performance.now() + 1_000).then(() => 'answered', (e: Error) => e.constructor.name)
  t.equal(waited, 'TeamRecallLate', 'the recall waited for local ids that never came')
})

t.test('past the bound, a recall with no team hits still reports the local note a team note supersedes. Mutation: skipping the ask when there are no hits leaks it', async (t) => {
  // The superseding team note holds neither the old address nor "runs": the team recall finds nothing, the local one finds the old note.
  const query = 'what runs on 10.4.4.4'
  const local = recallBlocks(store, query, { topK: 5 })
  t.ok(local.some((h) => h.id === crowdedId), 'the local recall finds the superseded note')
  const found = await teamRecall(crowded, 'crowded', query, 5, lateLocal(local.map((h) => h.id)))
  t.same(found.hits, [], 'no team note matches')
  t.ok(found.supersededLocal.has(crowdedId), 'the superseded local id is reported')
  t.notOk(mergeTeamHits(local, found, 5).some((h) => h.id === crowdedId), 'the merge drops it')
  const m = mutant({ file: 'team/search.ts', from: 'const after = ids !== undefined ? [] : await untilLate(local.done, deadline)', to: 'const after = ids !== undefined || hits.length === 0 ? [] : await untilLate(local.done, deadline)' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')
  const leaked = await mutated.teamRecall(await connect(crowdedRole), 'crowded', query, 5, lateLocal(local.map((h) => h.id)))
  t.ok(mergeTeamHits(local, leaked, 5).some((h) => h.id === crowdedId), 'the superseded local note would be recalled')
})

t.test('the recall pool keeps idle connections past the layer\'s 30 s, with keep-alive. Mutation: with the layer\'s settings it does not', async (t) => {
  const { pool } = teamPoolConfig({ ...(role.config('bob') as Record<string, unknown>), poolSize: 1, connectTimeoutMs: 3000 } as never, process.env)
  t.equal(pool.idleTimeoutMillis, 30_000, 'the layer\'s pool closes idle connections after 30 s')
  const recall = recallPoolConfig(pool)
  t.equal(recall.idleTimeoutMillis, RECALL_IDLE_MS, 'the recall pool after ten minutes')
  t.ok(RECALL_IDLE_MS >= 600_000)
  t.equal(recall.keepAlive, true)
  t.equal(recall.password, pool.password, 'the same login')
  const m = mutant({ file: 'team/layer.ts', from: 'new TeamRecallThread(recallPoolConfig(settings))', to: 'new TeamRecallThread(settings)' })
  t.teardown(() => m.remove())
  for (const [name, Layer] of [['real', TeamLayer], ['mutated', (await m.load<typeof import('../../lib/team/layer.ts')>('team/layer.ts')).TeamLayer]] as const) {
    const layer = layerOf(Layer)
    t.teardown(() => layer.close())
    const thread = (layer as unknown as { thread: { settings: { idleTimeoutMillis: number } } }).thread
    t.equal(thread.settings.idleTimeoutMillis === RECALL_IDLE_MS, name === 'real', `${name}: the thread gets the recall settings`)
  }
})

t.test('a local recall that never finishes does not hold the connection past the budget. Mutation: without that deadline it does', async (t) => {
  const never = new Promise<readonly string[]>(() => {})
  const run = async (Layer: typeof TeamLayer) => {
    const layer = layerOf(Layer, { poolSize: 1 }, crowdedRole)
    t.teardown(() => layer.close())
    await layer.start()
    // Long enough for the statements to finish on a loaded machine, so the recall is waiting for the local ids at its deadline.
    const first = await layer.recall('where does the nightly backup run', 5, never, 2_000)
    // Longer than a connection attempt (3 s): a pool that never frees its connection fails it.
    const next = await layer.recall('billing 服务端口是多少', 5, Promise.resolve([]), 8_000)
    return { first, next }
  }
  const real = await run(TeamLayer)
  t.same(real.first, { reason: 'timeout' }, 'the turn stopped waiting at its budget')
  t.ok('result' in real.next, 'the next recall got the connection back')
  const m = mutant({ file: 'team/search.ts', from: 'if (deadline === Infinity) return await done', to: 'return await done' })
  t.teardown(() => m.remove())
  const mutated = await run((await m.load<typeof import('../../lib/team/layer.ts')>('team/layer.ts')).TeamLayer)
  t.notOk('result' in mutated.next, 'the connection stayed with the recall waiting for the local ids')
})

t.test('a thread that dies fails its pending recall; the next recall starts another. Mutation: with the dead thread kept, it is never answered', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-thread-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const flag = join(dir, 'die')
  process.env.STABLEMEM_TEST_DIE = flag
  const { pool } = teamPoolConfig({ ...(role.config('bob') as Record<string, unknown>), poolSize: 1, connectTimeoutMs: 3000 } as never, process.env)
  const script = new URL('./fixtures/dying-worker.ts', import.meta.url)
  /** How a recall ended: its hits' count, its error, or no answer in 10 s. */
  const settle = async (answer: Promise<{ hits: unknown[] }>) => {
    let timer: NodeJS.Timeout | undefined
    const hung = new Promise<{ hung: true }>((resolve) => { timer = setTimeout(() => resolve({ hung: true }), 10_000) })
    try {
      return await Promise.race([answer.then((r) => ({ hits: r.hits.length }), (e: Error) => ({ error: e.message })), hung])
    } finally {
      clearTimeout(timer)
    }
  }
  const run = async (Thread: typeof TeamRecallThread) => {
    writeFileSync(flag, '')
    const thread = new Thread(pool, script)
    t.teardown(() => thread.close())
    await thread.ready()
    const first = await settle(thread.recall('thread', 'billing 服务端口是多少', 5, Promise.resolve([]), Infinity))
    const next = await settle(thread.recall('thread', 'billing 服务端口是多少', 5, Promise.resolve([]), Infinity))
    return { first, next }
  }
  const real = await run(TeamRecallThread)
  t.match(real.first, { error: /exited/ }, 'the pending recall fails (the layer counts it)')
  t.match(real.next, { hits: Number }, 'the next recall is answered by a new thread')
  t.ok((real.next as { hits?: number }).hits! > 0, 'with team notes')
  const m = mutant({ file: 'team/recall-thread.ts', from: '      if (this.worker !== worker) return\n      this.worker = undefined\n', to: '      if (this.worker !== worker) return\n' })
  t.teardown(() => m.remove())
  const mutated = await run((await m.load<typeof import('../../lib/team/recall-thread.ts')>('team/recall-thread.ts')).TeamRecallThread)
  t.same(mutated.next, { hung: true }, 'the next recall went to the dead thread')
})

t.test('the wait for the local ids ends at its deadline, not before. Mutation: one timer, which counts whole milliseconds of the loop\'s time, ends it early', async (t) => {
  const never = new Promise<readonly string[]>(() => {})
  /** How many of 50 short waits, each with a deadline a fraction of a millisecond past whole ones, ended before it. */
  const earlyWaits = async (wait: typeof untilLate) => {
    let early = 0
    for (let i = 0; i < 50; i++) {
      const deadline = performance.now() + 2.95
      await wait(never, deadline)
      if (performance.now() < deadline) early++
    }
    return early
  }
  t.equal(await earlyWaits(untilLate), 0, 'no wait ended before its deadline')
  const m = mutant({ file: 'team/search.ts', from: 'else timer = setTimeout(wait, Math.ceil(left))\n    }\n    wait()', to: '}\n    timer = setTimeout(() => resolve([]), Math.max(0, deadline - performance.now()))' })
  t.teardown(() => m.remove())
  const early = await earlyWaits((await m.load<typeof import('../../lib/team/search.ts')>('team/search.ts')).untilLate)
  t.ok(early > 0, `with one timer, ${early} of 50 waits ended before their deadline`)
})
