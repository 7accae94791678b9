/**
 * `ctx.stablemem.scenes`: the typed scene API (docs/scenes.md). Other plugins (and the memory
 * browser) read the current scene of an agent, list scenes with their strength, features and
 * attached notes, and declare scenes; the host row feeds it one resolution per human turn.
 */
import type { UserMessage } from '@deepseek-ai/dsh-llm'
import { StableMemError } from '../../errors.ts'
import { checkSceneKey } from '../../store/scene-key.ts'
import type { DecayResult, SceneOrigin, SceneRow } from '../../store/scene-rows.ts'
import type { BlockStore } from '../../store/store.ts'
import type { RecallView } from '../../scope-policy.ts'
import { redactSecrets } from '../../secrets.ts'
import { renderCard } from './card-text.ts'
import { situationOf, toolFeatures, type FeatureContext } from './features.ts'
import { resolveTurn, type TurnScene } from './resolve.ts'
import { featuresFromKey, type Feature } from './situation.ts'

export type { TurnScene } from './resolve.ts'
export type { Feature } from './situation.ts'

/** Most notes one turn's scenes add to its recall. */
export const SCENE_RECALL_LIMIT = 3
/** How long counted recurrences wait in memory before they are written (one write for a burst of turns). */
const FLUSH_DELAY_MS = 1_000
/** The empty set `cardNotes` answers with. */
const NONE: ReadonlySet<string> = new Set()
/** Most notes whose masked text the cards remember (`masked`). */
const MASKED_NOTES = 4_096
/** Refs below this weight are deleted by decay (HologramAgent's floor). */
export const DECAY_FLOOR = 0.05

/** One scene as `list()` shows it. */
export interface SceneSummary {
  key: string
  origin: SceneOrigin
  /** Turns that were in it (+1 per recurrence; declared by a commit: 1). */
  strength: number
  createdAt: number
  updatedAt: number
  /** Notes attached to it. */
  refs: number
  /** Emergent scenes: their stored fingerprint; declared ones: the features their key states. */
  features: Feature[]
}

/** One scene with its attached notes (`get`). */
export interface SceneDetail extends SceneSummary {
  notes: Array<{ id: string, text: string, weight: number, decayedAt: number }>
}

/** The scene part of `stats()`. */
export interface SceneStats {
  scenes: number
  declared: number
  emergent: number
  refs: number
  /** Fingerprint labels seen once, waiting for a second sighting. */
  evidence: number
  /** Human turns resolved into a scene, and turns that take no part (not a human prompt, a subagent's session). */
  turns: { resolved: number, skipped: number }
  /** The scene card (`sceneCard`): its mode, steps it reached, steps dsh dropped it and why. */
  card: { mode: SceneCardMode, shown: number, suppressed: number, reason?: string }
}

/** Where the scene card goes (`sceneCard`). */
export type SceneCardMode = 'context' | 'section' | 'off'

/** The settings the scene API needs. */
export interface SceneOptions extends Omit<FeatureContext, 'now'> {
  halfLifeDays: number
  card: SceneCardMode
  /** The scope union of a session's view (the service's scope policy). */
  scopes(view: RecallView): readonly string[] | undefined
}

/** The scene API. */
export interface Scenes {
  /** The scene of the agent's current (or last) human turn; undefined before its first one. */
  current(agentId: string): TurnScene | undefined
  /** Every scene, strongest first. */
  list(): SceneSummary[]
  /** One scene (by any spelling of its key) with up to `limit` attached notes, or undefined. */
  get(key: string, limit?: number): SceneDetail | undefined
  /** Declares a scene (created with strength 1; an existing one is left as it is). */
  declare(key: string): SceneSummary
  /** Attaches notes to a scene (declared if new) with `weight` (default 1, max kept). Unknown ids are refused. */
  attach(key: string, ids: readonly string[], weight?: number): void
  /** One decay pass at `now` (default: the clock); the heartbeat runs it. */
  decay(options?: { now?: number }): DecayResult
  /** Scene counts, turns and the card's fate. */
  stats(): SceneStats
}

/**
 * The object behind `ctx.stablemem.scenes`. Reads and writes go through `use`, the service's
 * store access (unavailable and damaged stores are reported there).
 */
