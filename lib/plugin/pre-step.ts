import type { Context } from '@deepseek-ai/cordis'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import type { Config } from '../config.ts'
import { ConversationMemory } from './conversation-memory.ts'
import { humanMessages } from './query-source.ts'
import { preStepAsPreAction, type PreStepPayload } from '../kernel/stages/adapt.ts'
import type { AgentScope } from '../kernel/stages/types.ts'
import { withoutCardNotes } from '../kernel/scenes/union.ts'
import { abstentionOf } from '../recall/abstain.ts'
import { isQuestion } from '../text/question.ts'
import { originLabel } from './origin.ts'
import { renderAbstention, renderRecall } from './render.ts'
import { teamLabel } from './team-label.ts'
import { placeOf } from './session-place.ts'
import { untraced } from './untraced.ts'
import { ShownNotes } from './shown-notes.ts'

/**
 * Registers the per-turn recall: on the first step of a turn, after everything downstream has
 * built the batch (`await next()`), find the human question, recall (with the conversation's
 * earlier human messages, `conversation-memory.ts`), and append one attributed
 * message of quoted notes — or, when recall abstained, the notice that the store has no record of
 * the specific strings a question asks about (never after a statement, never on an empty store).
 * A note an earlier recall message of the session still shows the model is not quoted again
 * (`shown-notes.ts`); when every note is such a repeat, no message is added.
 * Tool continuations (step > 1) inject nothing, because injected messages
 * are durable and re-sent with every later request. A failing recall is logged and counted; the
 * turn goes on without notes.
 */
export function registerPreStep(ctx: Context, config: Config, pluginName: string, agents: AgentScope = 'all'): void {
  const allow = new Set(config.querySources)
  const logger = ctx.logger('stablemem')
  const service = untraced(ctx.stablemem) // called on every turn: not through cordis's tracing proxy (untraced.ts)
  const conversations = new ConversationMemory()
  const shown = new ShownNotes(pluginName)
  const recall = async (payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> => {
    const decision = await next()
    if (decision.kind !== 'enter' || payload.step !== 1 || !config.inject) return decision
    const said = humanMessages(decision.messages, allow, pluginName)
    const query = said.at(-1) ?? ''
    if (query === '') return decision
    // The conversation so far: earlier turns' human messages, then this batch's before the last (conversation-memory.ts).
    const agent = String(payload.agent.id)
    const earlier = [...conversations.earlier(agent), ...said.slice(0, -1)]
    conversations.remember(agent, said)
    if (service.unavailableReason() !== undefined) return decision // memory is off; the context line says why
    let text: string
    let showing: string[] = []
    try {
      // The notes the relevance gate lets through (an empty list when nothing is relevant), within
      // the session's view: its workspace's notes, its preset's, and global ones; never another workspace's.
      // The notes of the turn's scene join them (docs/scenes.md), within the same view.
      const scenes = service.scenes.readKeys(agent)
      // The message is read with its conversation when it does not clearly match the store alone (lib/recall/conversation.ts).
      const found = await service.recall(query, { purpose: 'inject', topK: config.topK, recordAccess: false, scenes, scope: placeOf(payload.agent), earlier })
      // A convention the turn's scene card already shows is not quoted again (docs/scenes.md).
      const gated = withoutCardNotes(found, service.scenes.cardNotes(agent, payload.turn))
      const abstention = abstentionOf(gated)
      if (abstention !== undefined) {
        // The notice answers a question about a store that holds notes; after a statement, or
        // with nothing stored yet, it would only make the model doubt what the user just said.
        text = isQuestion(query) && (service.blockCount() ?? 0) > 0 ? renderAbstention(abstention) : ''
      } else {
        // A note an earlier recall message still shows the model is not sent again (shown-notes.ts).
        const inContext = shown.inContext(agent, payload.agent.session)
        const hits = gated.filter((h) => !inContext.has(h.id))
        const origins = await service.origins(hits.map((h) => h.id))
        // Team notes (docs/team.md) are labelled as such; captured turns carry their origin.
        const byId = new Map(hits.map((h) => [h.id, h]))
        const rendered = renderRecall(hits, config.injectBudgetChars, undefined, (id) => teamLabel(byId.get(id)!) ?? originLabel(origins.get(id), agent))
        // Only notes the model is shown count as accessed (not those gated out or cut by the budget).
        showing = hits.slice(0, rendered.shown).map((h) => h.id)
        await service.recordAccess(showing)
        text = rendered.text
      }
    } catch (error) {
      service.noteRecallFailure()
      logger.warn('recall failed, turn continues without notes: %s', error instanceof Error ? error.message : String(error))
      return decision
    }
    if (text === '') return decision
    service.noteInjection()
    const message = createUserMessage({
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: pluginName, form: 'recall' },
    })
    shown.remember(agent, payload.agent.session, message.id, showing)
    return { kind: 'enter', messages: [...decision.messages, message] }
  }
  // Through the stage API, last of pre_action: it sees the step's input after every on_input
  // rewrite, and its message comes after everything else in the batch (see docs/stages.md).
  // `agents` scopes it, e.g. to one preset's agents when a preset row registers it.
  ctx.stablemem.stages.on('pre_action', preStepAsPreAction(recall), { order: RECALL_ORDER, name: 'stablemem:recall', agents })
}

/** The pre_action order of the recall injection: after handlers with the default order 0. */
export const RECALL_ORDER = 1000
