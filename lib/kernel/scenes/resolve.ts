/**
 * The per-turn scene resolution (HologramAgent `EnterSceneWithHint`, with its bugs fixed): the
 * turn's declared keys are ensured, then its fingerprint joins the most similar emergent scene,
 * or leaves evidence under its label, and on the second sighting creates an `auto:` scene.
 * Writes go to the primary scene; reads use the keys plus every emergent scene similar enough.
 */
import { normalizeSceneKey } from '../../store/scene-key.ts'
import type { EmergentScene, SceneTable } from '../../store/scenes.ts'
import { joins, label, MIN_SCENE_EVIDENCE, RECALL_THRESHOLD, similarity, type Feature } from './situation.ts'

/** The scene of one turn. */
export interface TurnScene {
  /** Where the turn's commits go: the emergent scene when there is one, else the first declared key ('' for none). */
  primary: string
  /** Declared keys, then the emergent scene (if any). */
  keys: string[]
  /** Emergent scenes similar ≥ `RECALL_THRESHOLD` (most similar first); their notes are recalled too. */
  similar: string[]
  /** The turn's fingerprint. */
  features: Feature[]
  /** True when `primary` is an emergent scene. */
  emergent: boolean
  /** The emergent scene created by this turn, if it created one. */
  created?: string
}

/** The most similar emergent scene the fingerprint joins; ties go to the stronger scene, then the key (HologramAgent sorted by key only). */
function bestJoin(sig: readonly Feature[], scenes: readonly EmergentScene[]): EmergentScene | undefined {
  let best: EmergentScene | undefined
  let bestScore = -1
  for (const scene of scenes) {
    if (!joins(sig, scene.features)) continue
    const score = similarity(sig, scene.features)
    if (score > bestScore || (score === bestScore && best !== undefined && (scene.strength > best.strength || (scene.strength === best.strength && scene.key < best.key)))) {
      best = scene
      bestScore = score
    }
  }
  return best
}

/** Emergent scenes similar ≥ the recall threshold: most similar first, then stronger, then by key. */
export function similarScenes(sig: readonly Feature[], scenes: readonly EmergentScene[]): string[] {
  return scenes.map((s) => ({ s, score: similarity(sig, s.features) }))
    .filter((x) => x.score >= RECALL_THRESHOLD)
    .sort((a, b) => b.score - a.score || b.s.strength - a.s.strength || (a.s.key < b.s.key ? -1 : a.s.key > b.s.key ? 1 : 0))
    .map((x) => x.s.key)
}

/** Resolves (and records) the scene of one turn. Call once per turn: it writes. */
export function resolveTurn(table: SceneTable, sig: readonly Feature[], declared: readonly string[], now: number): TurnScene {
  const keys: string[] = []
  for (const key of declared) {
    if (keys.includes(key)) continue
    table.declare(key, 1, now)
    keys.push(key)
  }
  const turn: TurnScene = { primary: keys[0] ?? '', keys, similar: [], features: [...sig], emergent: false }
  if (sig.length === 0) return turn
  const scenes = table.emergent()
  turn.similar = similarScenes(sig, scenes)
  const best = bestJoin(sig, scenes)
  let key: string | undefined
  if (best !== undefined) {
    table.reinforce(best.id, sig, 1, now)
    key = best.key
  } else {
    const bucket = label(sig)
    if (bucket !== '' && table.recordEvidence(bucket, now) >= MIN_SCENE_EVIDENCE) {
      const base = normalizeSceneKey(`auto:${bucket}`)
      if (base !== 'auto:' && base !== '') {
        key = table.createEmergent(base, sig, bucket, now)
        turn.created = key
      }
    }
  }
  if (key !== undefined) {
    if (!keys.includes(key)) keys.push(key)
    turn.primary = key
    turn.emergent = true
    turn.similar = turn.similar.filter((k) => k !== key)
  }
  return turn
}
