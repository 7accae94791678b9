/** `stablemem scope`: which scopes notes belong to, and moving them between scopes. */
import { isBlockId } from '../../store/block-id.ts'
import { describeScope } from '../../store/scope-key.ts'
import { escapeForDisplay as show, jsonForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'
import { cliPolicy, targetFromWords } from '../scope-args.ts'

const ACTIONS = ['show', 'set', 'add', 'remove'] as const

/** The scope command. */
export const command: Command = {
  usage: [
    'Usage: stablemem scope show <id>… [--db <path>] [--json]',
    '       stablemem scope set|add|remove <id>… global | workspace <dir> | preset <id> [--db <path>] [--json]',
    '',
    'A note belongs to one or more scopes: global (recalled everywhere), workspace <dir> (recalled',
    'in sessions working in that directory) and preset <id> (recalled on that agent preset).',
    '',
    '  show    the scopes of each note',
    '  set     make this the only scope (moving to global replaces workspace memberships)',
    '  add     add this scope, keeping the others',
    '  remove  take the notes out of this scope (refused for a note that has no other)',
    '  --json  print the result as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' } },
  positionals: { min: 2, max: 1000 },
  async run({ db, dbGiven, args, values, io }) {
    const [action, ...rest] = args
    if (!ACTIONS.includes(action as never)) throw new UsageError(`unknown action "${action}" (expected ${ACTIONS.join(', ')})`)
    const firstWord = rest.findIndex((a) => !isBlockId(a))
    const ids = firstWord < 0 ? rest : rest.slice(0, firstWord)
    const words = firstWord < 0 ? [] : rest.slice(firstWord)
    if (ids.length === 0) throw new UsageError(words[0] !== undefined && words[0].startsWith('blk_') ? `"${words[0]}" is not a block id (blk_ followed by 24 hex digits)` : 'missing block id')
    if (action === 'show') {
      if (words.length > 0) throw new UsageError(`"${words[0]}" is not a block id (blk_ followed by 24 hex digits)`)
      const scopes = await withStore(openExisting(db, dbGiven), (store) => ids.map((id) => ({ id, scopes: store.scopes.of(id) })))
      if (values.json === true) println(io.stdout, jsonForDisplay(scopes))
      else for (const { id, scopes: list } of scopes) println(io.stdout, `${id}  ${list.length === 0 ? '(no such block)' : list.map((s) => show(describeScope(s))).join('; ')}`)
      return scopes.every((s) => s.scopes.length > 0) ? 0 : 1
    }
    const key = cliPolicy.targetKey(targetFromWords(words), action !== 'remove')
    const changed = await withStore(openExisting(db, dbGiven, { write: true }), (store) => action === 'set' ? store.scopes.set(ids, key) : action === 'add' ? store.scopes.add(ids, key) : store.scopes.remove(ids, key))
    if (values.json === true) println(io.stdout, jsonForDisplay({ action, scope: key, ids, changed }))
    else println(io.stdout, `${action === 'set' ? 'moved' : action === 'add' ? 'added' : 'removed'} ${show(describeScope(key))}: ${changed} of ${ids.length} note${ids.length === 1 ? '' : 's'} changed`)
    return 0
  },
}
