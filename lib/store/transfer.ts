/**
 * Moving a store's contents in and out as files: a lossless JSON Lines format (one header line,
 * then every block, then every edge) that `importJsonl` restores exactly, and a Markdown view for
 * people. Import is idempotent and stops at the first bad line, keeping every line before it.
 */
import { StableMemError } from '../errors.ts'
import type { BlockStore } from './store.ts'
import type { Block, Edge } from './types.ts'

/** The `format` field of the header line. */
export const EXPORT_FORMAT = 'dsh-stablemem'
/** The export format version this code writes and the newest it reads. */
export const EXPORT_VERSION = 1

/** Lines written to the store per transaction while importing. */
const IMPORT_BATCH = 500

/** Counts of one export. */
export interface ExportCounts {
  blocks: number
  edges: number
}

/**
 * The export as JSON Lines, one string per line without the newline: a header, every block in
 * insertion order, then every edge. Lazy, so a large store streams instead of filling memory.
 */
export function * exportJsonl(store: BlockStore, counts: ExportCounts = { blocks: 0, edges: 0 }, now: number = Date.now()): Generator<string> {
  yield JSON.stringify({ record: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: now })
  for (const block of store.allBlocks()) {
    counts.blocks++
    yield JSON.stringify({ record: 'block', ...block })
  }
  for (const edge of store.allEdges()) {
    counts.edges++
    yield JSON.stringify({ record: 'edge', ...edge })
  }
}

/** A readable Markdown rendering of the store, one section per block with its edges. Not importable. */
export function * exportMarkdown(store: BlockStore, counts: ExportCounts = { blocks: 0, edges: 0 }, now: number = Date.now()): Generator<string> {
  const stats = store.stats()
  counts.edges = stats.edges
  yield '# dsh-stablemem export'
  yield ''
  yield `${stats.blocks} blocks, ${stats.edges} edges, exported ${new Date(now).toISOString()}.`
  for (const block of store.allBlocks()) {
    counts.blocks++
    yield ''
    yield `## ${block.id}`
    yield ''
    for (const line of block.text.split(/\r\n|\r|\n/)) yield `> ${line}`
    yield ''
    const tags = [['source', block.source], ['scene', block.scene], ['type', block.semanticType]].filter(([, v]) => v !== '')
    for (const [key, value] of tags) yield `- ${key}: \`${value}\``
    yield `- created ${iso(block.createdAt)}, updated ${iso(block.updatedAt)}`
    yield `- recalled ${block.accessCount} time${block.accessCount === 1 ? '' : 's'}${block.lastAccessAt === null ? '' : `, last ${iso(block.lastAccessAt)}`}`
    for (const edge of store.edgesOf('block', block.id)) {
      if (edge.sourceKind === 'block' && edge.sourceId === block.id) {
        yield `- ${edge.type} → ${edge.targetKind} \`${edge.targetId}\``
      } else {
        yield `- ${edge.type} ← ${edge.sourceKind} \`${edge.sourceId}\``
      }
    }
  }
}

/** Progress of a running import. */
export interface ImportProgress {
  /** Lines read so far. */
  lines: number
}

/** What an import did. `failure` is set when it stopped at a bad line; everything before it is stored. */
export interface ImportResult {
  lines: number
  blocksCreated: number
  blocksMerged: number
  edgesCreated: number
  edgesExisting: number
  /**
   * Blocks of notes this store forgot, and edges touching them, left out (present only when not
   * zero; `includeForgotten` brings them back instead).
   */
  blocksForgotten?: number
  edgesForgotten?: number
  failure?: { line: number, message: string }
}

/**
 * Restores a JSON Lines export into `store`. Lines are applied in batches of one transaction
 * each; the first malformed or refused line stops the import, and the result names it while every
 * line before it stays imported. Blank lines are skipped; the header, when present, must be the
 * first line and of a version this code reads. Re-importing the same file changes nothing.
 * Notes this store forgot (tombstoned by `forget`) and their edges are skipped and counted,
 * unless `includeForgotten`.
 */
