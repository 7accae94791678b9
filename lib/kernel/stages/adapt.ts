/**
 * Runs an `agent/pre-step`-style listener as a pre_action handler, so code written for dsh's
 * waterfall (call `next()`, return the batch with messages appended) moves onto the stage API
 * unchanged. Only messages it appends count; a reject or a rewrite of the batch is not a
 * pre_action power and is ignored (use on_input for those).
 */
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import type { UserMessage } from '@deepseek-ai/dsh-llm'
import type { PreActionDecision, PreActionInput } from './types.ts'

/** The payload of dsh's `agent/pre-step`. */
export interface PreStepPayload {
  agent: Agent
  messages: UserMessage[]
  turn: number
  step: number
  signal: AbortSignal
}

/** A listener of dsh's `agent/pre-step` waterfall. */
export type PreStepListener = (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => Promise<PreStepDecision>

/** The pre_action handler that calls `listener` with the step's messages as the downstream batch. */
export function preStepAsPreAction(listener: PreStepListener): (input: PreActionInput) => Promise<PreActionDecision | undefined> {
  return async (input) => {
    const before = [...input.messages]
    const decision = await listener({ agent: input.agent, messages: [...before], turn: input.turn, step: input.step, signal: input.signal }, async () => ({ kind: 'enter', messages: [...before] }))
    if (decision.kind !== 'enter') return undefined
    const added = decision.messages.slice(before.length)
    return added.length > 0 ? { messages: added } : undefined
  }
}
