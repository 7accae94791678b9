/** `stablemem team init`: create or migrate the team database's schema and grant a role its namespace. */
import { println, UsageError, type Command } from '../command.ts'
import { teamConfigOf } from '../team-args.ts'
import { TEAM_OPTIONS, TEAM_USAGE } from '../team-args.ts'
import { connectFailure, openTeamPool } from '../../team/connection.ts'
import { grantTeam, migrateTeamSchema, TEAM_SCHEMA_VERSION } from '../../team/schema.ts'

/** The team command. */
export const command: Command = {
  usage: [
    'Usage: stablemem team init [--role <role>] --team-url <owner url> --namespace <ns>',
    '',
    'Run once per team database as its owner (an administrator): creates the dsh-stablemem schema',
    'in an empty database (or migrates an older one), then grants --role (default: the role of',
    '--team-url) the namespace --namespace: that role then reads and writes only that namespace\'s',
    'rows, enforced by row-level security. Create the role itself with CREATE ROLE … LOGIN PASSWORD.',
    '',
    '  --role <role>         the team\'s role to grant',
    ...TEAM_USAGE,
  ].join('\n'),
  options: { ...TEAM_OPTIONS, role: { type: 'string' } },
  positionals: { min: 1, max: 1 },
  async run({ args, values, io }) {
    if (args[0] !== 'init') throw new UsageError(`unknown team subcommand ${JSON.stringify(args[0])} (only: init)`)
    const config = teamConfigOf({ values, io })
    const { pool, target } = openTeamPool({ ...config, poolSize: 1 }, io.env, () => {})
    try {
      const client = await pool.connect().catch((error: unknown) => { throw connectFailure(error, target, config.passwordEnv) ?? error })
      try {
        const from = await migrateTeamSchema(client, target.database)
        const role = typeof values.role === 'string' ? values.role : target.user
        await grantTeam(client, role, config.namespace)
        println(io.stdout, `schema version ${TEAM_SCHEMA_VERSION}${from === TEAM_SCHEMA_VERSION ? '' : ` (was ${from})`}; role ${role} granted namespace ${config.namespace}`)
      } finally {
        client.release()
      }
      return 0
    } finally {
      await pool.end()
    }
  },
}
