/**
 * A team database on a private PostgreSQL server for one test file: the server (`../helpers/
 * postgres.ts`), a database created and migrated by the superuser, and team roles with their own
 * passwords and namespaces, as an administrator would set them up (docs/team.md).
 */
import pg from 'pg'
import { startPostgres, type PgServer } from '../helpers/postgres.ts'
import { grantTeam, migrateTeamSchema } from '../../lib/team/schema.ts'
import { noteTokens, termFrequencies } from '../../lib/team/terms.ts'

/** A team role: its name, password, namespace and the `team:` config of an agent using it. */
export interface TeamRole {
  role: string
  password: string
  namespace: string
  env: string
  config(member: string, extra?: Record<string, unknown>): Record<string, unknown>
}

/** The server with a migrated database `team` and helpers to add roles. */
export interface TeamDb {
  server: PgServer
  database: string
  role(role: string, namespace: string): Promise<TeamRole>
  /** A client logged in as `as` (on the team database unless another is named); the caller ends it. */
  connect(as: TeamRole, database?: string): Promise<pg.Client>
  /**
   * Another database on the same server, migrated by `schema` (a mutant's copy of
   * lib/team/schema.ts in a mutation check) with each of `roles` granted its namespace there.
   */
  migratedDatabase(name: string, schema: TeamSchema, roles: readonly TeamRole[]): Promise<void>
  stop(): Promise<void>
}

/** The schema functions a database is set up with (lib/team/schema.ts or a mutant's copy). */
export interface TeamSchema {
  migrateTeamSchema: typeof migrateTeamSchema
  grantTeam: typeof grantTeam
}

let envSerial = 0

/** Starts the server and creates the team database; `stop()` in teardown. */
export async function startTeamDb(database = 'team'): Promise<TeamDb> {
  const server = await startPostgres()
  try {
    const admin = await server.admin()
    await admin.query(`CREATE DATABASE ${database}`)
    await admin.end()
    const client = await server.admin(database)
    await migrateTeamSchema(client, database)
    await client.end()
  } catch (error) {
    await server.stop()
    throw error
  }
  return {
    server, database,
    async role(role, namespace) {
      const password = `pw-${role}-${Math.random().toString(36).slice(2)}`
      const client = await server.admin(database)
      await client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`)
      await grantTeam(client, role, namespace)
      await client.end()
      const env = `STABLEMEM_TEST_PG_${process.pid}_${++envSerial}`
      process.env[env] = password
      return {
        role, password, namespace, env,
        config: (member, extra = {}) => ({ url: server.url(database, role), namespace, member, passwordEnv: env, ...extra }),
      }
    },
    async connect(as, other = database) {
      const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: as.role, password: as.password, database: other })
      await client.connect()
      return client
    },
    async migratedDatabase(name, schema, roles) {
      const admin = await server.admin()
      await admin.query(`CREATE DATABASE ${name}`)
      await admin.end()
      const owner = await server.admin(name)
      await schema.migrateTeamSchema(owner, name)
      for (const role of roles) await schema.grantTeam(owner, role.role, role.namespace)
      await owner.end()
    },
    stop: () => server.stop(),
  }
}

/**
 * What a namespace's statistics and postings say, beside what its rows say (read as the
 * superuser): equal when every write and forget kept them in step.
 */
export async function statisticsOf(server: PgServer, database: string, namespace: string): Promise<{ kept: unknown, expected: unknown }> {
  const admin = await server.admin(database)
  try {
    const { rows } = await admin.query<{ seq: string, text: string }>('SELECT seq, text FROM stablemem.notes WHERE namespace = $1', [namespace])
    const df: Record<string, number> = {}
    const postings: string[] = []
    let tokens = 0
    for (const r of rows) {
      const toks = noteTokens(r.text)
      tokens += toks.latin.length + toks.cjk.length
      for (const [term, tf] of termFrequencies(toks)) {
        df[term] = (df[term] ?? 0) + 1
        postings.push(`${term} ${r.seq} ${tf} ${toks.latin.length + toks.cjk.length}`)
      }
    }
    const stats = (await admin.query<{ notes: number, tokens: number }>('SELECT notes::int, tokens::int FROM stablemem.stats WHERE namespace = $1', [namespace])).rows[0] ?? { notes: 0, tokens: 0 }
    const terms = (await admin.query<{ term: string, df: number }>('SELECT term, df FROM stablemem.terms WHERE namespace = $1', [namespace])).rows
    const kept = (await admin.query<{ p: string }>("SELECT term || ' ' || seq || ' ' || tf || ' ' || doc_len AS p FROM stablemem.postings WHERE namespace = $1", [namespace])).rows
    return {
      kept: { stats, df: Object.fromEntries(terms.map((t) => [t.term, t.df]).sort()), postings: kept.map((r) => r.p).sort() },
      expected: { stats: { notes: rows.length, tokens }, df: Object.fromEntries(Object.entries(df).sort()), postings: postings.sort() },
    }
  } finally {
    await admin.end()
  }
}
