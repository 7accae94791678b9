/**
 * The emergent scenes a turn's fingerprint can be similar to, found without comparing it with
 * every scene of the store (docs/scenes.md, "Cost per turn"). A store of 1,000 situations would
 * otherwise score 1,000 fingerprints per human turn, nearly all of another group or partner.
 *
 * The index is exact: a scene it leaves out cannot reach `RECALL_THRESHOLD` (nor `JOIN_THRESHOLD`,
 * which is higher) and cannot join by identity, so `compare` over the candidates gives what
 * `compare` over every scene gives.
 * - A scene that shares no feature scores 0. So the candidates share at least one feature, except
 *   the fingerprint's lightest non-identity features (`part`, then light topics) while their
 *   weight w(L) stays under RECALL_THRESHOLD × the fingerprint's total T: a scene that shares only
 *   those scores at most w(L) / T (the union is never smaller than T), below the threshold.
 * - Per identity dimension (partner, channel), a scene that names values of it and none of the
 *   fingerprint's scores 0 (`score`'s conflict rule). So when the fingerprint names a partner, the
 *   candidates are the scenes of that partner plus the scenes naming no partner at all that share
 *   a feature — the dimension (partner or channel) with the fewest candidates is used.
 */
import type { EmergentScene } from '../../store/scene-rows.ts'
import type { SceneTable } from '../../store/scenes.ts'
import { IDENTITY_DIMENSIONS, IDENTITY_KINDS, kindOf, RECALL_THRESHOLD, type Prepared } from './situation.ts'

type Postings = Map<string, Set<number>>

function add(postings: Postings, key: string, id: number): void {
  let ids = postings.get(key)
  if (ids === undefined) postings.set(key, ids = new Set())
  ids.add(id)
}

function remove(postings: Postings, key: string, id: number): void {
  const ids = postings.get(key)
  if (ids === undefined) return
  ids.delete(id)
  if (ids.size === 0) postings.delete(key)
}

/** Feature postings of one store's emergent scenes, kept current through `SceneTable.watchEmergent`. */
class SimilarityIndex {
  private readonly table: SceneTable
  /** Feature key → scenes that have it. */
  private readonly all: Postings = new Map()
  /** Per identity dimension: feature key → scenes that have it and name no value of the dimension. */
  private readonly free: Postings[] = IDENTITY_DIMENSIONS.map(() => new Map())
  /** What each scene was indexed under: its keys and, per dimension, whether it names a value. */
  private readonly indexed = new Map<number, { keys: string[], names: boolean[] }>()
  private stale = true
  private readonly dirty = new Set<number>()

  constructor(table: SceneTable) {
    this.table = table
    table.watchEmergent((id) => {
      if (id === undefined) this.stale = true
      else this.dirty.add(id)
    })
  }

  /** The emergent scenes that may be similar to `sig` (see the module comment). */
  candidates(sig: Prepared): EmergentScene[] {
    const scenes = this.table.emergent()
    this.refresh(scenes)
    const keys = this.searchKeys(sig)
    let best: Set<number> | undefined
    for (const [d, values] of sig.dims.entries()) {
      if (values.size === 0) continue
      const ids = new Set<number>()
      for (const value of values) for (const id of this.all.get(value) ?? []) ids.add(id)
      for (const key of keys) {
        if (values.has(key)) continue
        for (const id of this.free[d]!.get(key) ?? []) ids.add(id)
      }
      if (best === undefined || ids.size < best.size) best = ids
    }
    if (best === undefined) {
      best = new Set()
      for (const key of keys) for (const id of this.all.get(key) ?? []) best.add(id)
    }
    const out: EmergentScene[] = []
    for (const id of best) {
      const scene = this.table.emergentScene(id)
      if (scene !== undefined) out.push(scene)
    }
    return out
  }

  /** The fingerprint's keys a candidate must share one of: all but the lightest non-identity ones. */
  private searchKeys(sig: Prepared): string[] {
    const light = [...sig.weights].filter(([key]) => !IDENTITY_KINDS.includes(kindOf(key))).sort((a, b) => a[1] - b[1])
    const skipped = new Set<string>()
    let weight = 0
    for (const [key, w] of light) {
      if ((weight + w) / sig.total >= RECALL_THRESHOLD) break
      weight += w
      skipped.add(key)
    }
    return [...sig.weights.keys()].filter((key) => !skipped.has(key))
  }

  private refresh(scenes: readonly EmergentScene[]): void {
    if (this.stale) {
      this.all.clear()
      for (const postings of this.free) postings.clear()
      this.indexed.clear()
      this.dirty.clear()
      this.stale = false
      for (const scene of scenes) this.insert(scene)
      return
    }
    for (const id of this.dirty) {
      this.drop(id)
      const scene = this.table.emergentScene(id)
      if (scene !== undefined) this.insert(scene)
    }
    this.dirty.clear()
  }

  private insert(scene: EmergentScene): void {
    const keys = [...new Set(scene.features.map((f) => f.key))]
    const names = IDENTITY_DIMENSIONS.map((kinds) => keys.some((key) => kinds.includes(kindOf(key))))
    this.indexed.set(scene.id, { keys, names })
    for (const key of keys) {
      add(this.all, key, scene.id)
      for (const [d, named] of names.entries()) if (!named) add(this.free[d]!, key, scene.id)
    }
  }

  private drop(id: number): void {
    const entry = this.indexed.get(id)
    if (entry === undefined) return
    this.indexed.delete(id)
    for (const key of entry.keys) {
      remove(this.all, key, id)
      for (const [d, named] of entry.names.entries()) if (!named) remove(this.free[d]!, key, id)
    }
  }
}

const indexes = new WeakMap<SceneTable, SimilarityIndex>()

/** The emergent scenes of `table` that may be similar to `sig`: every one that can be, fewer than all. */
export function similarCandidates(table: SceneTable, sig: Prepared): EmergentScene[] {
  let index = indexes.get(table)
  if (index === undefined) indexes.set(table, index = new SimilarityIndex(table))
  return index.candidates(sig)
}
