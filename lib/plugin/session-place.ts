import type { Agent } from '@deepseek-ai/dsh-agent'
import { scopeChainOf, scopeOf } from '@deepseek-ai/dsh-scope'
import type { ScopeContext } from '../scope-policy.ts'

/**
 * Where an agent's session runs, read from dsh itself: the workspace is the session header's
 * `cwd` (headless: the directory dsh was started in; web: the workspace the user picked), and the
 * preset is the agent preset the agent joined.
 */
export function placeOf(agent: Agent | undefined): ScopeContext {
  if (agent === undefined) return {}
  const cwd = agent.session?.header?.cwd
  return { workspace: typeof cwd === 'string' && cwd !== '' ? cwd : undefined, preset: presetOf(agent) }
}

/**
 * The agent preset an agent joined, or undefined. This is the one place that knows how: dsh's
 * `AgentPresets` joins an agent by parenting its scope key to the preset's standing mount key
 * `{agentPreset: id}` (dsh-agent-presets `standingMountFor`), so the scope chain is the runtime
 * truth; a session composed per preset also records it, as the header's `agentPreset` and a later
 * `agent-preset/selected` event when the preset was switched (`resolveSessionPreset`).
 */
export function presetOf(agent: Agent): string | undefined {
  for (const key of scopeChainOf(scopeOf(agent.ctx))) {
    const id = (key as { agentPreset?: unknown }).agentPreset
    if (typeof id === 'string' && id !== '') return id
  }
  const events = agent.session?.events ?? []
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as { type: string, data?: { agentPreset?: unknown } }
    if (event.type === 'agent-preset/selected' && typeof event.data?.agentPreset === 'string') return event.data.agentPreset
  }
  const recorded = agent.session?.header?.agentPreset
  return typeof recorded === 'string' && recorded !== '' ? recorded : undefined
}
