/**
 * The rows of the scene tables as the store hands them out (docs/scenes.md): scenes, their
 * features, the notes attached to them, what a decay pass did, the counts; and what the scene
 * table needs of the store that owns the connection. Shared by the scene table
 * (`scenes.ts`), the attached-notes reader (`scene-attached.ts`) and the kernel's scene mechanism.
 */
import type { StatementSync } from 'node:sqlite'

/** What the scene table needs from the store that owns the connection. */
export interface SceneTableDeps {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  now(): number
  /** Changes whenever another connection wrote the file (`PRAGMA data_version`). */
  dataVersion(): number
  /** Whether a transaction is open on the connection (its writes may still roll back). */
  inTransaction(): boolean
  /** How many transactions (or savepoints) of this connection rolled back: what the caches saw of them is undone. */
  rollbacks(): number
}

/** Where a scene came from: declared (config, commit, service) or emergent (seen twice). */
export type SceneOrigin = 'declared' | 'emergent'

/** A weighted feature of an emergent scene (`kind:value`). */
export interface SceneFeature {
  key: string
  weight: number
}

/** One scene row. Times are ms since the epoch. */
export interface SceneRow {
  id: number
  key: string
  origin: SceneOrigin
  strength: number
  createdAt: number
  updatedAt: number
}

/** An emergent scene with its features (the similarity space). */
export interface EmergentScene extends SceneRow {
  features: SceneFeature[]
}

/** A note attached to a scene. */
export interface SceneRef {
  blockId: string
  /** The note's text. */
  text: string
  /** The scene key it was found through (the heaviest ref's). */
  scene: string
  weight: number
}

/** What one decay pass did. */
export interface DecayResult {
  halved: number
  removed: number
}

/** Counts for `stats()`. */
export interface SceneCounts {
  scenes: number
  declared: number
  emergent: number
  refs: number
  evidence: number
}

/** The columns every scene row read takes, in the order `toRow` reads them. */
export const ROW = 'id, key, origin, strength, created_at, updated_at'

/** A `scenes` row as a `SceneRow`. */
export function toRow(r: Record<string, unknown>): SceneRow {
  return {
    id: Number(r.id), key: String(r.key), origin: String(r.origin) as SceneOrigin, strength: Number(r.strength),
    createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
  }
}
