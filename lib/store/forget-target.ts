/**
 * The checks of a forget's target and origin before anything is read: an id, a list of ids or
 * one filter (`{scene}`, `{source}`, `{before}`, `{all: true}`); every refusal names what is
 * wrong. Shared with the team layer's forget (`lib/team/forget.ts`).
 */
import { StableMemError } from '../errors.ts'
import { isBlockId } from './block-id.ts'
import type { ForgetFilter, ForgetTarget } from './forget-types.ts'

/** A checked forget target. */
export type Selection = { kind: 'ids', ids: string[] } | { kind: 'filter', filter: ForgetFilter }

/** Checks the target's shape; every refusal names what is wrong (also for the team layer's forget, `lib/team/forget.ts`). */
export function parseTarget(target: ForgetTarget): Selection {
  if (typeof target === 'string') return { kind: 'ids', ids: [checkId(target, 'id')] }
  if (Array.isArray(target)) {
    if (target.length === 0) throw new StableMemError('invalid_input', 'forget: the id list is empty')
    return { kind: 'ids', ids: [...new Set(target.map((id, i) => checkId(id, `ids[${i}]`)))] }
  }
  if (target === null || typeof target !== 'object') {
    throw new StableMemError('invalid_input', 'forget: the target must be an id, a list of ids or a filter ({scene}, {source}, {before} or {all: true})')
  }
  const filter = target as Record<string, unknown>
  const known = ['scene', 'source', 'before', 'all']
  const unknownKeys = Object.keys(filter).filter((k) => !known.includes(k))
  if (unknownKeys.length > 0) throw new StableMemError('invalid_input', `forget: unknown filter field ${unknownKeys[0]} (use scene, source, before or all)`)
  const given = known.filter((k) => filter[k] !== undefined)
  if (given.length === 0) throw new StableMemError('invalid_input', 'forget: the filter is empty; to forget every note pass {all: true}')
  if (filter.all !== undefined) {
    if (filter.all !== true) throw new StableMemError('invalid_input', 'forget: all must be true')
    if (given.length > 1) throw new StableMemError('invalid_input', 'forget: all cannot be combined with another filter field')
    return { kind: 'filter', filter: { all: true } }
  }
  const out: ForgetFilter = {}
  for (const field of ['scene', 'source'] as const) {
    const value = filter[field]
    if (value === undefined) continue
    if (typeof value !== 'string' || value.trim() === '') throw new StableMemError('invalid_input', `forget: ${field} must be a non-empty string`)
    out[field] = value.normalize('NFC').trim()
  }
  if (filter.before !== undefined) out.before = parseTime(filter.before)
  return { kind: 'filter', filter: out }
}

function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `forget: ${field} must be a string`)
  const id = value.trim()
  if (!isBlockId(id)) throw new StableMemError('invalid_input', `forget: ${field} "${id.slice(0, 40)}" is not a block id (blk_ followed by 24 hex digits)`)
  return id
}

/** A time as ms since the epoch; refuses anything that is not a real instant. */
function parseTime(value: unknown): number {
  const ms = value instanceof Date ? value.getTime()
    : typeof value === 'number' ? value
      : typeof value === 'string' && value.trim() !== '' ? Date.parse(value.trim())
        : Number.NaN
  if (!Number.isFinite(ms)) throw new StableMemError('invalid_input', `forget: before must be a time (ms since the epoch or an ISO 8601 date), not ${JSON.stringify(String(value)).slice(0, 60)}`)
  return ms
}

export function checkOrigin(origin: string): string {
  if (typeof origin !== 'string') throw new StableMemError('invalid_input', 'forget: origin must be a string')
  return origin.slice(0, 256)
}