export class SceneApi implements Scenes {
  private readonly use: <T>(fn: (store: BlockStore) => T) => T
  private readonly options: SceneOptions
  private readonly turns = new Map<string, TurnScene>()
  private readonly counts = { resolved: 0, skipped: 0, shown: 0, suppressed: 0 }
  private cardReason: string | undefined
  /**
   * Per agent: the card of its current turn — the situation and note ids it was rendered from (a
   * note's id is the hash of its text, so equal ids mean equal text), the text, and the notes it
   * shows whole. A later turn with the same scene and notes reuses the text.
   */
  private readonly cards = new Map<string, { turn: number, from: string, text: string, whole: ReadonlySet<string> }>()
  /** Per agent: whether its last request carried the card (`noteCard`); absent before its first. */
  private readonly delivered = new Map<string, boolean>()
  /**
   * A note's text with credentials masked, by note id: the id is the hash of the text, so the
   * masked text of an id never changes, and a card that shows a note again does not scan it again.
   */
  private readonly maskedTexts = new Map<string, string>()
  private flushTimer: ReturnType<typeof setTimeout> | undefined

  constructor(use: <T>(fn: (store: BlockStore) => T) => T, options: SceneOptions) {
    this.use = use
    this.options = options
  }

  current(agentId: string): TurnScene | undefined {
    return this.turns.get(String(agentId))
  }

  list(): SceneSummary[] {
    return this.use((store) => store.scenes.list().map((row) => this.summary(store, row, row.refs)))
  }

  get(key: string, limit = 20): SceneDetail | undefined {
    const normal = checkSceneKey(key, 'key', true)
    return this.use((store) => {
      const row = store.scenes.byKey(normal)
      if (row === undefined) return undefined
      const refs = store.scenes.refs(row.id, Math.max(1, Math.min(1000, Math.floor(limit))))
      const notes = refs.map((r) => ({ id: r.blockId, text: store.get(r.blockId)?.text ?? '', weight: r.weight, decayedAt: r.decayedAt }))
      return { ...this.summary(store, row, store.scenes.refCount(row.id)), notes }
    })
  }

  declare(key: string): SceneSummary {
    const normal = checkSceneKey(key, 'key', true)
    return this.use((store) => {
      const { row } = store.scenes.declare(normal, 0)
      return this.summary(store, row, store.scenes.refCount(row.id))
    })
  }

  attach(key: string, ids: readonly string[], weight = 1): void {
    const normal = checkSceneKey(key, 'key', true)
    if (!Array.isArray(ids)) throw new StableMemError('invalid_input', 'ids must be an array of block ids')
    if (typeof weight !== 'number' || !(weight > 0) || weight > 1) throw new StableMemError('invalid_input', 'weight must be a number in (0, 1]')
    this.use((store) => store.transaction(() => {
      for (const [i, id] of ids.entries()) {
        if (typeof id !== 'string' || store.get(id) === undefined) throw new StableMemError('not_found', `ids[${i}]: no note ${JSON.stringify(String(id)).slice(0, 40)}`)
        store.scenes.tag(normal, id, weight)
      }
    }))
  }

  decay(options: { now?: number } = {}): DecayResult {
    const halfLife = this.options.halfLifeDays * 86_400_000
    return this.use((store) => store.scenes.decay(halfLife, DECAY_FLOOR, options.now ?? Date.now()))
  }

  stats(): SceneStats {
    const counts = this.use((store) => store.scenes.counts())
    const card = { mode: this.options.card, shown: this.counts.shown, suppressed: this.counts.suppressed, ...(this.cardReason === undefined ? {} : { reason: this.cardReason }) }
    return { ...counts, turns: { resolved: this.counts.resolved, skipped: this.counts.skipped }, card }
  }

  /**
   * Resolves the scene of the agent's turn from its human message (once per turn: it writes);
   * `participates` false (not a human prompt, a subagent's session) records nothing and clears
   * the agent's scene, so such a turn is steered by no scene either.
   */
  enter(agentId: string, message: UserMessage, participates: boolean, now: number = Date.now()): TurnScene | undefined {
    if (!participates) {
      this.counts.skipped++
      this.turns.delete(String(agentId))
      return undefined
    }
    const { features, declared } = situationOf(message, { ...this.options, now })
    const turn = this.use((store) => resolveTurn(store.scenes, features, declared, now))
    this.counts.resolved++
    this.turns.set(String(agentId), turn)
    this.scheduleFlush()
    return turn
  }

