/**
 * `npm run bench:team [-- --notes 100000] [--queries 200] [--writes 250] [--parity [--eval DIR]] [--explain] [--cache DIR] [--budget 60] [--as-built] [--json]`
 *
 * The shared team layer on a private PostgreSQL server on loopback (started and stopped here,
 * as the tests do), against the local path in the same run:
 * 1. `--notes` seeded notes (bench/corpus.ts) shared into one namespace (batches of 500) and
 *    committed into a local SQLite store (`commitMany`), whose full-text index is then merged as
 *    the host's idle upkeep keeps it (`--as-built`: left with the segments the commits made).
 * 2. Per query kind, alternating: shared recall (`teamRecall`, warm connection), local recall
 *    (`recallBlocksHybrid`, as the service calls it), and the merged per-turn recall as the
 *    service runs it (team asked first within `team.budgetMs` — `--budget`, default 60: under load
 *    a bigger one keeps the team's answer in every merged recall —, the local recall meanwhile, merge,
 *    relevance gate) — p50/p99 wall and CPU time: this process's (`process.cpuUsage`) and, for
 *    the team paths, with the server backends' CPU added (`/proc/PID/schedstat` of the
 *    connections used, read outside the timed span), which under load says more than the wall
 *    time; and this thread's CPU alone (`process.threadCpuUsage`): with the team recall on a
 *    thread of its own, what the merged turn's critical path spent — and how many merged recalls
 *    ran out of budget. Each p99 also as Harrell–Davis estimates it with a 95 % block-bootstrap
 *    interval (`p99Hd`, bench/shift.ts): one run's p99 of 200 queries is its second or third
 *    worst, so a bound is read against the interval (`--queries 1000` narrows it).
 *    Then a recall on a new connection (login, a new backend, statements planned afresh) against
 *    the same recalls on the warm one: what a turn pays when its pool closed the idle connection
 *    (`RECALL_IDLE_MS` in lib/team/connection.ts).
 * 3. Commits per second: 8 concurrent clients sharing one note per transaction, beside local
 *    single-note commits in this process.
 * With `--explain`, the server plans of each recall statement for the first query of every kind:
 *    `EXPLAIN (ANALYZE, BUFFERS)` of the generic plan (as a named prepared statement runs after
 *    its fifth call), to stderr.
 * 4. With `--parity`: R@5 of the eval sets (`--eval`, else the `shared/eval` beside the checkout
 *    or a folder above it) shared into the team layer vs the SQLite path (bench/team/parity.ts), global and scoped (each scope a namespace of its own).
 * With `--cache DIR` the filled server data folder and local store are kept in DIR and reused by
 * a later run with the same `--notes` and `--seed` (step 1 skipped; `--writes 0` skips step 3,
 * which would add its notes to both): so runs of two versions of the code can alternate on the
 * same data without filling it each time.
 * The last line is one JSON object with every figure.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { gateHits } from '../lib/recall/gate.ts'
import { recallBlocksHybrid } from '../lib/recall/hybrid.ts'
import { MAX_TOP_K } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { resolveConfig } from '../lib/config.ts'
import { TeamLayer } from '../lib/team/layer.ts'
import { mergeTeamHits } from '../lib/team/merge.ts'
import { grantTeam, migrateTeamSchema } from '../lib/team/schema.ts'
import { teamRecall } from '../lib/team/search.ts'
import { shareNotes } from '../lib/team/write.ts'
import { startPostgres } from '../test/helpers/postgres.ts'
import { exitOnHelp, jsonWanted, progressLog, wholeFlag } from './args.ts'
import { QUERY_KINDS, corpus } from './corpus.ts'
import { EvalSetError, evalRoot, readEvalSet } from './recall/eval-set.ts'
import { quantileInterval, type Shift } from './shift.ts'
import { parity } from './team/parity.ts'

const USAGE = 'npm run bench:team [-- --notes 100000] [--queries 200] [--writes 250] [--parity [--eval DIR]] [--explain] [--cache DIR] [--budget 60] [--as-built] [--json]\n\nThe team layer on a private PostgreSQL on loopback against the local path in the same run: merged per-turn recall, shared commits, R@5 parity (docs/team.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({ options: {
  notes: { type: 'string', default: '100000' }, queries: { type: 'string', default: '200' }, writes: { type: 'string', default: '250' },
  parity: { type: 'boolean', default: false }, explain: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, seed: { type: 'string', default: '7' },
  cache: { type: 'string' }, eval: { type: 'string' }, budget: { type: 'string', default: '60' }, 'as-built': { type: 'boolean', default: false },
} })
const JSON_OUT = jsonWanted(args.json)
const N = wholeFlag('notes', args.notes)
const Q = wholeFlag('queries', args.queries)
const WRITES = wholeFlag('writes', args.writes, 0)
const SEED = wholeFlag('seed', args.seed, 0)
const BUDGET_MS = wholeFlag('budget', args.budget)
const evalSets = args.parity ? findEvalSets() : ''
const log = progressLog(JSON_OUT)
const config = resolveConfig({})
const TOP_K = config.topK

/** The eval sets' folder for `--parity` (`--eval`, or found beside the checkout), checked before any server starts. */
function findEvalSets(): string {
  try {
    return evalRoot(args.eval, '--eval')
  } catch (error) {
    if (!(error instanceof EvalSetError)) throw error
    console.error(`bench:team: ${error.message}`)
    process.exit(2)
  }
}

