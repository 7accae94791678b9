/** `stablemem commit`: save a note from the shell, exactly as the commit tool would. */
import { StableMemError } from '../../errors.ts'
import { canonicalText } from '../../text/normalize.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openForWrite, withStore } from '../open-store.ts'
import { commitScopeKey, SCOPE_OPTIONS } from '../scope-args.ts'
import { openTeam, TEAM_OPTIONS, TEAM_USAGE } from '../team-args.ts'

/** The commit command. */
export const command: Command = {
  usage: [
    'Usage: stablemem commit <text> [--source <s>] [--scene <s>] [--scope global|workspace|preset] [--workspace <dir>] [--preset <id>] [--shared] [--db <path>] [--json]',
    '',
    'Saves one note. The id is the hash of the text, so saving the same text twice is harmless.',
    '',
    '  --source <s>  provenance tag (default "cli")',
    '  --scene <s>   scene key the note belongs to',
    '  --scope <s>   global (default), workspace or preset: where the note is recalled',
    '  --workspace <dir>  the workspace (implies --scope workspace; default for it: the current directory)',
    '  --preset <id>      the agent preset (implies --scope preset)',
    '  --shared      also share the note with the team layer (docs/team.md)',
    ...TEAM_USAGE,
    '  --json        print {"id", "created", "restored"?, "redacted"?, "duplicateOf"?} as JSON ("duplicateOf" for a near-duplicate of a stored note)',
  ].join('\n'),
  options: { source: { type: 'string' }, scene: { type: 'string' }, json: { type: 'boolean' }, shared: { type: 'boolean' }, ...SCOPE_OPTIONS, ...TEAM_OPTIONS },
  positionals: { min: 1, max: 1 },
  async run({ db, args, values, io }) {
    if (canonicalText(args[0]!) === '') throw new UsageError('<text> is empty')
    const scope = commitScopeKey(values)
    const input = { text: args[0]!, source: typeof values.source === 'string' ? values.source : 'cli', scene: typeof values.scene === 'string' ? values.scene : '', scope }
    // The team layer is checked first, so an unusable one fails the command before anything is saved.
    const team = values.shared === true ? await openTeam({ values, io }) : undefined
    try {
      if (team && team.stats().state !== 'ready') throw new StableMemError('unavailable', `team memory is unavailable: ${team.stats().error}; nothing was saved`)
      const result = await withStore(openForWrite(db), (store) => store.commit(input))
      const shared = team ? (await team.share([{ text: input.text, source: input.source, scene: input.scene }]))[0]!.created : undefined
      if (values.json === true) println(io.stdout, JSON.stringify(team ? { ...result, shared: true } : result))
      else {
        println(io.stdout, (result.created ? `saved ${result.id}` : result.restored !== undefined
          ? `already stored as ${result.id}; current again, replacing ${result.restored}`
          : `already stored as ${result.id}`) + (result.duplicateOf && result.created ? ` (nearly the same as ${result.duplicateOf})` : ''))
        if (result.redacted !== undefined) println(io.stdout, `masked before saving: ${result.redacted.join(', ')}`)
        if (team) println(io.stdout, `${shared ? 'shared' : 'already shared'} with ${team.config.namespace}`)
      }
    } finally {
      await team?.close()
    }
    return 0
  },
}
