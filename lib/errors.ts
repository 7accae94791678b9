/**
 * One error type for everything this package refuses, so callers (the tool, the CLI, other
 * plugins) can tell a deliberate refusal from a bug and show its message as it is.
 */

/** Why an operation was refused. */
export type StableMemErrorCode =
  | 'invalid_input'   // the caller's value is not acceptable (empty text, lone surrogate, bad id)
  | 'too_large'       // over a configured size limit
  | 'not_found'       // a referenced block does not exist
  | 'unavailable'     // the store could not be opened or is closed
  | 'newer_schema'    // the file was written by a newer release of this package
  | 'contains_secret' // the note holds a credential and config `secrets` is 'refuse'

/** A refusal with a stable `code` and a one-line message that names the offending field. */
export class StableMemError extends Error {
  readonly code: StableMemErrorCode
  constructor(code: StableMemErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StableMemError'
    this.code = code
  }
}
