/**
 * Moving a store's contents in and out as files: a lossless JSON Lines format (one header line,
 * then every block with its layer, then every edge, then every origin of a captured block) that `importJsonl` restores exactly, and a Markdown view for
 * people. Import is idempotent and stops at the first bad line, keeping every line before it.
 * Both views escape what a terminal would act on (`lib/text/terminal.ts`): the JSON Lines export
 * losslessly, as `\uXXXX`, the Markdown view visibly, as `\u{…}`.
 */
import { StableMemError } from '../errors.ts'
import { applySecretsPolicy, type SecretsPolicy } from '../secrets.ts'
import { LINE_BREAK } from '../text/invisible.ts'
import { escapeForDisplay, jsonForDisplay } from '../text/terminal.ts'
import { EXPORT_FORMAT, EXPORT_VERSION, parseRecord, type ImportRecord } from './export-format.ts'
import type { Origin } from './layers.ts'
import type { BlockStore } from './store.ts'
import { checkTag } from './tags.ts'

export { EXPORT_FORMAT, EXPORT_VERSION } from './export-format.ts'

/**
 * Lines an import writes per transaction, at most: each batch is written in the bulk path's shape
 * (lib/store/import-batch.ts), and larger batches cost less (at 100,000 notes, CPU per import:
 * batches of 10,000 +15%, 25,000 +6–13%, 50,000 +7% against one batch of 100,000), but a batch
 * holds the write lock while it is written, and every other writer of the file waits for it for
 * at most its busy timeout (5 s): a batch of 50,000 took 2–3 s on a loaded machine, one of
 * 100,000 about 5 s (docs/decisions.md, D26).
 */
const IMPORT_BATCH = 50_000

/**
 * Characters of line text a batch holds at most, whatever its line count: the batch's records
 * wait in memory until it is written, and a line may be 16 MiB, so 50,000 long notes would not fit
 * (a 1M-line import holds one batch at a time, never the file).
 */
const IMPORT_BATCH_CHARS = 32 << 20

/** Counts of one export. */
export interface ExportCounts {
  blocks: number
  edges: number
  /** Origin rows of captured blocks (JSON Lines only). */
  origins?: number
}

/**
 * The export as JSON Lines, one string per line without the newline: a header, every block in
 * insertion order (with its layer, and its cooling state when it has one), then every edge
 * (`derived_from` edges of distilled facts among them), then every origin row of a captured
 * block. Lazy, so a large store streams instead of filling memory.
 */
export function * exportJsonl(store: BlockStore, counts: ExportCounts = { blocks: 0, edges: 0 }, now: number = Date.now()): Generator<string> {
  yield JSON.stringify({ record: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: now })
  for (const block of store.allBlocks()) {
    counts.blocks++
    const state = store.layers.stateOf(block.id)!
    const cooling = state.coolState !== '' || state.coolAttempts > 0 || state.coolNextAt > 0
      ? { coolState: state.coolState, coolAttempts: state.coolAttempts, coolNextAt: state.coolNextAt } : {}
    yield jsonForDisplay({ record: 'block', ...block, scopes: store.scopes.of(block.id), layer: state.layer, ...cooling })
  }
  for (const edge of store.allEdges()) {
    counts.edges++
    yield jsonForDisplay({ record: 'edge', ...edge })
  }
  counts.origins = 0
  for (const origin of store.layers.allOrigins()) {
    counts.origins++
    yield jsonForDisplay({ record: 'origin', ...origin })
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
    for (const line of block.text.split(LINE_BREAK)) yield `> ${escapeForDisplay(line)}`
    yield ''
    const tags = [['source', block.source], ['scene', block.scene], ['type', block.semanticType]].filter(([, v]) => v !== '')
    for (const [key, value] of tags) yield `- ${key}: ${code(value!)}`
    yield `- scopes: ${store.scopes.of(block.id).map((s) => code(s)).join(', ')}`
    yield `- created ${iso(block.createdAt)}, updated ${iso(block.updatedAt)}`
    yield `- recalled ${block.accessCount} time${block.accessCount === 1 ? '' : 's'}${block.lastAccessAt === null ? '' : `, last ${iso(block.lastAccessAt)}`}`
    for (const edge of store.edgesOf('block', block.id)) {
      if (edge.sourceKind === 'block' && edge.sourceId === block.id) {
        yield `- ${escapeForDisplay(edge.type)} → ${escapeForDisplay(edge.targetKind)} ${code(edge.targetId)}`
      } else {
        yield `- ${escapeForDisplay(edge.type)} ← ${escapeForDisplay(edge.sourceKind)} ${code(edge.sourceId)}`
      }
    }
  }
}

/**
 * A tag as a Markdown code span on one line: controls, line breaks and invisible characters
 * escaped (a tag stored before tags were checked may hold a line break that would start a forged
 * section), inside a run of backticks longer than any in the value (CommonMark's rule), so a
 * backtick cannot end the span early.
 */
