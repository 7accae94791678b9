/**
 * A team database on a private PostgreSQL server for one test file: the server (`../helpers/
 * postgres.ts`), a database created and migrated by the superuser, and team roles with their own
 * passwords and namespaces, as an administrator would set them up (docs/team.md).
 */
import { startPostgres, type PgServer } from '../helpers/postgres.ts'
import { grantTeam, migrateTeamSchema } from '../../lib/team/schema.ts'

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
  stop(): Promise<void>
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
    stop: () => server.stop(),
  }
}
