import { AttachedNotes } from './scene-attached.ts'
import { SceneKeyIndex } from './scene-index.ts'
import { normalizeSceneKey } from './scene-key.ts'
import { ROW, toRow, type DecayResult, type EmergentScene, type SceneCounts, type SceneFeature, type SceneRef, type SceneRow, type SceneTableDeps } from './scene-rows.ts'

/**
 * Scene storage (docs/scenes.md): the scenes (declared or emergent), the features of emergent
 * scenes, the evidence of fingerprints not yet a scene, and the refs that attach notes to scenes
 * with a weight that decays. The mechanism (fingerprints, similarity, when to create) lives in
 * `lib/kernel/scenes/`; this module only reads and writes rows, in the caller's transaction.
 * The row types are in `scene-rows.ts`, the attached-notes read in `scene-attached.ts`, the
 * migration's data step in `scene-migration.ts`.
 */

/** The scene tables of one store. */
export class SceneTable {
  private readonly deps: SceneTableDeps
  /**
   * The emergent scenes (by id too) and every scene key (read on every human turn), with the data
   * version and rollback count they were read at: another connection's write or a rollback of
   * this one (which may undo a scene the cache was told of) reads them again.
   */
  private cache: { version: number, rollbacks: number, scenes: EmergentScene[], byId: Map<number, EmergentScene>, keys: SceneKeyIndex } | undefined
  /**
   * Reinforcements not written yet, by scene id: a recurring turn only counts (+1 strength, max
   * feature weights, updated_at), and a write transaction per human turn would cost a sync of the
   * file on the turn's path. They are applied to the cache at once and written by `flush` (the
   * scene API schedules it a moment later; reads, decay and close flush first).
   */
  private readonly pending = new Map<number, { bump: number, updatedAt: number, features: Map<string, number> }>()
  /** Turns in declared scenes not stored yet, by key: created by `flush` (see `sightLater`). */
  private readonly pendingDeclared = new Map<string, { sightings: number, at: number }>()
  /** Sightings of fingerprint labels not written yet, by label (see `recordEvidence`). */
  private readonly pendingEvidence = new Map<string, { count: number, at: number }>()
  /** Told of every change to the cached emergent scenes (`watchEmergent`). */
  private readonly watchers: Array<(id: number | undefined) => void> = []
  /** The attached-notes read and its memo (`scene-attached.ts`). */
  private readonly notes: AttachedNotes

  constructor(deps: SceneTableDeps) {
    this.deps = deps
    this.notes = new AttachedNotes(deps, (keys, data) => this.fresh(data).keys.matching(keys))
  }

  /** Runs `fn` in one transaction of the store (joined when one is open). */
  transaction<T>(fn: () => T): T {
    return this.deps.transaction(fn)
  }

  /** The scene with this (normalised) key, or undefined (pending reinforcements written first). */
  byKey(key: string): SceneRow | undefined {
    this.flushForRead()
    return this.rowByKey(key)
  }

  private rowByKey(key: string): SceneRow | undefined {
    const row = this.deps.stmt('scene.byKey', `SELECT ${ROW} FROM scenes WHERE key = ?`).get(key)
    return row === undefined ? undefined : toRow(row)
  }

  /**
   * Declares `key`: created with strength 1, origin `declared`, if missing; an existing scene gains
   * `bump` strength (0 for a commit's tag or a config entry, 1 for a turn that is in it). HologramAgent
   * inserted with 1 and then added 1, counting the first sighting twice.
   */
  declare(key: string, bump: number, now: number = this.deps.now()): { row: SceneRow, created: boolean } {
    this.flush()
    return this.declareRow(key, 1, bump, now)
  }