function code(value: string): string {
  const text = escapeForDisplay(value)
  const fence = '`'.repeat(Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length)) + 1)
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : ''
  return `${fence}${pad}${text}${pad}${fence}`
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
  /** Origin rows of captured blocks (present only when the file had any). */
  originsCreated?: number
  originsExisting?: number
  /**
   * Blocks of notes this store forgot, and edges touching them, left out (present only when not
   * zero; `includeForgotten` brings them back instead).
   */
  blocksForgotten?: number
  edgesForgotten?: number
  originsForgotten?: number
  /** Blocks whose text was stored masked (`secrets: 'redact'`), so their id changed; absent when none. */
  redacted?: Array<{ line: number, id: string, storedAs: string, kinds: string[] }>
  /**
   * Set when a line was refused. Import stops there, and every line before it is stored — except
   * a `supersededBy` that names a block found nowhere in the file or the store: that is only known
   * at the end, so its block was stored as current and `failure.line` is its line (`afterEnd`).
   */
  failure?: { line: number, message: string, afterEnd?: true }
}

/** How an import treats what it reads. */
export interface ImportOptions {
  onProgress?: (progress: ImportProgress) => void
  progressEvery?: number
  /**
   * Credentials in imported notes (default `refuse`: stop at the first). `allow` stores them as
   * exported (the export of a `secrets: allow` store); `redact` masks them, which changes the
   * note's id, and edges and supersede links in the file follow the new id.
   */
  secrets?: SecretsPolicy
  /** Import notes this store forgot (tombstoned by `forget`) and their edges too. */
  includeForgotten?: boolean
  /** Lines a transaction holds at most (default `IMPORT_BATCH`); the kill tests cross batches with fewer. */
  batchLines?: number
  /** Characters of line text a transaction holds at most (default `IMPORT_BATCH_CHARS`); tests bound it lower. */
  batchChars?: number
}

/**
 * Restores a JSON Lines export into `store`. Lines are applied in batches of one transaction each
 * (`IMPORT_BATCH` lines or `IMPORT_BATCH_CHARS` of text, whichever comes first), in the bulk
 * path's shape (`BlockStore.importTransaction`); a batch with a refused line is rolled back and
 * replayed line by line, each line in its own savepoint. The first malformed or refused line
 * stops the import, and the result names it while every line before it stays imported. Blank
 * lines are skipped; the header, when present, must be the first line and of a version this code
 * reads. An error thrown by `lines` itself (a line that is not UTF-8, or too long) is the next
 * line's failure. Re-importing the same file changes nothing. Notes this store forgot (tombstoned
 * by `forget`) and their edges are skipped and counted, unless `includeForgotten`.
 */
export async function importJsonl(store: BlockStore, lines: AsyncIterable<string> | Iterable<string>, options: ImportOptions = {}): Promise<ImportResult> {
  const result: ImportResult = { lines: 0, blocksCreated: 0, blocksMerged: 0, edgesCreated: 0, edgesExisting: 0 }
  const every = options.progressEvery ?? 1000
  const state: ImportState = { secrets: options.secrets ?? 'refuse', renamed: new Map(), pending: new Map() }
  const batchLines = options.batchLines ?? IMPORT_BATCH
  const maxBatchChars = options.batchChars ?? IMPORT_BATCH_CHARS
  let batch: Array<{ line: number, record: ImportRecord }> = []
  let batchChars = 0
  const includeForgotten = options.includeForgotten === true
  const flush = (): boolean => {
    const pending = batch
    batch = []
    batchChars = 0
    if (pending.length === 0) return true
    // The usual case, every line good: one transaction, no savepoint a line (each savepoint made
    // FTS5 write its pending terms out as a segment of its own, a third of an import's time).
    const restore = snapshot(state, result)
    let lineFailed = false
    try {
      store.importTransaction(() => {
        for (const { line, record } of pending) {
          try {
            apply(store, record, line, state, result, includeForgotten)
          } catch (error) {
            lineFailed = true
            throw error
          }
        }
      })
      return true
    } catch (error) {
      if (!lineFailed) throw error
      restore() // the batch rolled back: as if it had not run
    }
    // A line failed: the batch again, each line in its own savepoint, so the lines before it are kept.
    store.importTransaction(() => {
      for (const { line, record } of pending) {
        try {
          store.savepoint(() => apply(store, record, line, state, result, includeForgotten))
        } catch (error) {
          result.failure = { line, message: messageOf(error) }
          return
        }
      }
    })
    return result.failure === undefined
  }
  let lineNo = 0
  try {
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
      batchChars += text.length
      if ((batch.length >= batchLines || batchChars >= maxBatchChars) && !flush()) break
      if (options.onProgress && lineNo % every === 0) options.onProgress({ lines: lineNo })
    }
  } catch (error) {
    // The source could not give the next line (not UTF-8, too long, a read error).
    if (flush()) result.failure = { line: lineNo + 1, message: messageOf(error) }
  }
  if (result.failure === undefined) flush()
  result.lines = result.failure === undefined ? lineNo : result.failure.line - 1
  const [dangling] = state.pending.values()
  if (result.failure === undefined && dangling !== undefined) {
    result.failure = { line: dangling.line, afterEnd: true, message: `supersededBy ${dangling.successor} names a block that is neither in this file nor in the store; the block was imported as a current note` }
  }
  return result
}

