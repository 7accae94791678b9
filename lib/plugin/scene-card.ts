/**
 * The scene card (docs/scenes.md, "The card"): the situation the agent is in and the strongest
 * conventions noted for it, shown before the model reads the conversation. Its text depends only
 * on the scene and its notes, so it is byte-identical from turn to turn until one of them
 * changes: as the last system-prompt section (`section`, after every registered section, so the
 * rest of the prompt keeps its cache prefix) it costs one `request/header` per scene switch; as
 * a runtime-context entry (`context`) it costs none, but leaves one stale snapshot per switch.
 * Part of the model-facing surface (`surface.ts`); the card's text is the kernel's
 * (`lib/kernel/scenes/card-text.ts`, through `ctx.stablemem.scenes.card`).
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { isAgentLoopRequest } from '@deepseek-ai/dsh-llm'
import type { Config } from '../config.ts'
import { placeOf } from './session-place.ts'
import { untraced } from './untraced.ts'

/** The section / context name of the card. */
export const CARD_NAME = 'stablemem:scene'
/** pre_action order of the card: before the recall (which adds a message, not text). */
const CARD_ORDER = 900

/** Registers the card for the agents `serves` admits (both rows, like the rest of the surface). */
export function registerSceneCard(ctx: Context, config: Config, serves: (agent: Agent) => boolean): void {
  if (config.sceneCard === 'off') return
  const mode = config.sceneCard
  /** Per agent: the turn the card was computed for and its text (one query per turn, not per step). */
  const cards = new Map<string, { turn: number, text: string }>()
  // Called on every step and request: the service itself, not cordis's tracing proxy (untraced.ts).
  const memory = untraced(ctx.stablemem)
  ctx.stablemem.stages.on('pre_action', ({ agent, turn }) => {
    if (memory.unavailableReason() !== undefined) return undefined
    const id = String(agent.id)
    let card = cards.get(id)
    if (card === undefined || card.turn !== turn) {
      card = { turn, text: memory.scenes.card(id, turn, placeOf(agent), config.sceneCardChars) }
      cards.set(id, card)
    }
    if (card.text === '') return undefined
    const entry = [{ name: CARD_NAME, text: card.text }]
    return mode === 'section' ? { sections: entry } : { contexts: entry }
  }, { order: CARD_ORDER, name: 'stablemem:scene-card', agents: serves })
  // Whether the card reached the request: dsh drops sections under a `complete` persona and
  // contexts when runtime context is suppressed; `stats().scenes.card` says so, and the recall
  // leaves the card's notes out only once a request of the agent carried it (`cardNotes`).
  ctx.on('llm/stream', (options, next) => {
    if (!isAgentLoopRequest(options) || options.sessionId === undefined) return next()
    const card = cards.get(String(options.sessionId))
    if (card === undefined || card.text === '') return next()
    const reached = mode === 'section'
      ? (options.system ?? '').includes(card.text)
      : options.messages.some((m) => m.content.some((b) => b.type === 'text' && b.text.includes(card.text)))
    memory.scenes.noteCard(String(options.sessionId), reached, reached ? undefined : mode === 'section'
      ? 'the agent\'s system prompt is a complete persona section, which replaces every other section (the card included)'
      : 'the agent\'s runtime context is suppressed (includeRuntimeContext: false, or a plugin called suppressRuntimeContext), which drops the card')
    return next()
  })
  ctx.on('agent/disposed', ({ agent }) => { cards.delete(String(agent.id)) })
}