export async function importJsonl(store: BlockStore, lines: AsyncIterable<string> | Iterable<string>,
  options: { onProgress?: (progress: ImportProgress) => void, progressEvery?: number, includeForgotten?: boolean } = {}): Promise<ImportResult> {
  const result: ImportResult = { lines: 0, blocksCreated: 0, blocksMerged: 0, edgesCreated: 0, edgesExisting: 0 }
  const every = options.progressEvery ?? 1000
  let batch: Array<{ line: number, record: ImportRecord }> = []
  const flush = (): boolean => {
    const pending = batch
    batch = []
    if (pending.length === 0) return true
    store.transaction(() => {
      for (const { line, record } of pending) {
        try {
          apply(store, record, result, options.includeForgotten === true)
        } catch (error) {
          result.failure = { line, message: messageOf(error) }
          return
        }
      }
    })
    return result.failure === undefined
  }
  let lineNo = 0
  for await (const raw of lines) {
    lineNo++
    const text = lineNo === 1 ? raw.replace(/^\uFEFF/, '') : raw
    if (text.trim() === '') continue
    let record: ImportRecord | undefined
    try {
      record = parseRecord(text, lineNo)
    } catch (error) {
      if (flush()) result.failure = { line: lineNo, message: messageOf(error) }
      break
    }
    if (record !== undefined) batch.push({ line: lineNo, record })
    if (batch.length >= IMPORT_BATCH && !flush()) break
    if (options.onProgress && lineNo % every === 0) options.onProgress({ lines: lineNo })
  }
  if (result.failure === undefined) flush()
  result.lines = result.failure === undefined ? lineNo : result.failure.line - 1
  return result
}

type ImportRecord = { kind: 'block', block: Block } | { kind: 'edge', edge: Edge }

/** Parses one line; undefined for the header. Throws with a plain message on anything else. */
function parseRecord(text: string, lineNo: number): ImportRecord | undefined {
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
      if (typeof record.version !== 'number' || record.version > EXPORT_VERSION) {
        throw new StableMemError('invalid_input', `export version ${String(record.version)} is newer than this dsh-stablemem reads (${EXPORT_VERSION}); upgrade the package`)
      }
      return undefined
    case 'block':
      return {
        kind: 'block',
        block: {
          id: field(record, 'id', 'string'), text: field(record, 'text', 'string'),
          source: field(record, 'source', 'string'), scene: field(record, 'scene', 'string'),
          semanticType: field(record, 'semanticType', 'string'),
          createdAt: field(record, 'createdAt', 'number'), updatedAt: field(record, 'updatedAt', 'number'),
          accessCount: field(record, 'accessCount', 'number'),
          lastAccessAt: record.lastAccessAt === null ? null : field(record, 'lastAccessAt', 'number'),
          // Absent in exports made before supersede existed: such a block is current.
          supersededBy: record.supersededBy === undefined || record.supersededBy === null ? null : field(record, 'supersededBy', 'string'),
        },
      }
    case 'edge':
      return {
        kind: 'edge',
        edge: {
          sourceKind: field(record, 'sourceKind', 'string'), sourceId: field(record, 'sourceId', 'string'),
          targetKind: field(record, 'targetKind', 'string'), targetId: field(record, 'targetId', 'string'),
          type: field(record, 'type', 'string'), createdAt: field(record, 'createdAt', 'number'),
        },
      }
    default:
      throw new StableMemError('invalid_input', `unknown record ${JSON.stringify(record.record)} (expected header, block or edge)`)
  }
}

function field<K extends 'string' | 'number'>(record: Record<string, unknown>, name: string, kind: K): K extends 'string' ? string : number {
  const value = record[name]
  if (typeof value !== kind) throw new StableMemError('invalid_input', `${String(record.record)} field ${name} must be a ${kind}`)
  return value as K extends 'string' ? string : number
}

function apply(store: BlockStore, record: ImportRecord, result: ImportResult, includeForgotten: boolean): void {
  if (!includeForgotten && forgottenRecord(store, record)) {
    const field = record.kind === 'block' ? 'blocksForgotten' : 'edgesForgotten'
    result[field] = (result[field] ?? 0) + 1
    return
  }
  if (record.kind === 'block') {
    if (store.importBlock(record.block).created) result.blocksCreated++
    else result.blocksMerged++
  } else if (store.importEdge(record.edge).created) {
    result.edgesCreated++
  } else {
    result.edgesExisting++
  }
}

/** A block `forget` deleted from this store (its tombstone is there), or an edge that touches one. */
function forgottenRecord(store: BlockStore, record: ImportRecord): boolean {
  if (record.kind === 'block') return store.isForgotten(record.block.id)
  const { sourceKind, sourceId, targetKind, targetId } = record.edge
  return (sourceKind.trim() === 'block' && store.isForgotten(sourceId.trim())) || (targetKind.trim() === 'block' && store.isForgotten(targetId.trim()))
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
