/**
 * `stablemem forget`: deletes notes for good, by id or by filter. It first shows what it will
 * delete; on a terminal it asks before deleting, elsewhere it needs `--yes`. What was shown is
 * exactly what is deleted (the preview's ids), even if another process adds matching notes meanwhile.
 */
import { createInterface } from 'node:readline'
import { isBlockId } from '../../store/block-id.ts'
import type { ForgetFilter, ForgetResult } from '../../store/forget.ts'
import type { Block } from '../../store/types.ts'
import { escapeForDisplay, jsonForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type CliIo, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'
import { openTeam, teamConfigOf, TEAM_OPTIONS, TEAM_USAGE } from '../team-args.ts'
import type { SharedForgetResult } from '../../team/forget.ts'

/** Characters of a note's first line shown in the preview. */
const PREVIEW_CHARS = 72

/** The forget command. */
export const command: Command = {
  usage: [
    'Usage: stablemem forget <id>… | --scene <key> | --source <tag> | --before <time> | --all',
    '                        [--yes] [--dry-run] [--keep-superseded] [--keep-duplicates] [--db <path>] [--json]',
    '       stablemem forget --shared <id>… | --scene <key> | --source <tag> | --before <time> | --all',
    '                        [--yes] [--dry-run] [--json] [team options]',
    '',
    'Deletes notes for good: the note, its index entries, its vectors and its edges, in one',
    'transaction, with no bytes left in the store file or its WAL. Lists what it will delete and',
    'asks for confirmation on a terminal. --scene, --source and --before narrow together.',
    'Ids that are not stored are reported (exit code 1) while the others are forgotten. A large',
    'forget prints its result as soon as the notes are gone from every read, then scrubs their',
    'bytes from the index before it exits; --wait prints only once the bytes are gone.',
    '',
    '  --scene <key>      notes of this scene',
    '  --source <tag>     notes with this source tag',
    '  --before <time>    notes created before this time (ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00Z)',
    '  --all              every note (an empty filter is refused; this must be explicit)',
    '  --yes              do not ask (needed when standard input is not a terminal)',
    '  --dry-run          only list what would be deleted',
    '  --keep-superseded  a note a forgotten one had replaced stays retired (default: it is recalled again)',
    '  --keep-duplicates  forgetting by id leaves the notes\' near-duplicates (default: they go too)',
    '  --wait             print the result only when the bytes are gone (a large forget scrubs them after it)',
    '  --json             print the result as JSON: {deleted, unknown, restored, derived, edges, vectors, dryRun, walCleared, bytesPending}',
    '',
    'With --shared it deletes the team\'s shared notes instead (for everyone in the team, within its',
    'namespace; docs/team.md), with the same filters and confirmation; --json prints',
    '{deleted, unknown, restored, dryRun}. This machine\'s notes are not touched.',
    '',
    '  --shared           forget team notes (config from the options below or their environment variables)',
    ...TEAM_USAGE,
  ].join('\n'),
  options: {
    scene: { type: 'string' },
    source: { type: 'string' },
    before: { type: 'string' },
    all: { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
    'dry-run': { type: 'boolean' },
    'keep-superseded': { type: 'boolean' },
    'keep-duplicates': { type: 'boolean' },
    wait: { type: 'boolean' },
    json: { type: 'boolean' },
    shared: { type: 'boolean' },
    ...TEAM_OPTIONS,
  },
  positionals: { min: 0, max: Number.POSITIVE_INFINITY },
  async run({ db, dbGiven, args, values, io }) {
    const target = targetOf(args, values)
    const dryRun = values['dry-run'] === true
    const json = values.json === true
    if (values.shared === true) return await forgetShared(target, values, io)
    const options = { restoreSuperseded: values['keep-superseded'] !== true, withDuplicates: values['keep-duplicates'] !== true }
    if (!dryRun && values.yes !== true && io.stdin?.isTTY !== true) {
      throw new UsageError('standard input is not a terminal, so forget cannot ask: pass --yes to delete, or --dry-run to look')
    }
    return await withStore(openExisting(db, dbGiven, { write: true }), async (store) => {
      const preview = store.forget(target, { ...options, dryRun: true })
      if (dryRun || preview.deleted.length === 0) {
        report(io, { ...preview, dryRun }, json)
        return preview.unknown.length > 0 ? 1 : 0
      }
      if (values.yes !== true) {
        if (!json) list(io, preview, 'will forget')
        if (!await confirm(io, `Forget ${plural(preview.deleted.length, 'note')} for good? [y/N] `)) {
          println(io.stderr, 'stablemem forget: nothing deleted')
          return 1
        }
      }
      const result = store.forget(preview.deleted.map((b) => b.id), { ...options, withDuplicates: false, origin: 'cli', wait: values.wait === true })
      report(io, { ...result, unknown: preview.unknown }, json)
      // A large forget returned once the notes were gone from every read; this process has no
      // later moment, so it scrubs their bytes before it exits (the result is already printed).
      if (result.bytesPending) {
        const scrubbed = store.scrub()
        if (!json) println(io.stdout, scrubbed.pending ? 'their bytes are still in the index: `stablemem upkeep` finishes the scrub' : 'their bytes are scrubbed from the index and the WAL')
      }
      return preview.unknown.length > 0 ? 1 : 0
    })
  },
}

/**
 * `forget --shared`: the same preview, confirmation and `--yes`/`--dry-run`/`--json` rules, on
 * the team layer; what was shown is what is deleted (the preview's ids).
 */
async function forgetShared(target: string[] | ForgetFilter, values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  for (const local of ['keep-superseded', 'keep-duplicates', 'wait'] as const) {
    if (values[local] === true) throw new UsageError(`--${local} applies to this machine's notes, not to --shared`)
  }
  const dryRun = values['dry-run'] === true
  const json = values.json === true
  if (!dryRun && values.yes !== true && io.stdin?.isTTY !== true) {
    throw new UsageError('standard input is not a terminal, so forget cannot ask: pass --yes to delete, or --dry-run to look')
  }
  teamConfigOf({ values, io }) // a missing or malformed team config is a usage error before anything is sent
  const team = await openTeam({ values, io })
  try {
    const where = team.config.namespace
    const preview = await team.forget(target, { dryRun: true })
    const shown = (result: SharedForgetResult) => {
      if (json) return println(io.stdout, jsonForDisplay(result))
      for (const id of result.unknown) println(io.stderr, `stablemem forget: no team note ${id} in ${where}`)
      if (result.deleted.length === 0) return println(io.stdout, result.dryRun ? 'nothing matches: no team note would be deleted' : 'nothing matches: no team note deleted')
      if (result.dryRun) return listShared(io, result, 'would forget', where)
      println(io.stdout, `forgot ${plural(result.deleted.length, 'team note')} from ${where}`)
      if (result.restored.length > 0) println(io.stdout, `current again (a forgotten note had replaced them): ${result.restored.join(', ')}`)
    }
    if (dryRun || preview.deleted.length === 0) {
      shown({ ...preview, dryRun })
      return preview.unknown.length > 0 ? 1 : 0
    }
    if (values.yes !== true) {
      if (!json) listShared(io, preview, 'will forget', where)
      if (!await confirm(io, `Forget ${plural(preview.deleted.length, 'team note')} for everyone in ${where}? [y/N] `)) {
        println(io.stderr, 'stablemem forget: nothing deleted')
        return 1
      }
    }
    const result = await team.forget(preview.deleted.map((n) => n.id))
    shown({ ...result, unknown: preview.unknown })
    return preview.unknown.length > 0 ? 1 : 0
  } finally {
    await team.close()
  }
}

/**
 * The team preview: one line per note, with who shared it. The member name and text come from
 * another machine's rows: controls, bidi and hidden characters are shown as escapes, never sent
 * to the terminal raw.
 */
function listShared(io: CliIo, result: SharedForgetResult, verb: string, namespace: string): void {
  println(io.stdout, `${verb} ${plural(result.deleted.length, 'team note')} from ${namespace}:`)
  for (const note of result.deleted) println(io.stdout, `  ${note.id}  ${escapeForDisplay(note.member)}: ${firstLine(note)}`)
  if (result.restored.length > 0) println(io.stdout, `current again afterwards: ${result.restored.join(', ')}`)
}

/** The target from the command line; a usage error unless exactly one kind of target is given. */
function targetOf(args: string[], values: Record<string, string | boolean | undefined>): string[] | ForgetFilter {
  const filter: ForgetFilter = {}
  for (const field of ['scene', 'source'] as const) {
    const value = values[field]
    if (value === undefined) continue
    if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${field} needs a value`)
    filter[field] = value
  }
  if (typeof values.before === 'string') {
    const ms = Date.parse(values.before)
    if (!Number.isFinite(ms)) throw new UsageError(`--before must be an ISO 8601 time (e.g. 2026-01-31), not "${values.before}"`)
    filter.before = ms
  }
  const filtered = Object.keys(filter).length > 0
  if (values.all === true && (filtered || args.length > 0)) throw new UsageError('--all cannot be combined with ids or another filter')
  if (args.length > 0 && filtered) throw new UsageError('give either ids or a filter, not both')
  if (args.length > 0) {
    const bad = args.find((id) => !isBlockId(id))
    if (bad !== undefined) throw new UsageError(`"${bad}" is not a block id (blk_ followed by 24 hex digits)`)
    return args
  }
  if (values.all === true) return { all: true }
  if (!filtered) throw new UsageError('nothing to forget: give ids, --scene, --source, --before, or --all for every note')
  return filter
}

function report(io: CliIo, result: ForgetResult, json: boolean): void {
  if (json) {
    println(io.stdout, jsonForDisplay(result))
    return
  }
  for (const id of result.unknown) println(io.stderr, `stablemem forget: no block ${id}`)
  if (result.dryRun) {
    if (result.deleted.length === 0) println(io.stdout, 'nothing matches: no note would be deleted')
    else list(io, result, 'would forget')
    return
  }
  if (result.deleted.length === 0) {
    println(io.stdout, 'nothing matches: no note deleted')
    return
  }
  println(io.stdout, `forgot ${plural(result.deleted.length, 'note')} (${plural(result.edges, 'edge')}, ${plural(result.vectors, 'vector')})`)
  if (result.derived.length > 0) println(io.stdout, `with them ${plural(result.derived.length, 'fact')} distilled from them: ${result.derived.join(', ')}`)
  if (result.restored.length > 0) println(io.stdout, `current again (a forgotten note had replaced them): ${result.restored.join(', ')}`)
  if (!result.walCleared) println(io.stderr, 'stablemem forget: another process is reading the store, so old pages stay in its WAL until the next checkpoint; run `stablemem vacuum` later to finish')
}

/** The preview: one line per note. */
function list(io: CliIo, result: ForgetResult, verb: string): void {
  println(io.stdout, `${verb} ${plural(result.deleted.length, 'note')} (${plural(result.edges, 'edge')}, ${plural(result.vectors, 'vector')}):`)
  for (const block of result.deleted) println(io.stdout, `  ${block.id}  ${firstLine(block)}`)
  if (result.derived.length > 0) println(io.stdout, `of them distilled from a forgotten note: ${result.derived.join(', ')}`)
  if (result.restored.length > 0) println(io.stdout, `current again afterwards: ${result.restored.join(', ')}`)
}

/** A note's first line, control characters blanked, cut to fit one terminal line, bidi and hidden characters shown as escapes. */
function firstLine(block: Pick<Block, 'text'>): string {
  // eslint-disable-next-line no-control-regex
  const line = block.text.split(/\r\n|\r|\n|\u2028|\u2029/)[0]!.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
  const chars = Array.from(line)
  return escapeForDisplay(chars.length > PREVIEW_CHARS ? `${chars.slice(0, PREVIEW_CHARS - 1).join('')}…` : line)
}

/** Asks on the terminal; true only for y or yes. */
async function confirm(io: CliIo, question: string): Promise<boolean> {
  io.stderr.write(question)
  const lines = createInterface({ input: io.stdin!, terminal: false })
  try {
    for await (const line of lines) return /^\s*y(es)?\s*$/i.test(line)
    return false
  } finally {
    lines.close()
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}
