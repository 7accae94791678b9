import { createHash } from 'node:crypto'
import type { StableMem } from '../service.ts'

/**
 * The name of this instance's runtime-context entry. Names must be unique per prompt layer, so it
 * is derived from the store path and the tool name (which must be unique per tool layer anyway):
 * two instances on two files, or two `:memory:` stores, never collide, and the same instance
 * always gets the same name.
 */
export function contextName(storePath: string, toolName: string): string {
  return `stablemem:${createHash('sha256').update(`${storePath}\0${toolName}`).digest('hex').slice(0, 8)}`
}

/**
 * Where a user can look at and correct what is remembered: dsh web has no panel for plugins that
 * serve their own page (docs/browser.md), so the line names the standalone memory browser.
 */
export const BROWSER_HINT = 'The user can search, correct and forget these notes in a local page: `stablemem serve`.'

/**
 * The input-independent line in the runtime-context snapshot: that memory exists, how much, and
 * how to add to it. Empty while the store is empty (nothing to announce), and a plain warning when
 * the store is unavailable, so a broken memory is visible to the model and the user.
 */
export function contextLine(service: StableMem, toolName: string): string {
  const count = service.blockCount() ?? 0
  const reason = service.unavailableReason() // after the count, which may find the file damaged
  if (reason !== undefined) return `Long-term memory (dsh-stablemem) is unavailable: ${reason}. Do not promise to remember anything.`
  if (count === 0) return ''
  const vectors = service.vectorHealthLine()
  const trouble = service.transientTrouble()
  return `Long-term memory (dsh-stablemem): ${count} note${count === 1 ? '' : 's'} stored; relevant ones are recalled with each user message. ` +
    `Save durable facts with the ${toolName} tool. ${BROWSER_HINT}${vectors === '' ? '' : ` ${vectors}`}` +
    (trouble === undefined ? '' : ` The last save failed (${trouble}); nothing stored was lost and saving is retried, but do not promise that a new fact is saved until the tool confirms it.`)
}
