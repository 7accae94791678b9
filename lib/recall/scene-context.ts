/**
 * Scene context: a note is read in the company of the notes saved with it. A note's scene (the
 * `scene` key given at commit) often carries the subject that the note itself leaves implicit
 * ("本线起讫点…" under the scene of "上海轨道交通16号线"; a reply in a conversation session about
 * Caroline's adoption plans). When other notes of the same scene match the query strongly, the
 * note is more likely about what is asked.
 *
 * Each non-pinned candidate's score becomes (own + SCENE_WEIGHT × context) / (1 + SCENE_WEIGHT),
 * where context is the mean of the two best lexical scores among the candidates of its scene
 * (itself included). Notes without a scene keep their score; a store with a single scene shifts
 * every note alike, so its order is unchanged except where the scene's best notes are tied.
 */

/** Weight of the scene context against the note's own score (1 = equal). */
export const SCENE_WEIGHT = 1

/** A scored candidate as scene context sees it. */
export interface SceneScored {
  scene: string
  lexical: number
  exact: boolean
  score: number
}

/** Blends every non-pinned, scene-tagged candidate's score with its scene's context, in place. */
export function applySceneContext(candidates: SceneScored[], weight: number = SCENE_WEIGHT): void {
  if (weight <= 0) return
  const best = new Map<string, [number, number]>()
  for (const c of candidates) {
    if (c.scene === '') continue
    const top = best.get(c.scene) ?? [0, 0]
    if (c.lexical > top[0]) best.set(c.scene, [c.lexical, top[0]])
    else if (c.lexical > top[1]) best.set(c.scene, [top[0], c.lexical])
    else best.set(c.scene, top)
  }
  for (const c of candidates) {
    if (c.exact || c.scene === '') continue
    const [first, second] = best.get(c.scene)!
    c.score = (c.score + weight * (first + second) / 2) / (1 + weight)
  }
}