  /**
   * Counts a human turn in the declared scene `key` without writing: an existing scene as
   * `reinforceLater` (+1), a key not stored yet is created by `flush` with one strength per
   * sighting — so a turn in a new situation writes nothing on its path either. `checked`: the
   * caller has just read `emergent()`, so the cache need not be checked against the file again.
   */
  sightLater(key: string, now: number = this.deps.now(), checked = false): void {
    const id = (checked && this.cache !== undefined ? this.cache : this.fresh()).keys.idOf(key)
    if (id !== undefined) {
      this.reinforceIdLater(id, [], 1, now)
      return
    }
    const entry = this.pendingDeclared.get(key)
    if (entry === undefined) this.pendingDeclared.set(key, { sightings: 1, at: now })
    else {
      entry.sightings++
      entry.at = Math.max(entry.at, now)
    }
  }

  /** `declare` in the open transaction: created with `strength`, else + `bump`. */
  private declareRow(key: string, strength: number, bump: number, now: number): { row: SceneRow, created: boolean } {
    const inserted = this.deps.stmt('scene.declare', `INSERT INTO scenes (key, origin, strength, created_at, updated_at)
      VALUES (?, 'declared', ?, ?, ?) ON CONFLICT(key) DO NOTHING`).run(key, strength, now, now)
    const created = Number(inserted.changes) === 1
    if (!created) this.deps.stmt('scene.bump', 'UPDATE scenes SET strength = strength + ?, updated_at = max(updated_at, ?) WHERE key = ?').run(bump, now, key)
    const row = this.rowByKey(key)!
    if (row.origin === 'emergent') this.refreshCached(row.id) // a declared scene is not in the cache
    else if (created) this.cache?.keys.add(row.id, key)
    return { row, created }
  }

  /** Every emergent scene with its features, from a cache that another connection's write invalidates. */
  emergent(): EmergentScene[] {
    return this.fresh().scenes
  }

  /** The cache, read again first if another connection wrote (`version`: its data version, when just read) or this one rolled back. */
  private fresh(version: number = this.deps.dataVersion()): NonNullable<SceneTable['cache']> {
    const rollbacks = this.deps.rollbacks()
    if (this.cache !== undefined && this.cache.version === version && this.cache.rollbacks === rollbacks) return this.cache
    const all = this.deps.stmt('scene.keys', `SELECT ${ROW}, EXISTS (SELECT 1 FROM scene_refs r WHERE r.scene_id = scenes.id) AS refs
      FROM scenes ORDER BY id`).all()
    const byId = new Map<number, EmergentScene>()
    for (const r of all) if (r.origin === 'emergent') byId.set(Number(r.id), { ...toRow(r), features: [] })
    for (const f of this.deps.stmt('scene.features', `SELECT f.scene_id, f.feature, f.weight FROM scene_features f
      JOIN scenes s ON s.id = f.scene_id WHERE s.origin = 'emergent' ORDER BY f.weight DESC, f.feature`).all()) {
      byId.get(Number(f.scene_id))?.features.push({ key: String(f.feature), weight: Number(f.weight) })
    }
    const keys = new SceneKeyIndex(all.map((r) => ({ id: Number(r.id), key: String(r.key), refs: Number(r.refs) === 1 })))
    this.cache = { version, rollbacks, scenes: [...byId.values()], byId, keys }
    this.changed(undefined)
    return this.cache
  }

  /** The cached emergent scene `id` (undefined when it is not one, or the cache is not read). */
  emergentScene(id: number): EmergentScene | undefined {
    return this.cache?.byId.get(id)
  }

  /**
   * Calls `watch(id)` whenever the cached emergent scene `id` appears, changes its features or
   * goes, and `watch(undefined)` when the whole cache is read again or dropped — so an index over
   * the emergent scenes (the kernel's similarity index) stays current without rereading them.
   * A strength change alone is not reported (the scene object itself carries it).
   */
  watchEmergent(watch: (id: number | undefined) => void): void {
    this.watchers.push(watch)
  }

  private changed(id: number | undefined): void {
    for (const watch of this.watchers) watch(id)
  }

