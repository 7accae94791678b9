import type { PendingScrubs } from './scrub.ts'

/** What a caller hands to `commit`: the text and optional provenance. */
export interface CommitInput {
  /** The note itself. Stored byte-identical after NFC normalisation and trimming. */
  text: string
  /** Free-form provenance tag (`user`, `tool`, `ops`, a file name …). */
  source?: string
  /** Scene key the block belongs to (HologramAgent scenes; later releases recall by it). */
  scene?: string
  /** Semantic type annotation (Person, Concept …). */
  semanticType?: string
  /**
   * Id of an existing block this note replaces (e.g. a port that changed). The old block stays
   * stored and reachable by id but no longer appears in recall; a `supersedes` edge records it.
   */
  supersedes?: string
  /**
   * Scope key the note is saved in (`global`, `workspace:<dir>`, `preset:<id>`; see
   * `lib/store/scope-key.ts`); default `global`. Saving an existing note in another scope adds a
   * membership: the note is one block in both scopes.
   */
  scope?: string
}

/** The result of one commit: the block's content address and whether this call created it. */
export interface CommitResult {
  id: string
  created: boolean
  /**
   * Set when this commit said again the text of a note that had been replaced: the note is current
   * again, and the note that had replaced it (this id) is now replaced by it.
   */
  restored?: string
  /** Kinds of credentials masked before storing (config `secrets: 'redact'`); absent when none. */
  redacted?: string[]
  /**
   * A current note this one nearly duplicates (same text after normalising punctuation, spacing,
   * full-width forms and case; see `lib/text/near-key.ts`); absent when none. With the `skip`
   * policy nothing was stored and `id` is this existing note.
   */
  duplicateOf?: string
}

/** One stored block with all its metadata. Times are milliseconds since the epoch. */
export interface Block {
  id: string
  text: string
  source: string
  scene: string
  semanticType: string
  createdAt: number
  updatedAt: number
  accessCount: number
  lastAccessAt: number | null
  /** Id of the block that replaced this one, or null while it is current. */
  supersededBy: string | null
}

/** A directed edge between two nodes, unique per (source, target, type). */
export interface EdgeInput {
  sourceKind: string
  sourceId: string
  targetKind: string
  targetId: string
  type: string
}

/** A stored edge. */
export interface Edge extends EdgeInput {
  createdAt: number
}

/** A candidate row from the full-text index, with FTS5's bm25 (lower is better). */
export interface FtsCandidate {
  rowid: number
  bm25: number
}

/** Counts and facts about one store file, for `stats()`, the CLI and the prompt context line. */
export interface StoreStats {
  blocks: number
  edges: number
  schemaVersion: number
  path: string
  fileBytes: number
  lastWriteAt: number | null
  /** Segments of the full-text index; a query seeks each, so upkeep merges them (docs/recall.md, "Index upkeep"). */
  ftsSegments: number
  /** Large forgets whose bytes are not scrubbed yet (lib/store/scrub.ts). */
  pendingScrubs: PendingScrubs
}
