/** `stablemem scenes`: the scenes of a store, with strengths, features and attached notes. */
import { SceneApi, type SceneSummary } from '../../kernel/scenes/api.ts'
import { escapeForDisplay as show, jsonForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The scenes command. */
export const command: Command = {
  usage: [
    'Usage: stablemem scenes [list | show <key>] [--limit <n>] [--db <path>] [--json]',
    '',
    'list (default): every scene, strongest first: origin, strength, notes attached, features.',
    'show <key>: one scene (any spelling of its key) and the notes attached to it, heaviest first.',
    '',
    '  --limit <n>  notes shown by show (default 20)',
    '  --json       JSON instead of lines',
  ].join('\n'),
  options: { json: { type: 'boolean' }, limit: { type: 'string' } },
  positionals: { min: 0, max: 2 },
  async run({ db, dbGiven, args, values, io }) {
    const [action = 'list', key] = args
    if (action !== 'list' && action !== 'show') throw new UsageError(`unknown scenes action "${action}" (list or show <key>)`)
    if (action === 'show' && key === undefined) throw new UsageError('scenes show needs a scene key')
    if (action === 'list' && key !== undefined) throw new UsageError('scenes list takes no key (use scenes show <key>)')
    const limit = values.limit === undefined ? 20 : Number(values.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer 1–1000')
    const result = await withStore(openExisting(db, dbGiven), (store) => {
      // Only the read side of the scene API; the settings matter to turns, not to reading.
      const scenes = new SceneApi((fn) => fn(store), { channel: '', timeZone: '', halfLifeDays: 0, card: 'off', scopes: () => undefined })
      return action === 'list' ? scenes.list() : scenes.get(key!, limit)
    })
    if (values.json === true) {
      println(io.stdout, jsonForDisplay(result ?? null))
      return result === undefined ? 1 : 0
    }
    if (result === undefined) {
      println(io.stderr, `stablemem scenes: no scene ${show(key!)} in ${db}`)
      return 1
    }
    const line = (s: SceneSummary) => `${show(s.key)}  ${s.origin}, strength ${s.strength}, ${s.refs} note${s.refs === 1 ? '' : 's'}` +
      (s.features.length > 0 ? `  [${show(s.features.map((f) => `${f.key} ${f.weight}`).join(', '))}]` : '')
    if (Array.isArray(result)) {
      if (result.length === 0) println(io.stdout, 'no scenes')
      for (const s of result) println(io.stdout, line(s))
      return 0
    }
    println(io.stdout, line(result))
    println(io.stdout, `created:  ${new Date(result.createdAt).toISOString()}`)
    println(io.stdout, `updated:  ${new Date(result.updatedAt).toISOString()}`)
    for (const note of result.notes) println(io.stdout, `  ${note.weight.toFixed(3)}  ${note.id}  ${show(note.text.replace(/\s+/g, ' ').slice(0, 120))}`)
    return 0
  },
}
