import { sceneLineage } from './scene-key.ts'

/**
 * Every scene key of a store in memory, for the per-turn reads (docs/scenes.md, "Cost per turn"):
 * which scenes a turn's keys match (the key, the broader keys above it, the narrower keys below
 * it) and whether a scene can hold notes at all. Reading that from SQLite took two statements a
 * turn (≈ 0.15 ms); the scene table keeps this index beside its cache of emergent scenes, so it is
 * read again whenever that cache is (another connection wrote, this one rolled back).
 */
export class SceneKeyIndex {
  /** Key → scene id and whether notes may be attached to it (false: certainly none). */
  private readonly byKey = new Map<string, { id: number, refs: boolean }>()
  /** Every key, sorted (code-unit order), so the keys below a key are one contiguous run. */
  private readonly sorted: string[] = []

  /** An index of these rows (`refs`: the scene holds at least one ref). */
  constructor(rows: Iterable<{ id: number, key: string, refs: boolean }>) {
    for (const row of rows) this.byKey.set(row.key, { id: row.id, refs: row.refs })
    this.sorted.push(...this.byKey.keys())
    this.sorted.sort()
  }

  /** The id of the scene with exactly this key, or undefined. */
  idOf(key: string): number | undefined {
    return this.byKey.get(key)?.id
  }

  /** Records a scene that now exists (no refs yet unless `refs`). */
  add(id: number, key: string, refs = false): void {
    const known = this.byKey.get(key)
    if (known !== undefined) {
      known.id = id
      known.refs ||= refs
      return
    }
    this.byKey.set(key, { id, refs })
    this.sorted.splice(this.firstAtOrAfter(key), 0, key)
  }

  /** Records that a note was attached to the scene `key` (a no-op for a key not indexed). */
  markRefs(key: string): void {
    const known = this.byKey.get(key)
    if (known !== undefined) known.refs = true
  }

  /** Forgets the scene `id` (it is gone). */
  remove(id: number): void {
    for (const [key, entry] of this.byKey) {
      if (entry.id !== id) continue
      this.byKey.delete(key)
      this.sorted.splice(this.firstAtOrAfter(key), 1)
      return
    }
  }

  /**
   * The scenes that may hold notes for `keys`, as id → key: each key's lineage exactly (the key
   * and every broader key, in key order), then per key the narrower keys below it (`k/…`, in key
   * order) — the order of the SQL this replaces. Scenes that hold no ref are left out: they
   * would add nothing.
   */
  matching(keys: readonly string[]): Map<number, string> {
    const out = new Map<number, string>()
    const lineage = [...new Set(keys.flatMap(sceneLineage))].sort()
    for (const key of lineage) this.take(out, key)
    for (const key of new Set(keys)) {
      const prefix = `${key}/`
      for (let i = this.firstAtOrAfter(prefix); i < this.sorted.length && this.sorted[i]!.startsWith(prefix); i++) this.take(out, this.sorted[i]!)
    }
    return out
  }

  private take(out: Map<number, string>, key: string): void {
    const entry = this.byKey.get(key)
    if (entry !== undefined && entry.refs) out.set(entry.id, key)
  }

  /** The position of the first sorted key ≥ `key`. */
  private firstAtOrAfter(key: string): number {
    let [lo, hi] = [0, this.sorted.length]
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.sorted[mid]! < key) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}
