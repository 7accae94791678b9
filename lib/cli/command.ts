/**
 * The shape every `stablemem` subcommand shares, and the one error type for a wrong invocation.
 * Keeping it separate from the dispatcher lets each command live in its own module.
 */
import type { ParseArgsOptionsConfig } from 'node:util'

/** Where a command writes and what it may read from its surroundings. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  env: NodeJS.ProcessEnv
  /** Where a command that asks for confirmation reads the answer (only when it is a terminal). */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean }
}

/** A parsed invocation handed to a command's `run`. */
export interface CommandInput {
  /** Positional arguments after the command name. */
  args: string[]
  /** Parsed option values (`--db` and `--help` are handled before `run`). */
  values: Record<string, string | boolean | undefined>
  /** The store file: `--db`, else the plugin's default path. */
  db: string
  /** True when `db` came from `--db`, false for the default path. */
  dbGiven: boolean
  io: CliIo
}

/** One subcommand: its help text, its own options, how many positionals it takes, and what it does. */
export interface Command {
  /** Full `--help` text; its first line is the synopsis. */
  usage: string
  options: ParseArgsOptionsConfig
  positionals: { min: number, max: number }
  /** Runs the command and returns the exit code (0 success, 1 failure). */
  run(input: CommandInput): Promise<number>
}

/** A wrong invocation (unknown option, missing argument, bad value): exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** Writes one line to a stream. */
export function println(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`)
}
