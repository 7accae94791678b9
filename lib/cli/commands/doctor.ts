/** `stablemem doctor`: is this machine and this store file fit to use, and if not, why in plain words. */
import { println, type Command } from '../command.ts'
import { diagnose } from '../doctor.ts'
import { diagnoseTeam } from '../../team/doctor.ts'
import { teamConfigOf, TEAM_OPTIONS, TEAM_USAGE } from '../team-args.ts'

/** The doctor command. */
export const command: Command = {
  usage: [
    'Usage: stablemem doctor [--db <path>] [--team] [--json]',
    '',
    'Checks the Node version, node:sqlite and FTS5, then the store file: integrity, schema',
    'version, full-text index and write access. Read-only. Exit code 1 when something fails.',
    '',
    '  --json  the checks as a JSON array of {status, label, detail}',
    '  --team  also check the team layer: server, login, schema, namespace grant, read and write',
    ...TEAM_USAGE,
  ].join('\n'),
  options: { json: { type: 'boolean' }, team: { type: 'boolean' }, ...TEAM_OPTIONS },
  positionals: { min: 0, max: 0 },
  async run({ db, values, io }) {
    const checks = await diagnose(db)
    if (values.team === true) checks.push(...await diagnoseTeam(teamConfigOf({ values, io }), io.env))
    const failed = checks.filter((c) => c.status === 'fail')
    if (values.json === true) {
      println(io.stdout, JSON.stringify(checks))
    } else {
      for (const check of checks) println(io.stdout, `${check.status.padEnd(4)}  ${check.label.padEnd(11)}  ${check.detail}`)
      println(io.stdout, failed.length === 0 ? 'no problems found' : `${failed.length} problem${failed.length === 1 ? '' : 's'} found`)
    }
    return failed.length === 0 ? 0 : 1
  },
}
