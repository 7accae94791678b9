/**
 * The JSON Lines export format read back: the header's format name and version, and one line
 * parsed into a record, every field checked for its type and range (`import-numbers.ts`) before
 * the line touches the store, with errors that name the record and field. `transfer.ts` writes the
 * format and applies the records.
 */
import { StableMemError } from '../errors.ts'
import { checkCount, checkTime } from './import-numbers.ts'
import type { Layer, LayerState, Origin } from './layers.ts'
import type { Block, Edge } from './types.ts'

/** The `format` field of the header line. */
export const EXPORT_FORMAT = 'dsh-stablemem'
/**
 * The export format version this code writes and the newest it reads. Version 2 added the block's
 * `layer` and cooling state and the `origin` records; version 1 files (every block a stable note)
 * still import.
 */
export const EXPORT_VERSION = 2

/** One line of an export, parsed and checked. */
export type ImportRecord = { kind: 'block', block: Block, scopes?: string[], state?: LayerState }
  | { kind: 'edge', edge: Edge }
  | { kind: 'origin', origin: Origin & { blockId: string, capturedAt: number } }

/** Parses one line; undefined for the header. Throws with a plain message on anything else. */
export function parseRecord(text: string, lineNo: number): ImportRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new StableMemError('invalid_input', 'not valid JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StableMemError('invalid_input', 'not a JSON object')
  const record = value as Record<string, unknown>
  switch (record.record) {
    case 'header':
      if (lineNo !== 1) throw new StableMemError('invalid_input', 'a header is only allowed on the first line')
      if (record.format !== EXPORT_FORMAT) throw new StableMemError('invalid_input', `not a ${EXPORT_FORMAT} export (format ${JSON.stringify(record.format)})`)
      if (!Number.isSafeInteger(record.version) || (record.version as number) < 1) {
        throw new StableMemError('invalid_input', `header version must be a whole number from 1, not ${JSON.stringify(record.version)}`)
      }
      if ((record.version as number) > EXPORT_VERSION) {
        throw new StableMemError('invalid_input', `export version ${String(record.version)} is newer than this dsh-stablemem reads (${EXPORT_VERSION}); upgrade the package`)
      }
      return undefined
    case 'block':
      return {
        kind: 'block',
        block: {
          id: field(record, 'id'), text: field(record, 'text'),
          source: field(record, 'source'), scene: field(record, 'scene'),
          semanticType: field(record, 'semanticType'),
          createdAt: time(record, 'createdAt'), updatedAt: time(record, 'updatedAt'),
          accessCount: count(record, 'accessCount'),
          lastAccessAt: record.lastAccessAt === null ? null : time(record, 'lastAccessAt'),
          // Absent in exports made before supersede existed: such a block is current.
          supersededBy: record.supersededBy === undefined || record.supersededBy === null ? null : field(record, 'supersededBy'),
        },
        // Absent in exports made before scopes existed: such a block is imported as global.
        ...(record.scopes === undefined ? {} : { scopes: scopeList(record.scopes) }),
        // Absent in exports made before layers existed (version 1): such a block is a stable note.
        ...(record.layer === undefined ? {} : { state: layerState(record) }),
      }
    case 'origin':
      return {
        kind: 'origin',
        origin: {
          blockId: field(record, 'blockId'), sessionId: field(record, 'sessionId'),
          seq: count(record, 'seq'), eventType: field(record, 'eventType'), role: field(record, 'role'),
          eventTime: time(record, 'eventTime'), compactionId: field(record, 'compactionId'), capturedAt: time(record, 'capturedAt'),
        },
      }
    case 'edge':
      return {
        kind: 'edge',
        edge: {
          sourceKind: field(record, 'sourceKind'), sourceId: field(record, 'sourceId'),
          targetKind: field(record, 'targetKind'), targetId: field(record, 'targetId'),
          type: field(record, 'type'), createdAt: time(record, 'createdAt'),
        },
      }
    default:
      throw new StableMemError('invalid_input', `unknown record ${JSON.stringify(record.record)} (expected header, block, edge or origin)`)
  }
}

/** A record field that must be a string (ids, text, tags, labels; their content is checked where they are stored). */
function field(record: Record<string, unknown>, name: string): string {
  const value = record[name]
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `${String(record.record)} field ${name} must be a string`)
  return value
}

/**
 * A record field that is a count (`accessCount`, `coolAttempts`, `seq`), checked here so the
 * error names the record and field; the rules are the store's (`import-numbers.ts`).
 */
function count(record: Record<string, unknown>, name: string): number {
  return checkCount(record[name], `${String(record.record)} field ${name}`)
}

/** A record field that is a time in ms since the epoch (every `…At` and `eventTime`), as `count`. */
function time(record: Record<string, unknown>, name: string): number {
  return checkTime(record[name], `${String(record.record)} field ${name}`)
}

/** The layer and cooling state of a block record (cooling fields absent: never tried). */
function layerState(record: Record<string, unknown>): LayerState {
  const layer = record.layer
  if (layer !== 'stable' && layer !== 'cold') throw new StableMemError('invalid_input', `block field layer must be "stable" or "cold", not ${JSON.stringify(layer)}`)
  const coolState = record.coolState === undefined ? '' : field(record, 'coolState')
  if (!['', 'distilled', 'undistilled'].includes(coolState)) throw new StableMemError('invalid_input', `block field coolState must be "", "distilled" or "undistilled", not ${JSON.stringify(coolState)}`)
  return {
    layer: layer as Layer, coolState,
    coolAttempts: record.coolAttempts === undefined ? 0 : count(record, 'coolAttempts'),
    coolNextAt: record.coolNextAt === undefined ? 0 : time(record, 'coolNextAt'),
  }
}

/** The `scopes` field of a block record: a non-empty array of strings (the store checks each key). */
function scopeList(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((s) => typeof s === 'string')) {
    throw new StableMemError('invalid_input', 'block field scopes must be a non-empty array of scope strings')
  }
  return value as string[]
}