  /**
   * Counts one more turn in a scene without writing yet (see `pending`): `bump` strength, these
   * features (max weight), updated now. Returns false when no such scene exists (nothing queued).
   */
  reinforceLater(key: string, features: readonly SceneFeature[], bump: number, now: number = this.deps.now()): boolean {
    const id = this.fresh().keys.idOf(key)
    if (id === undefined) return false
    this.reinforceIdLater(id, features, bump, now)
    return true
  }

  /** `reinforceLater` of a scene the caller has just read (`emergent`), without looking its key up again. */
  reinforceSceneLater(scene: SceneRow, features: readonly SceneFeature[], bump: number, now: number = this.deps.now()): void {
    this.reinforceIdLater(scene.id, features, bump, now)
  }

  private reinforceIdLater(id: number, features: readonly SceneFeature[], bump: number, now: number): void {
    let entry = this.pending.get(id)
    if (entry === undefined) this.pending.set(id, entry = { bump: 0, updatedAt: now, features: new Map() })
    entry.bump += bump
    entry.updatedAt = Math.max(entry.updatedAt, now)
    for (const f of features) entry.features.set(f.key, Math.max(entry.features.get(f.key) ?? 0, f.weight))
    const cached = this.cache?.byId.get(id)
    if (cached !== undefined) {
      cached.strength += bump
      cached.updatedAt = Math.max(cached.updatedAt, now)
      // A new array, never an edit in place: callers may memoise per feature array.
      const merged = new Map(cached.features.map((c) => [c.key, c.weight]))
      for (const f of features) merged.set(f.key, Math.max(merged.get(f.key) ?? 0, f.weight))
      if (merged.size !== cached.features.length || features.some((f) => f.weight > (cached.features.find((c) => c.key === f.key)?.weight ?? 0))) {
        cached.features = [...merged].map(([key, weight]) => ({ key, weight })).sort((a, b) => b.weight - a.weight || (a.key < b.key ? -1 : 1))
        this.changed(cached.id)
      }
    }
  }

  /** Whether reinforcements wait to be written. */
  get hasPending(): boolean {
    return this.pending.size > 0 || this.pendingDeclared.size > 0 || this.pendingEvidence.size > 0
  }

  /** Writes the pending sightings, evidence and reinforcements in one transaction; they stay queued if it fails. */
  flush(): void {
    if (!this.hasPending) return
    const [entries, declared, evidence] = [[...this.pending], [...this.pendingDeclared], [...this.pendingEvidence]]
    this.deps.transaction(() => {
      for (const [key, { sightings, at }] of declared) this.declareRow(key, sightings, sightings, at)
      for (const [label, { count, at }] of evidence) {
        this.deps.stmt('scene.addEvidence', `INSERT INTO situation_evidence (label, count, updated_at) VALUES (?, ?, ?)
          ON CONFLICT(label) DO UPDATE SET count = count + excluded.count, updated_at = max(updated_at, excluded.updated_at)`).run(label, count, at)
      }
      for (const [id, entry] of entries) {
        this.upsertFeatures(id, [...entry.features].map(([key, weight]) => ({ key, weight })))
        this.deps.stmt('scene.touch', 'UPDATE scenes SET strength = strength + ?, updated_at = max(updated_at, ?) WHERE id = ?').run(entry.bump, entry.updatedAt, id)
      }
    })
    for (const [id] of entries) this.pending.delete(id)
    for (const [key] of declared) this.pendingDeclared.delete(key)
    for (const [label] of evidence) this.pendingEvidence.delete(label)
  }

  /**
   * `flush` before a read, which must not fail with it: on a full disk the counts stay queued
   * (written by a later flush) and the read shows what is stored — a late count, never a failed read.
   */
  private flushForRead(): void {
    try {
      this.flush()
    } catch {
      // Still queued; see above.
    }
  }

