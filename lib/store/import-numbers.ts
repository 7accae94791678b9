/**
 * The rules for the numbers of an imported record, in one place so the store's own import
 * methods and the JSON Lines reader (`transfer.ts`) cannot drift apart: every count and every
 * time is a non-negative safe integer, and a time is one a `Date` can hold.
 */
import { StableMemError } from '../errors.ts'

/** The latest time a JavaScript `Date` can hold (ms since the epoch): 275760-09-13. */
export const MAX_DATE_MS = 8.64e15

/**
 * A counter from an import (`accessCount`, `coolAttempts`, an origin's `seq`): a non-negative
 * safe integer. `field` names it in the error, e.g. `block field accessCount`.
 */
export function checkCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new StableMemError('invalid_input', `${field} must be a non-negative integer, not ${shown(value)}`)
  }
  return value
}

/**
 * A time from an import (ms since the epoch): a count no later than `MAX_DATE_MS`. A later one
 * would be stored and then break every command that prints dates (`stats`, `get`, the Markdown
 * export, an origin's label). 0 and future times are kept as written: an import restores a
 * store, it does not judge its clock.
 */
export function checkTime(value: unknown, field: string): number {
  const ms = checkCount(value, field)
  if (ms > MAX_DATE_MS) throw new StableMemError('invalid_input', `${field} ${ms} is beyond the last date JavaScript can represent (${MAX_DATE_MS})`)
  return ms
}

/** A rejected value as the error shows it: JSON, cut short so a huge string cannot flood the message. */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value)
  return json.length > 40 ? `${json.slice(0, 40)}…` : json
}
