/** Why the team layer refused to start or a call to it failed (`TeamError.kind`). */
export type TeamErrorKind =
  | 'config'        // the `team:` block is incomplete (e.g. a url without a namespace)
  | 'unreachable'   // no connection: wrong host or port, server down, timeout
  | 'auth'          // the server refused the role or password
  | 'foreign'       // the database belongs to another program
  | 'newer_schema'  // the schema was written by a newer release
  | 'permission'    // the role lacks a right it needs (schema, namespace, tables)

/** A refusal of the team layer, with a message that says what to fix. */
export class TeamError extends Error {
  readonly kind: TeamErrorKind
  constructor(kind: TeamErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'TeamError'
    this.kind = kind
  }
}
