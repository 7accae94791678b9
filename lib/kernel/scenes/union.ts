/**
 * The scene side of recall: the notes attached to the turn's scenes join the lexical hits. A
 * convention ("回这个群的消息不要用 Markdown") shares no words with the next message in its
 * group, so only its scene can bring it back. Attached notes rank after exact pins and before
 * every other hit, pass the relevance gate (`GateOptions.attached`), stay inside the caller's
 * scopes, and the result keeps `topK`.
 */
import { isAbstention } from '../../recall/abstain.ts'
import type { Hit, HybridHits } from '../../recall/types.ts'
import type { BlockStore } from '../../store/store.ts'
import { SCENE_RECALL_LIMIT } from './api.ts'

/** The merged hits and the ids the gate must let through. */
export interface SceneUnion {
  hits: Hit[]
  attached: Set<string>
}

/** `hits` with the notes attached to `keys` (at most `SCENE_RECALL_LIMIT`), cut to `topK`. */
export function withSceneNotes(store: BlockStore, hits: HybridHits, keys: readonly string[], scopes: readonly string[] | undefined, topK: number): SceneUnion {
  const refs = store.scenes.attached(keys, scopes, Math.min(SCENE_RECALL_LIMIT, topK))
  const attached = new Set(refs.map((r) => r.blockId))
  if (attached.size === 0) return { hits: [...hits], attached }
  const lexical = new Map(hits.map((h) => [h.id, h]))
  const pins = hits.filter((h) => h.exact)
  const scene: Hit[] = []
  for (const ref of refs) {
    const known = lexical.get(ref.blockId)
    if (known?.exact) continue
    scene.push(known !== undefined
      ? { ...known, why: `${known.why}; scene ${ref.scene}` }
      : { id: ref.blockId, text: ref.text, score: 0, exact: false, relevance: 0, why: `scene ${ref.scene} (weight ${ref.weight.toFixed(2)})` })
  }
  const rest = hits.filter((h) => !h.exact && !attached.has(h.id))
  return { hits: [...pins, ...scene, ...rest].slice(0, Math.max(1, topK)), attached }
}

/**
 * `hits` without the notes the turn's scene card already shows whole (`SceneApi.cardNotes`): the
 * card keeps a convention, the recall message does not quote it a second time (docs/scenes.md,
 * "The card and the recall"). An abstention is returned as it is.
 */
export function withoutCardNotes(hits: readonly Hit[], onCard: ReadonlySet<string>): readonly Hit[] {
  if (onCard.size === 0 || isAbstention(hits)) return hits
  return hits.filter((h) => !onCard.has(h.id))
}
