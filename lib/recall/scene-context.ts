/**
 * Scene context: a note is read in the company of the notes saved with it. A note's scene (the
 * `scene` key given at commit) often carries the subject that the note itself leaves implicit
 * ("本线起讫点…" under the scene of "上海轨道交通16号线"; a reply in a conversation session about
 * Caroline's adoption plans). When other notes of the same scene match the query too, the note is
 * more likely about what is asked.
 *
 * Each non-pinned candidate's score becomes (own + SCENE_WEIGHT × context) / (1 + SCENE_WEIGHT),
 * where context is the mean of the two best lexical scores among the candidates of its scene
 * (itself included; a missing second counts 0). A note without a scene is a scene of its own,
 * so notes with and without scenes are treated alike.
 */

/** Weight of the scene context against the note's own score (1 = equal). */
export const SCENE_WEIGHT = 1

/** A scored candidate as scene context sees it. */
export interface SceneScored {
  id: string
  scene: string
  lexical: number
  exact: boolean
  score: number
}

/** Blends every non-pinned candidate's score with its scene's context, in place. */
export function applySceneContext(candidates: SceneScored[], weight: number = SCENE_WEIGHT): void {
  if (weight <= 0) return
  const best = new Map<string, [number, number]>()
  for (const c of candidates) {
    if (c.scene === '') continue
    const [first, second] = best.get(c.scene) ?? [0, 0]
    best.set(c.scene, c.lexical > first ? [c.lexical, first] : [first, Math.max(second, c.lexical)])
  }
  for (const c of candidates) {
    if (c.exact) continue
    // A note without a scene is its own scene: its best is itself (lexical is never negative), its second none.
    const [first, second] = c.scene === '' ? [Math.max(c.lexical, 0), 0] : best.get(c.scene)!
    c.score = (c.score + weight * (first + second) / 2) / (1 + weight)
  }
}
