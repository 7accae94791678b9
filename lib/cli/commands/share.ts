/** `stablemem share <id>…`: promote local notes to the team layer (docs/team.md). */
import { println, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'
import { openTeam, teamConfigOf, TEAM_OPTIONS, TEAM_USAGE } from '../team-args.ts'
import { StableMemError } from '../../errors.ts'

/** The share command. */
export const command: Command = {
  usage: [
    'Usage: stablemem share <id>… [--team-url <url>] [--namespace <ns>] [--member <name>] [--db <path>] [--json]',
    '',
    'Shares stored notes with the team: their text, source and scene, saved by --member. The',
    'secrets policy applies again (credentials are masked). Nothing is shared unless named here.',
    '',
    ...TEAM_USAGE,
    '  --json  print [{"id", "created", "redacted"?}] as JSON',
  ].join('\n'),
  options: { ...TEAM_OPTIONS, json: { type: 'boolean' } },
  positionals: { min: 1, max: 1000 },
  async run({ db, dbGiven, args, values, io }) {
    teamConfigOf({ values, io }) // a missing or malformed team config is a usage error before anything is read
    const blocks = await withStore(openExisting(db, dbGiven), (store) => args.map((id) => {
      const block = store.get(id)
      if (!block) throw new StableMemError('not_found', `no note ${id} in ${db}`)
      return block
    }))
    const team = await openTeam({ values, io })
    try {
      const results = await team.share(blocks.map((b) => ({ text: b.text, source: b.source, scene: b.scene })))
      if (values.json === true) println(io.stdout, JSON.stringify(results))
      else for (const r of results) println(io.stdout, `${r.created ? 'shared' : 'already shared'} ${r.id} with ${team.config.namespace}${r.redacted ? ` (masked: ${r.redacted.join(', ')})` : ''}`)
      return 0
    } finally {
      await team.close()
    }
  },
}
