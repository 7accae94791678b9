/**
 * The scenes view's one seam. Scenes (emergent and declared, with strength, features and decay)
 * are a kernel feature that lands separately; until a store has them this returns
 * `{ available: false }` and the page says "this store has no scenes". When the scenes store
 * exists, this function is the only place that reads it for the browser.
 */
import type { BlockStore } from '../store/store.ts'

/** One scene as the page lists it. */
export interface SceneRow {
  key: string
  strength: number
  features: string[]
  decay: number
  notes: number
}

/** What the scenes view shows. */
export type ScenesView = { available: false } | { available: true, scenes: SceneRow[] }

/** The scenes of this store, or that it has none. */
export function scenesView(_store: BlockStore): ScenesView {
  return { available: false }
}
