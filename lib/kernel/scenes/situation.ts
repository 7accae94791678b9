/**
 * Situation fingerprints (HologramAgent `scene_emerge.go`): a turn is described by weighted
 * features — who and where (`chan`, `peer`, `group`), what was used (`tool`), what about
 * (`topic`) and when (`part` of day) — and two situations are compared by weighted Jaccard.
 * docs/scenes.md explains the constants and where this differs from HologramAgent.
 */
import { normalizeSceneKey } from '../../store/scene-key.ts'

/** Feature weights by kind. Identity kinds weigh 1: a channel or a partner defines a situation; time of day never does. */
export const FEATURE_WEIGHTS: Readonly<Record<string, number>> = { chan: 1, peer: 1, group: 1, tool: 0.8, topic: 0.4, part: 0.2 }
/** Weight of a feature of a kind not listed above. */
export const UNKNOWN_WEIGHT = 0.4
/** The kinds whose value says who and where; two situations whose values of one of them differ are different situations. */
export const IDENTITY_KINDS: readonly string[] = ['group', 'peer', 'chan']
/** Similarity at which a situation joins an existing emergent scene. */
export const JOIN_THRESHOLD = 0.5
/** Similarity at which an emergent scene's notes are recalled (looser: one extra line is cheaper than a forgotten rule). */
export const RECALL_THRESHOLD = 0.35
/** Sightings of a fingerprint's label before its scene is created (a one-off is not a scene). */
export const MIN_SCENE_EVIDENCE = 2
/** Most features one fingerprint keeps. */
export const MAX_SITUATION_FEATURES = 24
/** Only features at least this heavy name a scene (HologramAgent's R2: `part` must not split a scene's evidence). */
export const LABEL_FEATURE_WEIGHT = 0.5

/** One feature: `kind:value` (normalised) and its weight. */
export interface Feature {
  key: string
  weight: number
}

/** The kind of a feature key (`chan` of `chan:qq`). */
export function kindOf(key: string): string {
  const colon = key.indexOf(':')
  return colon < 0 ? '' : key.slice(0, colon)
}

/** A normalised feature for `kind` and `value`, or undefined when the value normalises to nothing. */
export function feature(kind: string, value: string): Feature | undefined {
  const v = normalizeSceneKey(value.replaceAll('/', '_'))
  if (v === '') return undefined
  return { key: `${kind}:${v}`, weight: FEATURE_WEIGHTS[kind] ?? UNKNOWN_WEIGHT }
}

/**
 * A fingerprint from features: duplicates dropped (first kept), a stable sort by weight
 * (identity first, in the order given: group, peer, chan — HologramAgent's R4, the partner
 * outranks the channel in a label), at most `MAX_SITUATION_FEATURES`.
 */
export function newSituation(features: ReadonlyArray<Feature | undefined>): Feature[] {
  const seen = new Set<string>()
  const out: Feature[] = []
  for (const f of features) {
    if (f === undefined || f.key === '' || seen.has(f.key)) continue
    seen.add(f.key)
    out.push(f)
  }
  out.sort((a, b) => b.weight - a.weight || identityRank(a.key) - identityRank(b.key))
  return out.slice(0, MAX_SITUATION_FEATURES)
}

function identityRank(key: string): number {
  const i = IDENTITY_KINDS.indexOf(kindOf(key))
  return i < 0 ? IDENTITY_KINDS.length : i
}

/**
 * Weighted Jaccard of two fingerprints (shared keys add min to the numerator and max to the
 * union, the others their weight to the union); 0 if either is empty. Fix of HologramAgent's R4:
 * when both sides name a value of the same identity kind and share none (group_1 vs group_2,
 * qq vs web), the situations are different, 0 — in HologramAgent a shared channel and time of day
 * alone (1.2 / 3.2 = .375) pulled one group's rules into every other group of that channel.
 */
export function similarity(a: readonly Feature[], b: readonly Feature[]): number {
  if (a.length === 0 || b.length === 0) return 0
  if (identityConflict(a, b)) return 0
  const weights = new Map(b.map((f) => [f.key, f.weight]))
  let shared = 0
  let union = 0
  for (const f of a) {
    const w = weights.get(f.key)
    if (w === undefined) union += f.weight
    else {
      shared += Math.min(f.weight, w)
      union += Math.max(f.weight, w)
      weights.delete(f.key)
    }
  }
  for (const w of weights.values()) union += w
  return union === 0 ? 0 : shared / union
}

/** True when some identity kind has values on both sides and none in common. */
export function identityConflict(a: readonly Feature[], b: readonly Feature[]): boolean {
  for (const kind of IDENTITY_KINDS) {
    const left = a.filter((f) => kindOf(f.key) === kind).map((f) => f.key)
    if (left.length === 0) continue
    const right = new Set(b.filter((f) => kindOf(f.key) === kind).map((f) => f.key))
    if (right.size > 0 && !left.some((k) => right.has(k))) return true
  }
  return false
}

/** The identity features of a fingerprint, as a sorted list of keys. */
export function identityOf(sig: readonly Feature[]): string[] {
  return sig.filter((f) => IDENTITY_KINDS.includes(kindOf(f.key))).map((f) => f.key).sort()
}

/**
 * Whether a situation joins a scene: similarity ≥ `JOIN_THRESHOLD`, or both name the same
 * non-empty identity (the spec's "the identity features overlap"). Without the second rule a
 * recurring group chat with three new 0.4 topics each turn scores (1+1+.2)/4.6 = .478 against
 * its own scene and splits into `.2`, `.3`, … twins.
 */
export function joins(sig: readonly Feature[], scene: readonly Feature[]): boolean {
  if (similarity(sig, scene) >= JOIN_THRESHOLD) return true
  const mine = identityOf(sig)
  if (mine.length === 0 || identityConflict(sig, scene)) return false
  const theirs = identityOf(scene)
  return mine.length === theirs.length && mine.every((k, i) => k === theirs[i])
}

/**
 * The label of a fingerprint: up to `max` feature keys weighing at least `LABEL_FEATURE_WEIGHT`,
 * in fingerprint order (the first `max` features when none does), joined with `+` and
 * normalised (so `+` becomes `_`; HologramAgent's R1 stored the raw `+` form beside the
 * normalised one). It names the evidence bucket and the `auto:` scene.
 */
export function label(sig: readonly Feature[], max = 2): string {
  const heavy = sig.filter((f) => f.weight >= LABEL_FEATURE_WEIGHT)
  const chosen = (heavy.length > 0 ? heavy : sig).slice(0, max)
  return normalizeSceneKey(chosen.map((f) => f.key).join('+'))
}

/**
 * Features a declared key states itself: each `/` segment of the form `kind:value` with a known
 * kind. Keys like "老大2026-09-04_12:27_qq私聊图片" yield none — never guessed.
 */
export function featuresFromKey(key: string): Feature[] {
  const out: Array<Feature | undefined> = []
  for (const segment of key.split('/')) {
    const kind = kindOf(segment)
    if (!(kind in FEATURE_WEIGHTS)) continue
    out.push(feature(kind, segment.slice(kind.length + 1)))
  }
  return newSituation(out)
}