  /** Adds features to a scene (weight = max of old and new) and, with `bump`, strength; touches it. */
  reinforce(id: number, features: readonly SceneFeature[], bump: number, now: number = this.deps.now()): void {
    this.flush()
    this.deps.transaction(() => {
      this.upsertFeatures(id, features)
      this.deps.stmt('scene.touch', 'UPDATE scenes SET strength = strength + ?, updated_at = max(updated_at, ?) WHERE id = ?').run(bump, now, id)
    })
    this.refreshCached(id)
  }

  /**
   * Counts one more sighting of a fingerprint label not yet a scene, written by `flush` (the
   * creation at the second sighting writes at once); returns the count, stored and queued.
   */
  recordEvidence(label: string, now: number = this.deps.now()): number {
    const entry = this.pendingEvidence.get(label)
    if (entry === undefined) this.pendingEvidence.set(label, { count: 1, at: now })
    else {
      entry.count++
      entry.at = Math.max(entry.at, now)
    }
    return this.evidence(label)
  }

  /** The count of one label not yet a scene, stored and queued (0 when none). */
  evidence(label: string): number {
    const row = this.deps.stmt('scene.evidenceOf', 'SELECT count FROM situation_evidence WHERE label = ?').get(label)
    return (row === undefined ? 0 : Number(row.count)) + (this.pendingEvidence.get(label)?.count ?? 0)
  }

  /**
   * Creates an emergent scene named `base` (`.2`, `.3` … on collision, never `_N`, which
   * normalisation could turn into another twin) with these features, and deletes the evidence of
   * its own label only (HologramAgent's R5 wiped every bucket). Returns its key.
   */
  createEmergent(base: string, features: readonly SceneFeature[], label: string, now: number = this.deps.now()): string {
    this.flush()
    const key = this.deps.transaction(() => {
      let candidate = base
      for (let i = 2; this.rowByKey(candidate) !== undefined; i++) candidate = `${base}.${i}`
      const inserted = this.deps.stmt('scene.create', `INSERT INTO scenes (key, origin, strength, created_at, updated_at)
        VALUES (?, 'emergent', 1, ?, ?)`).run(candidate, now, now)
      this.upsertFeatures(Number(inserted.lastInsertRowid), features)
      this.deps.stmt('scene.clearEvidence', 'DELETE FROM situation_evidence WHERE label = ?').run(label)
      return candidate
    })
    this.refreshCached(this.rowByKey(key)!.id)
    return key
  }

  /**
   * Attaches a note to a scene (declared when it does not exist yet), inside the caller's
   * transaction: weight = max(old, new), so a weaker tag never pushes a note down; `decayed_at` = now.
   */
  tag(key: string, blockId: string, weight: number, now: number = this.deps.now()): void {
    if (this.rowByKey(key) === undefined) this.declare(key, 0, now)
    this.deps.stmt('scene.tag', `INSERT INTO scene_refs (scene_id, block_id, weight, decayed_at, created_at)
      SELECT id, ?2, ?3, ?4, ?4 FROM scenes WHERE key = ?1
      ON CONFLICT(scene_id, block_id) DO UPDATE SET weight = max(weight, excluded.weight), decayed_at = excluded.decayed_at`).run(key, blockId, weight, now)
    this.deps.stmt('scene.touchKey', 'UPDATE scenes SET updated_at = ? WHERE key = ?').run(now, key)
    this.cache?.keys.markRefs(key)
  }

  /**
   * Current notes attached to any of `keys`: a scene matches a key when it is the key, a broader
   * key above it (`chan:qq` for `chan:qq/group:group_1`), or a narrower one below it — compared as
   * text, never with `LIKE`, whose `_` wildcard made `peer:groupX1` match `peer:group_1` in
   * HologramAgent. Only notes in one of `scopes` (all when undefined) that were not replaced;
   * heaviest first, then the most recently attached; at most `limit`.
   */
  attached(keys: readonly string[], scopes: readonly string[] | undefined, limit: number): SceneRef[] {
    return this.notes.attached(keys, scopes, limit)
  }