/** `thread`: the CPU of this (the turn's) thread alone; `cpu` adds the process's other threads (the team recall's). */
interface Sample { wall: number, cpu: number, thread: number, server: number }
/** CPU time each server process of `pids` has used, in ms (`/proc/PID/schedstat`, ns resolution); absent where unreadable. */
function serverCpu(pids: readonly number[]): Map<number, number> {
  const out = new Map<number, number>()
  for (const pid of pids) {
    try {
      out.set(pid, Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6)
    } catch {}
  }
  return out
}
/**
 * Wall and CPU time of `fn`: this process's (`process.cpuUsage`) and that of the server backends
 * `pids()` names (asked before and after, outside the timed span; a backend that appeared meanwhile counts whole).
 */
async function timed<T>(fn: () => Promise<T> | T, pids: () => Promise<number[]> = async () => []): Promise<[T, Sample]> {
  const before = serverCpu(await pids())
  const cpu = process.cpuUsage()
  const own = process.threadCpuUsage()
  const t0 = performance.now()
  const value = await fn()
  const wall = performance.now() - t0
  const used = process.cpuUsage(cpu)
  const mine = process.threadCpuUsage(own)
  let server = 0
  for (const [pid, ms] of serverCpu(await pids())) server += ms - (before.get(pid) ?? 0)
  return [value, { wall, cpu: (used.user + used.system) / 1000, thread: (mine.user + mine.system) / 1000, server }]
}
function q(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? 0 : Number(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!.toFixed(3))
}
const rounded = (shift: Shift) => ({ estimate: Number(shift.estimate.toFixed(3)), lo: Number(shift.lo.toFixed(3)), hi: Number(shift.hi.toFixed(3)) })
const summary = (samples: Sample[]) => ({
  // p99.9 of fewer than 1,000 samples is their maximum.
  p50: q(samples.map((s) => s.wall), 0.5), p99: q(samples.map((s) => s.wall), 0.99), p999: q(samples.map((s) => s.wall), 0.999),
  cpuP50: q(samples.map((s) => s.cpu), 0.5), cpuP99: q(samples.map((s) => s.cpu), 0.99), cpuP999: q(samples.map((s) => s.cpu), 0.999),
  // What the turn's own thread spent: the critical path's CPU when the team recall runs on its own thread.
  threadCpuP50: q(samples.map((s) => s.thread), 0.5), threadCpuP99: q(samples.map((s) => s.thread), 0.99),
  // Client and server CPU of each recall together: what it costs on a machine with idle cores, bar the loopback round trips.
  ...(samples.some((s) => s.server > 0) ? { serverCpuP50: q(samples.map((s) => s.server), 0.5), clientPlusServerCpuP50: q(samples.map((s) => s.cpu + s.server), 0.5), clientPlusServerCpuP99: q(samples.map((s) => s.cpu + s.server), 0.99),
    clientPlusServerCpuP999: q(samples.map((s) => s.cpu + s.server), 0.999) } : {}),
  // p99 as Harrell–Davis estimates it, with a 95 % block-bootstrap interval over the queries (bench/shift.ts): what a bound is read against.
  p99Hd: rounded(quantileInterval(samples.map((s) => s.wall), 0.99)),
})

