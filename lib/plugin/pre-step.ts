import type { Context } from '@deepseek-ai/cordis'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import type { Config } from '../config.ts'
import { queryFromBatch } from './query-source.ts'
import { abstentionOf } from '../recall/abstain.ts'
import { renderAbstention, renderRecall } from './render.ts'

/**
 * Registers the per-turn recall: on the first step of a turn, after everything downstream has
 * built the batch (`await next()`), find the human question, recall, and append one attributed
 * message of quoted notes — or, when recall abstained, the notice that the store has no record of
 * the specific strings asked about. Tool continuations (step > 1) inject nothing, because injected messages
 * are durable and re-sent with every later request. A failing recall is logged and counted; the
 * turn goes on without notes.
 */
export function registerPreStep(ctx: Context, config: Config, pluginName: string): void {
  const allow = new Set(config.querySources)
  const logger = ctx.logger('stablemem')
  ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
    const decision = await next()
    if (decision.kind !== 'enter' || payload.step !== 1 || !config.inject) return decision
    const query = queryFromBatch(decision.messages, allow, pluginName)
    if (query === '') return decision
    const service = ctx.stablemem
    let text: string
    try {
      const hits = await service.recall(query, { topK: config.topK })
      const abstention = abstentionOf(hits)
      text = abstention !== undefined
        ? renderAbstention(abstention)
        : renderRecall(hits.filter((h) => h.exact || h.score >= config.minScore), config.injectBudgetChars)
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
    return { kind: 'enter', messages: [...decision.messages, message] }
  }, { prepend: true })
}
