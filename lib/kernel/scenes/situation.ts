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
/** The kinds whose value says who and where, most specific first. */
export const IDENTITY_KINDS: readonly string[] = ['group', 'peer', 'chan']
/**
 * The identity dimensions: the partner (a group or a private peer — a turn has one of them) and
 * the channel. Two situations that both name a value in one dimension and share none are
 * different situations.
 */
export const IDENTITY_DIMENSIONS: ReadonlyArray<readonly string[]> = [['group', 'peer'], ['chan']]
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

/** A fingerprint prepared for comparison: its weights, total weight, identity values per dimension, identity key. */
export interface Prepared {
  weights: Map<string, number>
  total: number
  dims: Array<Set<string>>
  identity: string
  /** The partner keys (group or peer), joined; '' for none. */
  partner: string
}

/**
 * Prepared forms, memoised per feature array: a turn compares one fingerprint with every emergent
 * scene, so each scene is prepared once while its feature array is unchanged (the scene table
 * replaces the array when it adds to it).
 */
const preparedForms = new WeakMap<readonly Feature[], Prepared>()

/** The prepared form of a fingerprint (memoised per array). */
export function prepare(features: readonly Feature[]): Prepared {
  let p = preparedForms.get(features)
  if (p !== undefined && p.weights.size === features.length) return p
  const weights = new Map<string, number>()
  let total = 0
  for (const f of features) {
    if (weights.has(f.key)) continue
    weights.set(f.key, f.weight)
    total += f.weight
  }
  const dims = IDENTITY_DIMENSIONS.map((kinds) => new Set(features.filter((f) => kinds.includes(kindOf(f.key))).map((f) => f.key)))
  p = { weights, total, dims, identity: identityOf(features).join('\n'), partner: [...dims[0]!].sort().join('\n') }
  preparedForms.set(features, p)
  return p
}

function conflict(a: Prepared, b: Prepared): boolean {
  for (let i = 0; i < a.dims.length; i++) {
    const left = a.dims[i]!
    const right = b.dims[i]!
    if (left.size === 0 || right.size === 0) continue
    let shared = false
    for (const k of left) if (right.has(k)) { shared = true; break }
    if (!shared) return true
  }
  return false
}

/** `similarity` of two prepared fingerprints. */
export function score(a: Prepared, b: Prepared): number {
  if (a.weights.size === 0 || b.weights.size === 0) return 0
  // Most scenes of a store name another partner: one string comparison rules them out.
  if (a.dims[0]!.size === 1 && b.dims[0]!.size === 1 && a.partner !== b.partner) return 0
  if (conflict(a, b)) return 0
  let shared = 0
  let union = a.total + b.total
  for (const [key, w] of a.weights) {
    const v = b.weights.get(key)
    if (v === undefined) continue
    shared += Math.min(w, v)
    union -= Math.min(w, v) // counted twice in the totals; the union keeps only the max
  }
  return union === 0 ? 0 : shared / union
}

/**
 * Weighted Jaccard of two fingerprints (shared keys add min to the numerator and max to the
 * union, the others their weight to the union); 0 if either is empty. Fix of HologramAgent's R4:
 * when both sides name a partner (group or peer) or a channel and share none (group_1 vs
 * group_2, a group vs a private chat, qq vs web), the situations are different, 0 — in
 * HologramAgent a shared channel and time of day alone (1.2 / 3.2 = .375) pulled one group's
 * rules into every other group of that channel.
 */
export function similarity(a: readonly Feature[], b: readonly Feature[]): number {
  return score(prepare(a), prepare(b))
}

/** The identity features of a fingerprint, as a sorted list of keys. */
export function identityOf(sig: readonly Feature[]): string[] {
  return sig.filter((f) => IDENTITY_KINDS.includes(kindOf(f.key))).map((f) => f.key).sort()
}

/**
 * Whether a situation joins a scene, given their similarity: ≥ `JOIN_THRESHOLD`, or both name
 * the same non-empty identity (the spec's "the identity features overlap"). Without the second
 * rule a recurring group chat with three new 0.4 topics each turn scores (1+1+.2)/4.6 = .478
 * against its own scene and splits into `.2`, `.3`, … twins.
 */
export function joins(sig: readonly Feature[], scene: readonly Feature[]): boolean {
  return joinsPrepared(prepare(sig), prepare(scene), similarity(sig, scene))
}

/** `joins` of two prepared fingerprints whose similarity is `sim`. */
export function joinsPrepared(a: Prepared, b: Prepared, sim: number): boolean {
  return sim >= JOIN_THRESHOLD || (a.identity !== '' && a.identity === b.identity)
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