  /**
   * Decay (HologramAgent `DecaySceneRefs`, with its two fixes): a ref halves when it has not decayed
   * for `halfLifeMs` and its scene was not updated within it — so each ref halves at most once
   * per period however often the heartbeat runs — and refs below `floor` are deleted, as are refs
   * of notes that were replaced (stale). Times are the store's clock (ms), never local time.
   */
  decay(halfLifeMs: number, floor: number, now: number = this.deps.now()): DecayResult {
    if (!(halfLifeMs > 0)) return { halved: 0, removed: 0 }
    this.flush()
    const result = this.deps.transaction(() => {
      const cutoff = now - halfLifeMs
      const halved = this.deps.stmt('scene.decay', `UPDATE scene_refs SET weight = weight * 0.5, decayed_at = ?1
        WHERE decayed_at <= ?2 AND scene_id IN (SELECT id FROM scenes WHERE updated_at <= ?2)`).run(now, cutoff)
      const low = this.deps.stmt('scene.floor', 'DELETE FROM scene_refs WHERE weight < ?').run(floor)
      const stale = this.deps.stmt('scene.stale', `DELETE FROM scene_refs WHERE block_id IN
        (SELECT id FROM blocks WHERE superseded_by IS NOT NULL)`).run()
      return { halved: Number(halved.changes), removed: Number(low.changes) + Number(stale.changes) }
    })
    if (result.halved + result.removed > 0) this.invalidate()
    return result
  }

  /** Every scene, strongest first (ties: most recently updated, then key), with its ref count. */
  list(): Array<SceneRow & { refs: number }> {
    this.flushForRead()
    return this.deps.stmt('scene.list', `SELECT ${ROW}, (SELECT count(*) FROM scene_refs r WHERE r.scene_id = scenes.id) AS refs
      FROM scenes ORDER BY strength DESC, updated_at DESC, key`).all().map((r) => ({ ...toRow(r), refs: Number(r.refs) }))
  }

  /** The stored features of one scene (emergent scenes have them; declared ones state theirs in the key). */
  features(id: number): SceneFeature[] {
    this.flushForRead()
    return this.deps.stmt('scene.featuresOf', 'SELECT feature, weight FROM scene_features WHERE scene_id = ? ORDER BY weight DESC, feature')
      .all(id).map((r) => ({ key: String(r.feature), weight: Number(r.weight) }))
  }

  /** The refs of one scene exactly (no prefix), heaviest first. */
  refs(id: number, limit: number): Array<{ blockId: string, weight: number, decayedAt: number }> {
    return this.deps.stmt('scene.refsOf', `SELECT block_id, weight, decayed_at FROM scene_refs WHERE scene_id = ?
      ORDER BY weight DESC, created_at DESC, block_id LIMIT ?`).all(id, limit)
      .map((r) => ({ blockId: String(r.block_id), weight: Number(r.weight), decayedAt: Number(r.decayed_at) }))
  }

  /** How many notes one scene holds. */
  refCount(id: number): number {
    return Number(this.deps.stmt('scene.refCount', 'SELECT count(*) AS n FROM scene_refs WHERE scene_id = ?').get(id)!.n)
  }

  /** Counts for `stats()`. */
  counts(): SceneCounts {
    this.flushForRead()
    const row = this.deps.stmt('scene.counts', `SELECT
      (SELECT count(*) FROM scenes WHERE origin = 'declared') AS declared,
      (SELECT count(*) FROM scenes WHERE origin = 'emergent') AS emergent,
      (SELECT count(*) FROM scene_refs) AS refs,
      (SELECT count(*) FROM situation_evidence) AS evidence`).get()!
    const [declared, emergent] = [Number(row.declared), Number(row.emergent)]
    return { scenes: declared + emergent, declared, emergent, refs: Number(row.refs), evidence: Number(row.evidence) }
  }

