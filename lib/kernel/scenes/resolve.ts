/**
 * The per-turn scene resolution (HologramAgent `EnterSceneWithHint`, with its bugs fixed): the
 * turn's declared keys are ensured, then its fingerprint joins the most similar emergent scene,
 * or leaves evidence under its label, and on the second sighting creates an `auto:` scene.
 * Writes go to the primary scene; reads use the keys plus every emergent scene similar enough.
 */
import { normalizeSceneKey } from '../../store/scene-key.ts'
import type { EmergentScene } from '../../store/scene-rows.ts'
import type { SceneTable } from '../../store/scenes.ts'
import { joinsPrepared, label, MIN_SCENE_EVIDENCE, prepare, RECALL_THRESHOLD, score, type Feature } from './situation.ts'
import { similarCandidates } from './similar.ts'

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

/**
 * One pass over the emergent scenes: the most similar one the fingerprint joins (ties go to the
 * stronger scene, then the key — HologramAgent sorted ties by key only), and the scenes similar
 * ≥ the recall threshold, most similar first, then stronger, then by key.
 */
export function compare(sig: readonly Feature[], scenes: readonly EmergentScene[]): { best: EmergentScene | undefined, similar: string[] } {
  let best: EmergentScene | undefined
  let bestScore = -1
  const near: Array<{ s: EmergentScene, score: number }> = []
  const mine = prepare(sig)
  for (const scene of scenes) {
    const theirs = prepare(scene.features)
    const sim = score(mine, theirs)
    if (sim >= RECALL_THRESHOLD) near.push({ s: scene, score: sim })
    if (!joinsPrepared(mine, theirs, sim)) continue
    if (sim > bestScore || (sim === bestScore && best !== undefined && (scene.strength > best.strength || (scene.strength === best.strength && scene.key < best.key)))) {
      best = scene
      bestScore = sim
    }
  }
  near.sort((a, b) => b.score - a.score || b.s.strength - a.s.strength || (a.s.key < b.s.key ? -1 : a.s.key > b.s.key ? 1 : 0))
  return { best, similar: near.map((x) => x.s.key) }
}

/** Emergent scenes similar ≥ the recall threshold: most similar first, then stronger, then by key. */
export function similarScenes(sig: readonly Feature[], scenes: readonly EmergentScene[]): string[] {
  return compare(sig, scenes).similar
}

/**
 * Resolves (and records) the scene of one turn. Call once per turn: it counts. Sightings of
 * declared keys, recurrences and evidence are only counted in memory (`SceneTable.sightLater`,
 * `reinforceLater`, `recordEvidence`, written a moment later by `flush`); only the creation of an
 * emergent scene, once per new situation, writes at once.
 */
export function resolveTurn(table: SceneTable, sig: readonly Feature[], declared: readonly string[], now: number): TurnScene {
  // The candidates first: reading them checks the scene cache once, and the sightings below then
  // use it as it is. A sighting changes no feature, only the strength of the (shared) scene
  // objects, so the comparison sees it as if the candidates were found after it.
  const candidates = sig.length === 0 ? undefined : similarCandidates(table, prepare(sig))
  const keys: string[] = []
  for (const key of declared) {
    if (keys.includes(key)) continue
    table.sightLater(key, now, candidates !== undefined)
    keys.push(key)
  }
  const turn: TurnScene = { primary: keys[0] ?? '', keys, similar: [], features: [...sig], emergent: false }
  if (candidates === undefined) return turn
  const { best, similar } = compare(sig, candidates)
  turn.similar = similar
  let key: string | undefined
  if (best !== undefined) {
    table.reinforceSceneLater(best, sig, 1, now)
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
