/**
 * The `stablemem` dispatcher: parses the command line with `node:util` parseArgs, prints help,
 * loads the chosen command, and maps outcomes to exit codes (0 success, 1 failure, 2 usage).
 * Commands are imported only when run, so `--help` and `doctor` work even where `node:sqlite`
 * is missing (doctor's job is to say so).
 */
import { parseArgs } from 'node:util'
import { defaultStorePath } from '../dsh-home.ts'
import { StableMemError } from '../errors.ts'
import { escapeForDisplay } from '../text/terminal.ts'
import { println, UsageError, type CliIo, type Command } from './command.ts'

/** The subcommands, in help order. A new command is one module under `commands/` and one row here. */
export const COMMANDS: Record<string, { summary: string, load: () => Promise<{ command: Command }> }> = {
  stats: { summary: 'blocks, edges, file size, schema version, last write, index segments', load: () => import('./commands/stats.ts') },
  commit: { summary: 'save a note: commit <text> [--source s] [--scene s] [--scope s] [--workspace dir]', load: () => import('./commands/commit.ts') },
  get: { summary: 'show one block: get <id>', load: () => import('./commands/get.ts') },
  recall: { summary: 'the recall the plugin injects: recall <query> [--k 5] [--workspace dir | --all] [--json]', load: () => import('./commands/recall.ts') },
  scope: { summary: 'show or move notes\' scopes: scope set|add|remove <id>… global | workspace <dir>', load: () => import('./commands/scope.ts') },
  export: { summary: 'write the store out: export [--format jsonl|md] [--out file]', load: () => import('./commands/export.ts') },
  import: { summary: 'restore a JSON Lines export: import <file.jsonl>', load: () => import('./commands/import.ts') },
  doctor: { summary: 'check Node, node:sqlite, FTS5 and the store file', load: () => import('./commands/doctor.ts') },
  cool: { summary: 'distil idle cold blocks into stable facts: cool [--dry-run] [--now <time>] [--json]', load: () => import('./commands/cool.ts') },
  scenes: { summary: 'scenes with strengths, features and notes: scenes [list | show <key>] [--json]', load: () => import('./commands/scenes.ts') },
  forget: { summary: 'delete notes for good: forget [--shared] <id>… | --scene s | --source s | --before t | --all', load: () => import('./commands/forget.ts') },
  serve: { summary: 'the memory browser on 127.0.0.1: serve [--port n] [--read-only] [--open] [--host address]', load: () => import('./commands/serve.ts') },
  vacuum: { summary: 'rewrite the store file without free space', load: () => import('./commands/vacuum.ts') },
  upkeep: { summary: 'merge the full-text index into one segment (the plugin does it while idle)', load: () => import('./commands/upkeep.ts') },
  embed: { summary: 'compute missing vectors: embed --backfill --url <base-url> --model <name>', load: () => import('./commands/embed.ts') },
  'install-dsh': { summary: 'install dsh at the tested versions (with Node 24 and pnpm): install-dsh <prefix>', load: () => import('./commands/install-dsh.ts') },
  share: { summary: 'share stored notes with the team layer: share <id>… [--team-url url --namespace ns]', load: () => import('./commands/share.ts') },
  team: { summary: 'set up a team database (as its owner): team init [--role r] --team-url url --namespace ns', load: () => import('./commands/team.ts') },
  preset: { summary: 'the stablemem agent preset for dsh web: preset install|list|diff|uninstall [--home <dsh home>]', load: () => import('./commands/preset.ts') },
}

/** Options every command accepts. */
const COMMON = {
  db: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

/** The top-level help text. */
export function mainUsage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length))
  return [
    'Usage: stablemem <command> [options]',
    '',
    'Inspect and maintain a dsh-stablemem store file; dsh does not need to be running.',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    'Options for every command:',
    '  --db <path>  store file (default: $DSH_HOME/stablemem/memory.db, the plugin\'s default)',
    '  -h, --help   help for the command',
    '',
    'Exit codes: 0 success, 1 failure, 2 usage error.',
  ].join('\n')
}

/** Runs one command line and returns its exit code. Never throws. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    println(name === undefined ? io.stderr : io.stdout, mainUsage())
    return name === undefined ? 2 : 0
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  if (entry === undefined) return usageFailure(io, `unknown command "${name}"`, undefined)
  try {
    const { command } = await entry.load()
    let parsed
    try {
      parsed = parseArgs({ args: [...rest], options: { ...COMMON, ...command.options }, allowPositionals: true, strict: true })
    } catch (error) {
      const unknown = /Unknown option '([^']+)'/.exec(firstLine(error))
      throw new UsageError(unknown ? `unknown option ${unknown[1]}` : firstLine(error))
    }
    if (parsed.values.help === true) {
      println(io.stdout, command.usage)
      return 0
    }
    const { min, max } = command.positionals
    if (parsed.positionals.length < min) throw new UsageError(`missing argument (${command.usage.split('\n')[0]})`)
    if (parsed.positionals.length > max) throw new UsageError(`unexpected argument "${parsed.positionals[max]}"`)
    const db = typeof parsed.values.db === 'string' ? parsed.values.db : defaultStorePath(io.env)
    if (db.trim() === '') throw new UsageError('--db needs a path')
    return await command.run({ args: parsed.positionals, values: parsed.values as Record<string, string | boolean | undefined>, db, dbGiven: typeof parsed.values.db === 'string', io })
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(io, error.message, name)
    // The output stream reports its own failure once ('error' listener in main.ts).
    if (isOutputError(error)) return 1
    if ((error as NodeJS.ErrnoException).code === 'ERR_UNKNOWN_BUILTIN_MODULE') {
      println(io.stderr, `stablemem ${name}: this Node (${process.versions.node}) has no node:sqlite; run \`stablemem doctor\` for details`)
      return 1
    }
    // A refusal may quote what it refused (an id from an import file): escaped, like stored text.
    println(io.stderr, `stablemem ${name}: ${escapeForDisplay(error instanceof StableMemError ? error.message : firstLine(error))}`)
    return 1
  }
}

/** Errors of writing the output: the reader went away (EPIPE) or the disk is full (ENOSPC). */
const OUTPUT_ERRORS = new Set(['EPIPE', 'ENOSPC', 'EIO', 'EDQUOT', 'ERR_STREAM_DESTROYED'])

function isOutputError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return typeof code === 'string' && OUTPUT_ERRORS.has(code) && (error as NodeJS.ErrnoException).syscall !== 'open'
}

/** The one line printed when standard output cannot be written. */
export function outputFailure(name: string, error: NodeJS.ErrnoException): string {
  const why = error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED' ? 'the reader closed the pipe' : error.code === 'ENOSPC' ? 'no space left on device' : error.message
  return `stablemem${name === '' ? '' : ` ${name}`}: output stopped: ${why} (${error.code ?? 'error'})`
}

function usageFailure(io: CliIo, message: string, name: string | undefined): number {
  println(io.stderr, `stablemem${name === undefined ? '' : ` ${name}`}: ${message} (see stablemem ${name === undefined ? '' : `${name} `}--help)`)
  return 2
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.split('\n')[0]!.trim()
}
