/**
 * The notes attached to a turn's scenes (`SceneTable.attached`: what the scene card and the
 * recall's scene notes read, docs/scenes.md), read along `scene_refs_rank` and remembered between
 * two writes of the file, since one turn's card and recall ask the same question.
 */
import type { SceneRef, SceneTableDeps } from './scene-rows.ts'

/** Distinct questions `attached` remembers between two writes (a turn asks one or two). */
const MEMO_ANSWERS = 16

/** Reads and remembers the attached notes of one store's scene table. */
export class AttachedNotes {
  private readonly deps: SceneTableDeps
  /** The scenes matching the keys, by id, from the scene table's cached key index (`data`: the data version just read). */
  private readonly matching: (keys: readonly string[], data?: number) => Map<number, string>
  /**
   * The answers of `attached` since the connection's last write: the card and the recall of one
   * turn ask the same question, and the answer cannot change while nothing was written
   * (`total_changes()` for this connection, `data_version` for the others).
   */
  private attachedMemo: { version: string, answers: Map<string, SceneRef[]> } | undefined

  constructor(deps: SceneTableDeps, matching: (keys: readonly string[], data?: number) => Map<number, string>) {
    this.deps = deps
    this.matching = matching
  }

  /**
   * Current notes attached to any of `keys`: a scene matches a key when it is the key, a broader
   * key above it (`chan:qq` for `chan:qq/group:group_1`), or a narrower one below it — compared as
   * text, never with `LIKE`, whose `_` wildcard made `peer:groupX1` match `peer:group_1` in
   * HologramAgent. Only notes in one of `scopes` (all when undefined) that were not replaced;
   * heaviest first, then the most recently attached; at most `limit`.
   */
  attached(keys: readonly string[], scopes: readonly string[] | undefined, limit: number): SceneRef[] {
    if (keys.length === 0 || limit <= 0) return []
    // Inside a transaction a write may still roll back without moving the version: no memo then.
    if (this.deps.inTransaction()) return this.readAttached(keys, scopes, limit)
    const { version, data } = this.writeVersion()
    if (this.attachedMemo?.version !== version) this.attachedMemo = { version, answers: new Map() }
    const question = JSON.stringify([keys, scopes ?? null, limit])
    let answer = this.attachedMemo.answers.get(question)
    if (answer === undefined) {
      answer = this.readAttached(keys, scopes, limit, data)
      if (this.attachedMemo.answers.size < MEMO_ANSWERS) this.attachedMemo.answers.set(question, answer)
    }
    return answer.map((r) => ({ ...r }))
  }

  /**
   * `attached` read from the file (`data`: its data version, when just read). The matching scenes
   * come from the cached key index (`SceneKeyIndex.matching`: the key, each broader key, the
   * narrower keys below it; scenes without refs left out). Each scene's notes are its first `limit`
   * current ones along `scene_refs_rank`; a note in several scenes keeps its heaviest ref. The
   * first `limit` of the union are among the first `limit` of each scene, so nothing else is read.
   * The scope test joins the few scopes to the note's memberships (one primary-key seek each)
   * rather than `IN (SELECT … json_each)`, which builds a temporary index on every run.
   */
  private readAttached(keys: readonly string[], scopes: readonly string[] | undefined, limit: number, data?: number): SceneRef[] {
    const scenes = this.matching(keys, data)
    if (scenes.size === 0) return []
    const scoped = scopes !== undefined
    const top = this.deps.stmt(scoped ? 'scene.topScoped' : 'scene.top', `SELECT r.block_id, r.weight, r.created_at, b.text
      FROM scene_refs r JOIN blocks b ON b.id = r.block_id
      WHERE r.scene_id = ?1 AND b.superseded_by IS NULL
        ${scoped ? 'AND EXISTS (SELECT 1 FROM json_each(?3) j JOIN memberships m ON m.block_rowid = b.rowid AND m.scope = j.value)' : ''}
      ORDER BY r.weight DESC, r.created_at DESC, r.block_id LIMIT ?2`)
    const scopeList = scoped ? [JSON.stringify(scopes)] : []
    const rows: Array<SceneRef & { at: number }> = []
    for (const [id, key] of scenes) {
      for (const r of top.all(id, limit, ...scopeList)) rows.push({ blockId: String(r.block_id), text: String(r.text), weight: Number(r.weight), at: Number(r.created_at), scene: key })
    }
    rows.sort((a, b) => b.weight - a.weight || b.at - a.at || (a.blockId < b.blockId ? -1 : a.blockId > b.blockId ? 1 : 0))
    const seen = new Set<string>()
    const out: SceneRef[] = []
    for (const { blockId, text, weight, scene } of rows) {
      if (seen.has(blockId)) continue
      seen.add(blockId)
      out.push({ blockId, text, weight, scene })
      if (out.length === limit) break
    }
    return out
  }

  /**
   * Moves with every write of this connection (`total_changes()`) and of any other (`data_version`,
   * returned too as `data` for the scene cache).
   */
  private writeVersion(): { version: string, data: number } {
    const row = this.deps.stmt('scene.writeVersion', 'SELECT total_changes() AS changes, (SELECT data_version FROM pragma_data_version) AS version').get()!
    return { version: `${String(row.changes)}:${String(row.version)}`, data: Number(row.version) }
  }
}