/** Copies what a batch changes in the import's state and result; the function puts them back (after a rolled-back batch). */
function snapshot(state: ImportState, result: ImportResult): () => void {
  const renamed = new Map(state.renamed)
  const pending = new Map([...state.pending].map(([key, value]) => [key, { ...value, ids: [...value.ids] }]))
  const counts = structuredClone(result)
  return () => {
    state.renamed = renamed
    state.pending = pending
    for (const key of Object.keys(result)) if (!(key in counts)) delete (result as unknown as Record<string, unknown>)[key]
    Object.assign(result, counts)
  }
}

/** What an import carries from line to line. */
interface ImportState {
  secrets: SecretsPolicy
  /** Exported id → stored id, for blocks whose text was masked. */
  renamed: Map<string, string>
  /** Missing successor id → the blocks waiting for it (the first one's line is reported). */
  pending: Map<string, { line: number, successor: string, ids: string[] }>
}

function apply(store: BlockStore, record: ImportRecord, line: number, state: ImportState, result: ImportResult, includeForgotten: boolean): void {
  if (!includeForgotten && forgottenRecord(store, record)) {
    const field = record.kind === 'block' ? 'blocksForgotten' : record.kind === 'edge' ? 'edgesForgotten' : 'originsForgotten'
    result[field] = (result[field] ?? 0) + 1
    // Notes waiting for a forgotten successor stay current, as `forget` itself leaves them.
    if (record.kind === 'block') state.pending.delete(record.block.id)
    return
  }
  if (record.kind === 'edge') {
    const edge = { ...record.edge, sourceId: renamed(state, record.edge.sourceId), targetId: renamed(state, record.edge.targetId) }
    if (store.importEdge(edge).created) result.edgesCreated++
    else result.edgesExisting++
    return
  }
  if (record.kind === 'origin') {
    const origin = { ...record.origin, ...originLabels(record.origin, state.secrets), blockId: renamed(state, record.origin.blockId) }
    const created = store.layers.importOrigin(origin)
    const key = created ? 'originsCreated' : 'originsExisting'
    result[key] = (result[key] ?? 0) + 1
    return
  }
  const { block } = record
  const successor = block.supersededBy === null ? null : renamed(state, block.supersededBy)
  const imported = store.importBlock({ ...block, supersededBy: successor }, state.secrets, record.scopes, record.state)
  if (imported.id !== block.id) {
    state.renamed.set(block.id, imported.id)
    result.redacted ??= []
    result.redacted.push({ line, id: block.id, storedAs: imported.id, kinds: imported.redacted ?? [] })
  }
  if (imported.pending !== undefined) {
    const waiting = state.pending.get(imported.pending) ?? { line, successor: imported.pending, ids: [] }
    waiting.ids.push(imported.id)
    state.pending.set(imported.pending, waiting)
  }
  const waiters = state.pending.get(block.id)
  if (waiters !== undefined) {
    for (const id of waiters.ids) store.adoptSuccessor(id, imported.id)
    state.pending.delete(block.id)
  }
  if (imported.created) result.blocksCreated++
  else result.blocksMerged++
}

/**
 * The labels of an imported origin (session, event type, role, compaction) checked like tags,
 * under the import's secrets policy: a credential there is refused (`refuse`), masked (`redact`;
 * origins are not content-addressed, so masking changes no id) or kept (`allow`).
 */
function originLabels(origin: Origin, secrets: SecretsPolicy): Pick<Origin, 'sessionId' | 'eventType' | 'role' | 'compactionId'> {
  const label = (value: string, name: string, required: boolean): string => {
    const tag = checkTag(value, `origin field ${name}`, required, 'allow').value
    const { text, redacted } = applySecretsPolicy(tag, secrets === 'refuse' ? 'redact' : secrets, name)
    if (redacted.length > 0 && secrets === 'refuse') {
      throw new StableMemError('contains_secret', `origin field ${name} contains credentials (${redacted.join(', ')}); import refuses them unless told to keep them (secrets allow) or mask them (secrets redact)`)
    }
    return text
  }
  return { sessionId: label(origin.sessionId, 'sessionId', true), eventType: label(origin.eventType, 'eventType', true), role: label(origin.role, 'role', true), compactionId: label(origin.compactionId, 'compactionId', false) }
}

/** The id a block of the file is stored under (its masked text's id when it was redacted). */
function renamed(state: ImportState, id: string): string {
  return state.renamed.get(id) ?? id
}

/** A block `forget` deleted from this store (its tombstone is there), or an edge that touches one. */
function forgottenRecord(store: BlockStore, record: ImportRecord): boolean {
  if (record.kind === 'block') return store.isForgotten(record.block.id)
  if (record.kind === 'origin') return store.isForgotten(record.origin.blockId)
  const { sourceKind, sourceId, targetKind, targetId } = record.edge
  return (sourceKind.trim() === 'block' && store.isForgotten(sourceId.trim())) || (targetKind.trim() === 'block' && store.isForgotten(targetId.trim()))
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