/** A parameter as PostgreSQL's text input for it (EXECUTE takes literals, not bound parameters). */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `{${value.map((v) => `"${String(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`
  return String(value)
}

const server = await startPostgres(args.cache === undefined ? {} : { keep: join(args.cache, 'pg') })
const dir = args.cache ?? mkdtempSync(join(tmpdir(), 'stablemem-bench-team-'))
const filledMark = join(dir, 'filled.json')
const filledAs = JSON.stringify({ notes: N, seed: SEED })
const cached = args.cache !== undefined && existsSync(filledMark) && readFileSync(filledMark, 'utf8') === filledAs
const result: Record<string, unknown> = { notes: N, queries: Q, seed: SEED, cached, loadBefore: loadavg() }
try {
  if (!cached) {
    const admin = await server.admin()
    await admin.query('DROP DATABASE IF EXISTS bench')
    await admin.query('DROP ROLE IF EXISTS bench_team')
    await admin.query('CREATE DATABASE bench')
    await admin.query("CREATE ROLE bench_team LOGIN PASSWORD 'bench'")
    await admin.end()
    const owner = await server.admin('bench')
    await migrateTeamSchema(owner, 'bench')
    await grantTeam(owner, 'bench_team', 'bench')
    await owner.end()
    rmSync(join(dir, 'memory.db'), { force: true })
  }
  const connect = async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'bench_team', password: 'bench', database: 'bench' })
    c.on('error', () => {}) // the server stops under it when a step fails
    await c.connect()
    return c
  }
  const client = await connect()
  const gen = corpus(SEED)
  const options = { namespace: 'bench', member: 'bench', secrets: 'redact' as const, maxBlockChars: 32_768 }

  // 1. Fill both layers.
  let [, fill] = await timed(async () => {
    for (let from = 0; from < (cached ? 0 : N); from += 500) {
      const notes = []
      for (let i = from; i < Math.min(N, from + 500); i++) notes.push({ text: gen.block(i).text, source: 'bench' })
      await shareNotes(client, notes, options)
    }
  })
  // What autovacuum does in time: statistics for the planner, the visibility map for index-only scans of the postings.
  const vacuum = await server.admin('bench')
  vacuum.on('error', () => {}) // the server stops under it when a step fails
  if (!cached) for (const table of ['notes', 'postings', 'terms']) await vacuum.query(`VACUUM ANALYZE stablemem.${table}`)
  const backendPids = async () => (await vacuum.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE usename = 'bench_team'")).rows.map((r) => r.pid)
  const storePath = join(dir, 'memory.db')
  const store = new BlockStore(storePath)
  const [, localFill] = await timed(() => {
    for (let from = 0; from < (cached ? 0 : N); from += 500) {
      const notes = []
      for (let i = from; i < Math.min(N, from + 500); i++) notes.push({ text: gen.block(i).text, source: 'bench' })
      store.commitMany(notes)
    }
  })
  // The local store as the host keeps it when idle: its full-text index merged (lib/plugin/index-upkeep.ts).
  // `--as-built` keeps the segments the commits left (on a fresh fill; a cached store stays as a run left it).
  const upkept = args['as-built'] ? undefined : store.upkeep()
  result.localSegments = upkept === undefined ? { asBuilt: store.ftsSegments() } : { before: upkept.segmentsBefore, after: upkept.segmentsAfter }
  if (upkept !== undefined && upkept.slices > 0) log(`local index upkeep: ${upkept.segmentsBefore} → ${upkept.segmentsAfter} segments in ${upkept.slices} slices, ${upkept.ms.toFixed(0)} ms`)
  if (args.cache !== undefined) writeFileSync(filledMark, filledAs)
  if (!cached) result.fill = { teamNotesPerS: Math.round(N / (fill.wall / 1000)), localNotesPerS: Math.round(N / (localFill.wall / 1000)) }
  if (!cached) log(`fill: team ${N} notes in ${(fill.wall / 1000).toFixed(1)} s; local in ${(localFill.wall / 1000).toFixed(1)} s`)

  // 2. Recall, per kind, alternating the three paths.
  process.env.STABLEMEM_BENCH_TEAM_PW = 'bench'
  const layer = new TeamLayer({ url: server.url('bench', 'bench_team'), namespace: 'bench', member: 'bench', passwordEnv: 'STABLEMEM_BENCH_TEAM_PW', budgetMs: BUDGET_MS, connectTimeoutMs: 3000, poolSize: 4 },
    { secrets: 'redact', maxBlockChars: 32_768, logger: { info() {}, warn() {}, error() {} } })
  await layer.start()
  const merged = async (query: string) => {
    let localDone: (ids: readonly string[]) => void = () => {}
    const team = layer.recall(query, TOP_K, new Promise((resolve) => { localDone = resolve }))
    let hits = await recallBlocksHybrid(store, null, query, { topK: TOP_K })
    localDone(hits.map((h) => h.id))
    const answer = await team
    if ('result' in answer) hits = mergeTeamHits(hits, answer.result, TOP_K)
    return gateHits(hits, { minRelevance: config.minRelevance, falloff: config.relevanceFalloff, minScore: config.minScore, topK: MAX_TOP_K })
  }
  const all = { team: [] as Sample[], local: [] as Sample[], merged: [] as Sample[] }
  const byKind: Record<string, unknown> = {}
  for (let w = 0; w < 20; w++) await merged(gen.query('en_words', w)) // warm the pool and caches
  const degradedBefore = { ...layer.stats().degraded }
  const directPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  const direct = async () => [directPid]
  const pooled = async () => (await backendPids()).filter((pid) => pid !== directPid) // the layer's pool
  for (const kind of QUERY_KINDS) {
    const s = { team: [] as Sample[], local: [] as Sample[], merged: [] as Sample[] }
    for (let i = 0; i < Q; i++) {
      const query = gen.query(kind, Math.floor((i + 0.5) * N / Q))
      s.team.push((await timed(() => teamRecall(client, 'bench', query, TOP_K), direct))[1])
      s.local.push((await timed(() => recallBlocksHybrid(store, null, query, { topK: TOP_K })))[1])
      s.merged.push((await timed(() => merged(query), pooled))[1])
    }
    const [team, local, mergedS] = [summary(s.team), summary(s.local), summary(s.merged)]
    byKind[kind] = { team, local, merged: mergedS }
    for (const k of ['team', 'local', 'merged'] as const) all[k].push(...s[k])
    log(`${kind}: team p50/p99 ${team.p50}/${team.p99} ms wall, ${team.cpuP50}/${team.cpuP99} client CPU, ${team.clientPlusServerCpuP50}/${team.clientPlusServerCpuP99} client+server CPU; ` +
      `local ${local.p50}/${local.p99} wall, ${local.cpuP50}/${local.cpuP99} CPU; merged ${mergedS.p50}/${mergedS.p99} wall (p99 ${mergedS.p99Hd.estimate} [${mergedS.p99Hd.lo}, ${mergedS.p99Hd.hi}]), ${mergedS.clientPlusServerCpuP50}/${mergedS.clientPlusServerCpuP99} client+server CPU`)
  }
  const cold = { connect: [] as number[], coldRecall: [] as number[], warmRecall: [] as number[] }
  for (let i = 0; i < 20; i++) {
    const query = gen.query(QUERY_KINDS[i % QUERY_KINDS.length]!, Math.floor((i + 0.25) * N / 20))
    const t0 = performance.now()
    const fresh = await connect()
    const t1 = performance.now()
    await teamRecall(fresh, 'bench', query, TOP_K)
    cold.connect.push(t1 - t0)
    cold.coldRecall.push(performance.now() - t0)
    await fresh.end()
    cold.warmRecall.push((await timed(() => teamRecall(client, 'bench', query, TOP_K)))[1].wall)
  }
  result.newConnection = Object.fromEntries(Object.entries(cold).map(([k, v]) => [k, { p50: q(v, 0.5), max: q(v, 1) }]))
  log(`new connection: ${JSON.stringify(result.newConnection)}`)
  if (args.explain) {
    for (const kind of QUERY_KINDS) {
      const sent: pg.QueryConfig[] = []
      const recorder = { query: (config: pg.QueryConfig) => { sent.push(config); return client.query(config) } }
      const query = gen.query(kind, Math.floor(0.5 * N / Q))
      await teamRecall(recorder as unknown as pg.ClientBase, 'bench', query, TOP_K)
      for (const [i, statement] of sent.entries()) {
        await client.query(`SET plan_cache_mode = force_generic_plan; PREPARE explained AS ${statement.text}`)
        const values = statement.values ?? []
        const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE explained(${values.map((v) => client.escapeLiteral(literal(v))).join(', ')})`)
        await client.query('DEALLOCATE explained; RESET plan_cache_mode')
        console.error(`--- ${kind} statement ${i + 1} (${statement.name ?? 'unnamed'}): ${query}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`)
      }
    }
  }
  result.recall = { overall: { team: summary(all.team), local: summary(all.local), merged: summary(all.merged) }, byKind,
    mergedOutOfBudget: layer.stats().degraded.timeout - degradedBefore.timeout,
    // Merged recalls that got no team answer, by reason (a run of timeouts opens the circuit: those turns do not wait at all).
    mergedDegraded: Object.fromEntries(Object.entries(layer.stats().degraded).map(([k, n]) => [k, n - degradedBefore[k as keyof typeof degradedBefore]])),
    mergedTotal: all.merged.length, budgetMs: BUDGET_MS }
  await layer.close()
  await vacuum.end()

  // 3. Commit rate: 8 concurrent clients, one shared note per transaction; local single commits beside.
  if (WRITES > 0) {
    rmSync(filledMark, { force: true }) // the cached layers now hold more notes
    const clients = await Promise.all(Array.from({ length: 8 }, connect))
    const [, shared] = await timed(() => Promise.all(clients.map(async (c, w) => {
      for (let i = 0; i < WRITES; i++) await shareNotes(c, [{ text: `writer ${w} note ${i}: ${gen.block(N + w * WRITES + i).text}` }], options)
    })))
    const [, local] = await timed(() => {
      for (let i = 0; i < 8 * WRITES; i++) store.commit({ text: `local note ${i}: ${gen.block(N + i).text}`, source: 'bench' })
    })
    result.commits = { teamPerS8Clients: Math.round(8 * WRITES / (shared.wall / 1000)), localPerS: Math.round(8 * WRITES / (local.wall / 1000)), commits: 8 * WRITES }
    log(`commits: team ${JSON.stringify(result.commits)}`)
    await Promise.all(clients.map((c) => c.end()))
  }
  store.close()

  // 4. Parity on the eval sets.
  if (args.parity) {
    const table: Record<string, unknown> = {}
    for (const name of ['locomo-en-dev', 'cmrc2018-zh-chunk-dev', 'madial-zh-dev']) {
      const set = readEvalSet(join(evalSets, name))
      for (const mode of ['global', 'scoped'] as const) {
        const owner2 = await server.admin('bench')
        table[`${name} ${mode}`] = await parity(owner2, set, mode, (ns) => grantTeam(owner2, 'postgres', ns))
        await owner2.end()
        log(`parity ${name} ${mode}: ${JSON.stringify(table[`${name} ${mode}`])}`)
      }
    }
    result.parity = table
  }
  await client.end()
} catch (error) {
  console.error(error)
  process.exitCode = 1
} finally {
  await server.stop()
  if (args.cache === undefined) rmSync(dir, { recursive: true, force: true })
}
result.loadAfter = loadavg()
console.log(JSON.stringify(result))
