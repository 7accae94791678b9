/**
 * The service's checks of what a JavaScript caller passes (TypeScript's types vanish at run time):
 * a value of the wrong type is refused with a message naming the field and what it got, never
 * read as "nothing" (recalling nothing for a number would hide the caller's bug).
 */
import { StableMemError } from '../errors.ts'
import type { RecallCallOptions } from './types.ts'

/** Refuses a `recall` call whose query or options have the wrong type, naming the field. */
export function checkRecallCall(query: unknown, options: RecallCallOptions): void {
  // A JavaScript caller can pass anything; recalling nothing for a number would hide its bug.
  if (typeof query !== 'string') throw new StableMemError('invalid_input', `query must be a string, not ${kindOf(query)}`)
  if (options === null || typeof options !== 'object') throw new StableMemError('invalid_input', `options must be an object, not ${kindOf(options)}`)
  if (options.topK !== undefined && (typeof options.topK !== 'number' || Number.isNaN(options.topK))) {
    throw new StableMemError('invalid_input', `topK must be a number (1–100), not ${kindOf(options.topK)}`)
  }
  if (options.recordAccess !== undefined && typeof options.recordAccess !== 'boolean') {
    throw new StableMemError('invalid_input', `recordAccess must be a boolean, not ${kindOf(options.recordAccess)}`)
  }
  if (options.purpose !== undefined && options.purpose !== 'inject' && options.purpose !== 'search') {
    const given = typeof options.purpose === 'string' ? JSON.stringify(options.purpose) : kindOf(options.purpose)
    throw new StableMemError('invalid_input', `purpose must be 'inject' or 'search', not ${given}`)
  }
  if (options.team !== undefined && typeof options.team !== 'boolean') throw new StableMemError('invalid_input', `team must be a boolean, not ${kindOf(options.team)}`)
  if (options.scenes !== undefined && (!Array.isArray(options.scenes) || options.scenes.some((k) => typeof k !== 'string'))) {
    throw new StableMemError('invalid_input', 'scenes must be an array of scene keys')
  }
  if (options.earlier !== undefined && (!Array.isArray(options.earlier) || options.earlier.some((m) => typeof m !== 'string'))) {
    throw new StableMemError('invalid_input', 'earlier must be an array of message texts')
  }
}

/** Refuses ids that are not an array of strings (`recordAccess`), naming the first bad one. */
export function checkIdList(ids: unknown): void {
  if (!Array.isArray(ids)) throw new StableMemError('invalid_input', `ids must be an array of block ids, not ${kindOf(ids)}`)
  ids.forEach((id, i) => {
    if (typeof id !== 'string') throw new StableMemError('invalid_input', `ids[${i}] must be a block id string, not ${kindOf(id)}`)
  })
}

/** How a refusal names a value of the wrong type: `number 42`, `null`, `an object`. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
  return typeof value === 'object' ? 'an object' : typeof value
}
