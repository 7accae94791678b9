/**
 * The data step of the migration that introduced the scene tables: every stored `scene` value
 * normalised (`scene-key.ts`), its scene declared, and a ref for each of its notes. Runs once,
 * inside the migration's transaction (`schema.ts`).
 */
import type { DatabaseSync } from 'node:sqlite'
import { normalizeSceneKey } from './scene-key.ts'

/** The migration's data step: normalise every stored `scene` value and declare its scene, with a ref per note. */
export function migrateSceneColumn(db: DatabaseSync, now: number = Date.now()): void {
  const rows = db.prepare("SELECT DISTINCT scene FROM blocks WHERE scene <> ''").all() as Array<{ scene: string }>
  const update = db.prepare('UPDATE blocks SET scene = ? WHERE scene = ?')
  const scene = db.prepare(`INSERT INTO scenes (key, origin, strength, created_at, updated_at)
    SELECT ?1, 'declared', 1, coalesce(min(created_at), ?2), coalesce(max(updated_at), ?2) FROM blocks WHERE scene = ?1
    ON CONFLICT(key) DO NOTHING`)
  const refs = db.prepare(`INSERT INTO scene_refs (scene_id, block_id, weight, decayed_at, created_at)
    SELECT s.id, b.id, 1, ?2, b.created_at FROM blocks b JOIN scenes s ON s.key = ?1 WHERE b.scene = ?1
    ON CONFLICT DO NOTHING`)
  const keys = new Set<string>()
  for (const { scene: raw } of rows) {
    const key = normalizeSceneKey(String(raw))
    if (key !== raw) update.run(key, raw)
    if (key !== '') keys.add(key)
  }
  for (const key of keys) {
    scene.run(key, now)
    refs.run(key, now)
  }
}
