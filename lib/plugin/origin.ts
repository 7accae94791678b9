import type { Origin } from '../store/layers.ts'

/** Who spoke in a captured turn, as the recall message names it. */
const SPEAKER: Record<string, string> = { user: 'user', assistant: 'assistant', tool: 'tool result' }

/**
 * The origin of a block captured at compaction, as the model reads it beside the note:
 * `[2026-11-01 14:03 · this session · user]` — when it was said (local time of the dsh
 * process), whether in this conversation or another one, and by whom. It lets the model tell a
 * remembered turn from a saved note. Undefined for blocks without an origin.
 */
export function originLabel(origin: Origin | undefined, currentSession: string | undefined): string | undefined {
  if (origin === undefined) return undefined
  const where = currentSession !== undefined && origin.sessionId === currentSession ? 'this session' : 'another session'
  return `[${localMinute(origin.eventTime)} · ${where} · ${SPEAKER[origin.role] ?? origin.role}]`
}

/** `YYYY-MM-DD HH:MM` in the process's local time zone. */
export function localMinute(time: number): string {
  const d = new Date(time)
  const two = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`
}
