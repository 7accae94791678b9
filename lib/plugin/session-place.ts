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
  const selected = agent.session === undefined ? undefined : lastSelected(agent.session)
  if (selected !== undefined) return selected
  const recorded = agent.session?.header?.agentPreset
  return typeof recorded === 'string' && recorded !== '' ? recorded : undefined
}

/** The part of a dsh session `lastSelected` reads. */
interface EventLog {
  readonly seq: number
  readonly events: readonly { readonly type: string, readonly data?: unknown }[]
}

/** Per session log: how many of its events were read, and the preset of the last `agent-preset/selected` among them. */
const selections = new WeakMap<EventLog, { read: number, preset: string | undefined }>()

/**
 * The preset the session's last `agent-preset/selected` event names. The log only grows, so each
 * event is read once: a call reads the events appended since the last (presetOf runs on every
 * turn; reading the whole log backwards each time made a turn's cost grow with the session).
 */
function lastSelected(session: EventLog): string | undefined {
  let seen = selections.get(session)
  if (seen === undefined) selections.set(session, seen = { read: 0, preset: undefined })
  if (seen.read >= session.seq) return seen.preset
  const events = session.events
  for (let i = seen.read; i < events.length; i++) {
    const event = events[i] as { type: string, data?: { agentPreset?: unknown } }
    if (event.type === 'agent-preset/selected' && typeof event.data?.agentPreset === 'string') seen.preset = event.data.agentPreset
  }
  seen.read = events.length
  return seen.preset
}