  /**
   * HologramAgent's R3: scenes whose keys normalise to the same key (rows written by an older
   * release, or by hand) merge into the oldest: strength summed, features and refs unioned (max
   * weight). Only exact equality of the normal form merges; idempotent. Returns how many merged.
   */
  dedupe(): number {
    this.flush()
    const rows = this.deps.stmt('scene.all', `SELECT ${ROW} FROM scenes ORDER BY id`).all().map(toRow)
    const survivors = new Map<string, SceneRow>()
    let merged = 0
    let renamed = 0
    this.deps.transaction(() => {
      for (const row of rows) {
        const key = normalizeSceneKey(row.key)
        const survivor = survivors.get(key)
        if (survivor === undefined) {
          survivors.set(key, row)
          if (key !== row.key && key !== '' && this.rowByKey(key) === undefined) renamed += Number(this.deps.stmt('scene.rename', 'UPDATE scenes SET key = ? WHERE id = ?').run(key, row.id).changes)
          continue
        }
        this.deps.stmt('scene.mergeRefs', `INSERT INTO scene_refs (scene_id, block_id, weight, decayed_at, created_at)
          SELECT ?1, block_id, weight, decayed_at, created_at FROM scene_refs WHERE scene_id = ?2
          ON CONFLICT(scene_id, block_id) DO UPDATE SET weight = max(weight, excluded.weight)`).run(survivor.id, row.id)
        this.upsertFeatures(survivor.id, this.features(row.id))
        this.deps.stmt('scene.mergeStrength', 'UPDATE scenes SET strength = strength + ?, updated_at = max(updated_at, ?) WHERE id = ?').run(row.strength, row.updatedAt, survivor.id)
        this.deps.stmt('scene.delete', 'DELETE FROM scenes WHERE id = ?').run(row.id)
        merged++
      }
    })
    if (merged + renamed > 0) this.invalidate()
    return merged
  }

  private upsertFeatures(id: number, features: readonly SceneFeature[]): void {
    const upsert = this.deps.stmt('scene.feature', `INSERT INTO scene_features (scene_id, feature, weight) VALUES (?, ?, ?)
      ON CONFLICT(scene_id, feature) DO UPDATE SET weight = max(weight, excluded.weight)`)
    for (const f of features) upsert.run(id, f.key, f.weight)
  }

  private invalidate(): void {
    this.cache = undefined
    this.changed(undefined)
  }

  /**
   * Brings one emergent scene of the cache up to date after this connection wrote it (its own
   * writes do not move `data_version`). Rebuilding the whole cache instead cost every new
   * situation a read of every emergent scene and its features (≈ 30 ms at 1,000 scenes).
   */
  private refreshCached(id: number): void {
    if (this.cache === undefined) return
    const found = this.deps.stmt('scene.byId', `SELECT ${ROW} FROM scenes WHERE id = ?`).get(id)
    const old = this.cache.byId.get(id)
    const at = old === undefined ? -1 : this.cache.scenes.indexOf(old)
    if (found === undefined) this.cache.keys.remove(id)
    else this.cache.keys.add(id, String(found.key))
    if (found === undefined || String(found.origin) !== 'emergent') {
      if (at >= 0) this.cache.scenes.splice(at, 1)
      this.cache.byId.delete(id)
      this.changed(id)
      return
    }
    const features = this.deps.stmt('scene.featuresOf', 'SELECT feature, weight FROM scene_features WHERE scene_id = ? ORDER BY weight DESC, feature')
      .all(id).map((f) => ({ key: String(f.feature), weight: Number(f.weight) }))
    const scene: EmergentScene = { ...toRow(found), features }
    if (at >= 0) this.cache.scenes[at] = scene
    else this.cache.scenes.push(scene) // ids grow, and the cache is in id order
    this.cache.byId.set(id, scene)
    this.changed(id)
  }
}
