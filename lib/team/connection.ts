import pg from 'pg'
import type { TeamConfig } from './config.ts'
import { TeamError } from './errors.ts'

/** Longest a statement may run on the server (a recall gives up far sooner: `team.budgetMs`). */
export const STATEMENT_TIMEOUT_MS = 5_000

/** Where the team database is, as parsed from `team.url` (never with a password). */
export interface TeamTarget {
  host: string
  port: number
  user: string
  database: string
}

/** The parts of `team.url`; refuses a URL that names no role or database. */
export function teamTarget(url: string): TeamTarget {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TeamError('config', `team.url ${JSON.stringify(url)} is not a URL`)
  }
  const user = decodeURIComponent(parsed.username)
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''))
  if (user === '') throw new TeamError('config', 'team.url names no role (postgresql://ROLE@host/database)')
  if (database === '') throw new TeamError('config', 'team.url names no database (postgresql://role@host/DATABASE)')
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  return { host: host === '' ? '127.0.0.1' : host, port: parsed.port === '' ? 5432 : Number(parsed.port), user, database }
}

/**
 * The settings of a connection pool to the team database: the role and database from
 * `team.url`, the password from the environment variable `team.passwordEnv` (read once, here).
 * Plain data, so the recall thread (`recall-thread.ts`) opens its own pool with the same.
 */
export function teamPoolConfig(config: TeamConfig, env: NodeJS.ProcessEnv): { pool: pg.PoolConfig, target: TeamTarget } {
  const target = teamTarget(config.url)
  const password = config.passwordEnv === '' ? undefined : env[config.passwordEnv]
  return {
    pool: {
      ...target, password: password ?? '',
      max: config.poolSize, connectionTimeoutMillis: config.connectTimeoutMs, idleTimeoutMillis: 30_000,
      application_name: 'dsh-stablemem', allowExitOnIdle: true, statement_timeout: STATEMENT_TIMEOUT_MS,
    },
    target,
  }
}

/**
 * How long the recall thread's pool keeps an idle connection: ten minutes, against the layer's
 * 30 s. Turns of a conversation come tens of seconds apart, and a recall on a new connection pays
 * the login (scram), a new backend's cold caches and planning before its plans are cached: ≈ 40
 * ms at 100,000 notes against ≈ 6 on a warm one (docs/benchmarks.md), so with 30 s most turns of
 * a real conversation would pay it. TCP keep-alive finds a connection that died while idle.
 */
export const RECALL_IDLE_MS = 600_000

/** The recall thread's pool settings (`recall-thread.ts`): the layer's, its idle connections kept longer (`RECALL_IDLE_MS`). */
export function recallPoolConfig(settings: pg.PoolConfig): pg.PoolConfig {
  return { ...settings, idleTimeoutMillis: RECALL_IDLE_MS, keepAlive: true }
}

/**
 * A connection pool to the team database (`teamPoolConfig`). Errors of idle connections (the
 * server restarted) go to `onIdleError` instead of crashing the process; the pool opens new
 * connections on the next call.
 */
export function openTeamPool(config: TeamConfig, env: NodeJS.ProcessEnv, onIdleError: (error: Error) => void): { pool: pg.Pool, target: TeamTarget, settings: pg.PoolConfig } {
  const { pool: settings, target } = teamPoolConfig(config, env)
  const pool = new pg.Pool(settings)
  pool.on('error', onIdleError)
  return { pool, target, settings }
}

/** Turns a connection failure into a `TeamError` that says what to fix. */
export function connectFailure(error: unknown, target: TeamTarget, passwordEnv: string): TeamError | undefined {
  if (error instanceof TeamError) return error
  const e = error as { code?: string, message?: string }
  const where = `${target.user}@${target.host}:${target.port}/${target.database}`
  if (e.code === '28P01' || e.code === '28000' || /password/i.test(e.message ?? '') && /SASL|authentication/i.test(e.message ?? '')) {
    return new TeamError('auth', `team database ${where} refused the login (${e.message}); check the role and the password in $${passwordEnv}`, { cause: error })
  }
  if (e.code === '3D000') return new TeamError('unreachable', `team database ${where} does not exist`, { cause: error })
  if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' || e.code === 'ETIMEDOUT' || e.code === 'ECONNRESET' || e.code === 'EHOSTUNREACH' ||
    /timeout|terminated|Connection terminated/i.test(e.message ?? '')) {
    return new TeamError('unreachable', `team database ${where} is unreachable (${e.code ?? e.message})`, { cause: error })
  }
  if (e.code === '57P01' || e.code === '57P03' || e.code === '08006' || e.code === '08001') {
    return new TeamError('unreachable', `team database ${where} is not accepting connections (${e.message})`, { cause: error })
  }
  return undefined
}
