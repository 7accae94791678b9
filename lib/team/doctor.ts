import type pg from 'pg'
import type { TeamConfig } from './config.ts'
import { connectFailure, openTeamPool } from './connection.ts'
import { schemaState, TEAM_SCHEMA_VERSION } from './schema.ts'

/** One finding of `stablemem doctor --team` (the shape of the store checks). */
export interface TeamCheck {
  status: 'ok' | 'warn' | 'fail'
  label: string
  detail: string
}

/**
 * Checks the team layer without changing it: the server answers and accepts the login, the
 * database holds our schema at a version this release understands, the role is granted the
 * configured namespace, and it may read and write there (a test row inserted and rolled back).
 * Stops at the first failure, which says what to fix.
 */
export async function diagnoseTeam(config: TeamConfig, env: NodeJS.ProcessEnv): Promise<TeamCheck[]> {
  const checks: TeamCheck[] = []
  const { pool, target } = openTeamPool({ ...config, poolSize: 1 }, env, () => {})
  const where = `${target.user}@${target.host}:${target.port}/${target.database}`
  let client: pg.PoolClient | undefined
  try {
    try {
      client = await pool.connect()
      const version = (await client.query<{ v: string }>('SHOW server_version')).rows[0]!.v
      checks.push({ status: 'ok', label: 'server', detail: `${where} answers (PostgreSQL ${version}), login accepted` })
    } catch (error) {
      checks.push({ status: 'fail', label: 'server', detail: connectFailure(error, target, config.passwordEnv)?.message ?? String((error as Error).message) })
      return checks
    }
    const state = await schemaState(client)
    if (state.kind !== 'ours') {
      checks.push({ status: 'fail', label: 'schema', detail: state.kind === 'empty' ? `no dsh-stablemem schema in ${target.database}; create it with \`stablemem team init\`` : `not a dsh-stablemem team database: ${state.reason}` })
      return checks
    }
    if (state.version !== TEAM_SCHEMA_VERSION) {
      const newer = state.version > TEAM_SCHEMA_VERSION
      checks.push({ status: newer ? 'fail' : 'warn', label: 'schema', detail: newer ? `version ${state.version}, newer than this release understands (${TEAM_SCHEMA_VERSION}); upgrade dsh-stablemem` : `version ${state.version}; migrated to ${TEAM_SCHEMA_VERSION} at the next start (or by \`stablemem team init\`)` })
      if (newer) return checks
    } else {
      checks.push({ status: 'ok', label: 'schema', detail: `version ${state.version}` })
    }
    const granted = (await client.query<{ ns: string | null, super: boolean }>('SELECT stablemem.my_namespace() AS ns, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS super')).rows[0]!
    if (!granted.super && granted.ns !== config.namespace) {
      checks.push({ status: 'fail', label: 'namespace', detail: `role ${target.user} is granted ${granted.ns === null ? 'no namespace' : JSON.stringify(granted.ns)}, not ${JSON.stringify(config.namespace)}; \`stablemem team init --role ${target.user}\` as the owner grants it` })
      return checks
    }
    checks.push({ status: granted.super ? 'warn' : 'ok', label: 'namespace', detail: granted.super ? `${config.namespace}: ${target.user} is a superuser, which row-level security does not restrict; give the team a role of its own` : `${config.namespace} granted to ${target.user}` })
    try {
      await client.query('BEGIN')
      const notes = (await client.query<{ n: string }>('SELECT count(*) AS n FROM stablemem.notes WHERE namespace = $1', [config.namespace])).rows[0]!.n
      await client.query(`INSERT INTO stablemem.notes (namespace, id, text, toks, doc_len, member, created_at) VALUES ($1, 'blk_doctor00000000000000000', 'doctor', '', 1, 'doctor', 0)`, [config.namespace])
      checks.push({ status: 'ok', label: 'access', detail: `reads (${notes} notes) and writes (test row rolled back)` })
    } catch (error) {
      checks.push({ status: 'fail', label: 'access', detail: `${(error as Error).message}; an administrator runs \`stablemem team init --role ${target.user}\`` })
    } finally {
      await client.query('ROLLBACK').catch(() => {})
    }
    return checks
  } finally {
    client?.release()
    await pool.end().catch(() => {})
  }
}
