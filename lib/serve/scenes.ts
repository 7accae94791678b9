/**
 * The scenes view's one seam: the store's scenes (emergent and declared) with strength, features
 * and attached notes, read through the same read-only scene API as `stablemem scenes`. A store
 * with no scene yet (or one written before scenes existed, once migrated) shows "no scenes".
 */
import { SceneApi } from '../kernel/scenes/api.ts'
import type { BlockStore } from '../store/store.ts'

/** One scene as the page lists it. */
export interface SceneRow {
  key: string
  origin: 'declared' | 'emergent'
  strength: number
  features: string[]
  notes: number
  updatedAt: number
}

/** What the scenes view shows. */
export type ScenesView = { available: false } | { available: true, scenes: SceneRow[] }

/** The scenes of this store, strongest first, or that it has none. */
export function scenesView(store: BlockStore): ScenesView {
  // Only the read side of the scene API; the turn settings matter to turns, not to reading.
  const api = new SceneApi((fn) => fn(store), { channel: '', timeZone: '', halfLifeDays: 0, card: 'off', scopes: () => undefined })
  const scenes = api.list()
  if (scenes.length === 0) return { available: false }
  return {
    available: true,
    scenes: scenes.map((s) => ({
      key: s.key, origin: s.origin, strength: s.strength, notes: s.refs, updatedAt: s.updatedAt,
      features: s.features.map((f) => `${f.key} ${f.weight}`),
    })),
  }
}
