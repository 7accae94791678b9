/**
 * The host plane's scene listeners. The scene is resolved at `agent/inbox/claimed` of a turn's
 * first claimed message: dsh emits it synchronously before the step's prompt is assembled, so the
 * same step's card and recall (pre_action) already see it. The stage API's on_input runs later,
 * inside assembly, and only for agents with handlers, so the resolution does not wait for it.
 * Tools the turn called join the scene at `turn/end`.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { UserMessage } from '@deepseek-ai/dsh-llm'
import type { KernelMemory } from '../host-memory.ts'

/**
 * Whether a turn that starts with `message` takes part in scenes: only a human prompt (`user`
 * kind) in a session that is not a subagent's (subagent prompts are `user` too, so the session
 * header decides). Schedule, goal, coordinator and every plugin kind create and reinforce nothing.
 */
export function participates(agent: Agent, message: UserMessage): boolean {
  return message.source.kind === 'user' && agent.session?.header?.origin !== 'subagent'
}

/** Registers the listeners on the host row's context. Failures are logged; the turn goes on. */
export function registerScenes(ctx: Context, service: () => KernelMemory): void {
  const logger = ctx.logger('stablemem')
  const resolvedTurn = new Map<string, number>()
  const tools = new Map<string, Set<string>>()
  ctx.on('agent/inbox/claimed', ({ agent, message, turn }) => {
    const id = String(agent.id)
    if (resolvedTurn.get(id) === turn) return // once per turn: a resolution writes
    resolvedTurn.set(id, turn)
    const memory = service()
    if (memory.unavailableReason() !== undefined) return
    try {
      memory.scenes.enter(id, message, participates(agent, message))
    } catch (error) {
      memory.scenes.release(id)
      logger.warn('scene resolution failed, turn continues without a scene: %s', error instanceof Error ? error.message : String(error))
    }
  })
  ctx.on('session/event', (session, event) => {
    const id = String(session.id)
    if (event.type === 'tool/call') {
      let names = tools.get(id)
      if (names === undefined) tools.set(id, names = new Set())
      names.add(event.data.name)
    } else if (event.type === 'turn/end') {
      const names = tools.get(id)
      tools.delete(id)
      if (names === undefined) return
      const memory = service()
      if (memory.unavailableReason() !== undefined) return
      try {
        memory.scenes.addTools(id, [...names])
      } catch (error) {
        logger.warn('adding tool features to the scene failed: %s', error instanceof Error ? error.message : String(error))
      }
    }
  })
  ctx.on('agent/disposed', ({ agent }) => {
    const id = String(agent.id)
    resolvedTurn.delete(id)
    tools.delete(id)
    service().scenes.release(id)
  })
}