  /** Adds the turn's tools to its emergent scene as `tool:` features (no strength: the turn was counted). */
  addTools(agentId: string, names: readonly string[]): void {
    const turn = this.turns.get(String(agentId))
    if (turn === undefined || !turn.emergent || names.length === 0) return
    const features = toolFeatures(names)
    this.use((store) => {
      const row = store.scenes.byKey(turn.primary)
      if (row !== undefined) store.scenes.reinforce(row.id, features, 0)
    })
  }

  /** The keys a turn reads notes from: its keys and the similar emergent scenes. */
  readKeys(agentId: string): string[] {
    const turn = this.turns.get(String(agentId))
    return turn === undefined ? [] : [...new Set([...turn.keys, ...turn.similar])]
  }

  /**
   * The scene card of the agent's turn `turn` (docs/scenes.md, "The card"): its situation and up
   * to `SCENE_RECALL_LIMIT` attached notes within the scopes of `view`, credentials masked,
   * within `budget` characters; '' without a scene or notes. The text is rendered again only when
   * the situation or the notes changed.
   */
  card(agentId: string, turn: number, view: RecallView, budget: number): string {
    const id = String(agentId)
    const scene = this.turns.get(id)
    if (scene === undefined || scene.primary === '') {
      this.cards.delete(id)
      return ''
    }
    const situation = scene.keys[0] ?? scene.primary
    const scopes = this.options.scopes(view)
    return this.use((store) => {
      const refs = store.scenes.attached(this.readKeys(id), scopes, SCENE_RECALL_LIMIT)
      const from = JSON.stringify([situation, budget, ...refs.map((r) => r.blockId)])
      const last = this.cards.get(id)
      if (last?.from === from) {
        last.turn = turn
        return last.text
      }
      const notes = refs.map((r) => ({ id: r.blockId, text: this.masked(r.blockId, r.text) }))
      const { text, whole } = renderCard(situation, notes.map((n) => n.text), budget)
      this.cards.set(id, { turn, from, text, whole: new Set(notes.slice(0, whole).map((n) => n.id)) })
      return text
    })
  }

  /**
   * The notes the agent's card shows whole in turn `turn`, once a request of the agent is known
   * to have carried its card (`noteCard`): the recall leaves them out, so a convention is not
   * quoted twice in one request (docs/scenes.md, "The card and the recall"). Empty while the card
   * has not been seen to arrive — a complete persona or suppressed runtime context drops it, and
   * then the recall must keep the convention.
   */
  cardNotes(agentId: string, turn: number): ReadonlySet<string> {
    const id = String(agentId)
    const card = this.cards.get(id)
    return card !== undefined && card.turn === turn && this.delivered.get(id) === true ? card.whole : NONE
  }

  /** Forgets the agent's current scene (its session is gone). */
  release(agentId: string): void {
    this.turns.delete(String(agentId))
    this.cards.delete(String(agentId))
    this.delivered.delete(String(agentId))
  }

  /** Counts one request of the agent the card reached (`shown`) or that dsh dropped it from, with the reason. */
  noteCard(agentId: string, shown: boolean, reason?: string): void {
    this.delivered.set(String(agentId), shown)
    if (shown) this.counts.shown++
    else {
      this.counts.suppressed++
      this.cardReason = reason
    }
  }

  /** `text` (of note `id`) with credentials masked, remembered per id (bounded: starts over when full). */
  private masked(id: string, text: string): string {
    let out = this.maskedTexts.get(id)
    if (out === undefined) {
      out = redactSecrets(text).text
      if (this.maskedTexts.size >= MASKED_NOTES) this.maskedTexts.clear()
      this.maskedTexts.set(id, out)
    }
    return out
  }

  /** Writes the counted recurrences a moment later, off the turn's path (unref'd: never keeps the process alive). */
  private scheduleFlush(): void {
    if (this.flushTimer !== undefined) return
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined
      try {
        this.use((store) => store.scenes.flush())
      } catch {
        // Still queued: written by the next turn's flush, a read, decay or close.
      }
    }, FLUSH_DELAY_MS)
    this.flushTimer.unref()
  }

  private summary(store: BlockStore, row: SceneRow, refs: number): SceneSummary {
    const features = row.origin === 'emergent' ? store.scenes.features(row.id) : featuresFromKey(row.key)
    return { key: row.key, origin: row.origin, strength: row.strength, createdAt: row.createdAt, updatedAt: row.updatedAt, refs, features }
  }
}
