import { mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { cjkIndexText, withoutCjk } from '../text/cjk.ts'
import { canonicalText, hasLoneSurrogate } from '../text/normalize.ts'
import { blockId } from './block-id.ts'
import { migrate, schemaVersion } from './schema.ts'
import type { Block, CommitInput, CommitResult, Edge, EdgeInput, StoreStats } from './types.ts'
import { VectorTable } from './vectors.ts'

/** Options for opening a store file. */
export interface StoreOptions {
  /** Longest accepted block text, in UTF-16 code units after normalisation. */
  maxBlockChars?: number
  /** How long a writer waits for another process's lock before failing, in ms. */
  busyTimeoutMs?: number
  /** Clock, injectable for deterministic tests. */
  now?: () => number
}

/** Default upper bound for one block's text: memory notes are short; documents belong elsewhere. */
export const DEFAULT_MAX_BLOCK_CHARS = 32_768

/** Distinct FTS expressions whose match counts are kept between writes. */
const MATCH_COUNT_CACHE = 50_000

/** Longest accepted metadata value (source, scene, semantic type, edge fields). */
const MAX_TAG_CHARS = 256

/** Columns every block read uses, in one place so readers cannot drift apart. */
const BLOCK_COLUMNS = 'id, text, source, scene, semantic_type, created_at, updated_at, access_count, last_access_at, superseded_by'

/** A candidate row from the full-text index, with FTS5's bm25 (lower is better). */
export interface FtsCandidate {
  rowid: number
  bm25: number
}

/**
 * The durable block store: one SQLite file, content-addressed blocks, edges, and an FTS5 index
 * that can find Chinese text without a tokenizer extension. All methods are synchronous
 * (node:sqlite is), short, and transactional; the service wraps them for async callers.
 */
export class BlockStore {
  readonly path: string
  readonly maxBlockChars: number
  /** Block vectors and centroids (written by `lib/embed/`, after commit). */
  readonly vectors: VectorTable
  private readonly db: DatabaseSync
  private readonly now: () => number
  private readonly statements = new Map<string, StatementSync>()
  private readonly matchCounts = new Map<string, number>()
  private matchCountsVersion = -1
  private vocabReady = false
  private closed = false

  /** Opens (creating if needed) the store at `path`; `:memory:` gives a private in-memory store. */
  constructor(path: string, options: StoreOptions = {}) {
    this.path = path
    this.maxBlockChars = options.maxBlockChars ?? DEFAULT_MAX_BLOCK_CHARS
    this.now = options.now ?? Date.now
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    let db: DatabaseSync
    try {
      db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5000 })
    } catch (error) {
      throw new StableMemError('unavailable', `cannot open store ${path}: ${(error as Error).message}`, { cause: error })
    }
    try {
      if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL')
      db.exec('PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON')
      migrate(db)
    } catch (error) {
      db.close()
      if (error instanceof StableMemError) throw error
      throw new StableMemError('unavailable', `cannot use store ${path}: ${(error as Error).message}`, { cause: error })
    }
    this.db = db
    this.vectors = new VectorTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now() })
  }

  /** Stores one block; idempotent by content. See `commitMany`. */
  commit(input: CommitInput): CommitResult {
    return this.commitMany([input])[0]!
  }

  /**
   * Stores blocks in one transaction. A block that already exists keeps its text and creation
   * time; non-empty `source`, `scene` and `semanticType` update it, empty ones never blank it.
   * Every input is validated before anything is written, so a bad item rejects the whole batch.
   */
  commitMany(inputs: readonly CommitInput[]): CommitResult[] {
    const rows = inputs.map((input, i) => this.validate(input, inputs.length > 1 ? `inputs[${i}].` : ''))
    const now = this.now()
    const insert = this.stmt('insert', `INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING RETURNING rowid`)
    const update = this.stmt('update', `UPDATE blocks SET
      source = CASE WHEN ?1 <> '' THEN ?1 ELSE source END,
      scene = CASE WHEN ?2 <> '' THEN ?2 ELSE scene END,
      semantic_type = CASE WHEN ?3 <> '' THEN ?3 ELSE semantic_type END,
      updated_at = CASE WHEN ?1 <> '' OR ?2 <> '' OR ?3 <> '' THEN ?4 ELSE updated_at END
      WHERE id = ?5`)
    const index = this.stmt('index', 'INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
    this.matchCounts.clear()
    return this.transaction(() => rows.map((row) => {
      const inserted = insert.get(row.id, row.text, row.source, row.scene, row.semanticType, now, now) as { rowid: number } | undefined
      if (inserted) index.run(inserted.rowid, withoutCjk(row.text), cjkIndexText(row.text))
      else update.run(row.source, row.scene, row.semanticType, now, row.id)
      if (row.supersedes !== '') this.supersede(row.id, row.supersedes, now)
      return { id: row.id, created: inserted !== undefined }
    }))
  }

  /** Marks `oldId` as replaced by `newId` and records the edge; runs inside a commit's transaction. */
  private supersede(newId: string, oldId: string, now: number): void {
    if (oldId === newId) throw new StableMemError('invalid_input', 'supersedes: a block cannot supersede itself')
    const marked = this.stmt('supersede', 'UPDATE blocks SET superseded_by = ? WHERE id = ?').run(newId, oldId)
    if (Number(marked.changes) === 0) throw new StableMemError('not_found', `supersedes: no block ${oldId}`)
    this.stmt('link', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
      VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`).run('block', newId, 'block', oldId, 'supersedes', now)
  }

  /** The block with this id, or undefined. */
  get(id: string): Block | undefined {
    const row = this.stmt('get', `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE id = ?`).get(id)
    return row ? toBlock(row) : undefined
  }

  /** Blocks by FTS rowid, in the order asked; missing rowids are skipped. One query for the whole list. */
  blocksByRowid(rowids: readonly number[]): Map<number, Block> {
    const out = new Map<number, Block>()
    if (rowids.length === 0) return out
    const rows = this.stmt('byRowids', `SELECT rowid, ${BLOCK_COLUMNS} FROM blocks WHERE rowid IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(rowids))
    const byRowid = new Map(rows.map((row) => [Number(row.rowid), row]))
    for (const rowid of rowids) {
      const row = byRowid.get(rowid)
      if (row) out.set(rowid, toBlock(row))
    }
    return out
  }

  /**
   * Runs an FTS5 MATCH expression and returns up to `limit` candidates by bm25 with the given
   * column weights. The expression must come from `lib/recall/fts-query.ts`, which quotes
   * every term; user text never reaches MATCH directly.
   */
  ftsCandidates(match: string, limit: number, weights: readonly [number, number] = [1, 1]): FtsCandidate[] {
    const sql = `SELECT rowid, bm25(blocks_fts, ?, ?) AS bm25 FROM blocks_fts WHERE blocks_fts MATCH ? ORDER BY bm25 LIMIT ?`
    const rows = this.stmt('fts', sql).all(weights[0], weights[1], match, limit) as Array<{ rowid: number, bm25: number }>
    return rows.map((r) => ({ rowid: Number(r.rowid), bm25: Number(r.bm25) }))
  }

  /**
   * How many blocks match an FTS5 expression (from `lib/recall/fts-query.ts`): a term's document
   * frequency, which recall turns into IDF weights. Cached until the next write by this or any
   * other connection (`PRAGMA data_version`), so a store read far more than written pays once per term.
   */
  matchCount(match: string): number {
    const version = Number((this.stmt('dataVersion', 'PRAGMA data_version').get() as { data_version: number }).data_version)
    if (version !== this.matchCountsVersion) {
      this.matchCounts.clear()
      this.matchCountsVersion = version
    }
    const cached = this.matchCounts.get(match)
    if (cached !== undefined) return cached
    const row = this.stmt('matchCount', 'SELECT count(*) AS n FROM blocks_fts WHERE blocks_fts MATCH ?').get(match) as { n: number }
    if (this.matchCounts.size >= MATCH_COUNT_CACHE) this.matchCounts.clear()
    const n = Number(row.n)
    this.matchCounts.set(match, n)
    return n
  }

  /**
   * How many blocks contain each of these CJK bigrams (document frequency in the `cjk` column),
   * in one read of the FTS index's vocabulary; absent bigrams are missing from the map. Recall
   * uses it to keep a long query's most specific bigrams.
   */
  cjkDocumentFrequencies(bigrams: readonly string[]): Map<string, number> {
    const out = new Map<string, number>()
    if (bigrams.length === 0) return out
    if (!this.vocabReady) {
      this.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stablemem_vocab USING fts5vocab(main, 'blocks_fts', 'col')")
      this.vocabReady = true
    }
    const rows = this.stmt('vocab', `SELECT term, doc FROM temp.stablemem_vocab
      WHERE col = 'cjk' AND term IN (SELECT value FROM json_each(?))`).all(JSON.stringify(bigrams))
    for (const row of rows) out.set(String(row.term), Number(row.doc))
    return out
  }

  /** Records that these blocks were recalled (count and last access time), for later cooling. */
  recordAccess(ids: readonly string[]): void {
    if (ids.length === 0) return
    const now = this.now()
    const touch = this.stmt('touch', 'UPDATE blocks SET access_count = access_count + 1, last_access_at = ? WHERE id = ?')
    this.transaction(() => { for (const id of ids) touch.run(now, id) })
  }

  /**
   * Records a directed edge; idempotent per (source kind, source id, target kind, target id, type).
   * A `block` endpoint must exist, so an edge can never point at nothing.
   */
  link(edge: EdgeInput): { created: boolean } {
    for (const field of ['sourceKind', 'sourceId', 'targetKind', 'targetId', 'type'] as const) {
      checkTag(edge[field], field, true)
    }
    for (const [kind, id, field] of [[edge.sourceKind, edge.sourceId, 'sourceId'], [edge.targetKind, edge.targetId, 'targetId']] as const) {
      if (kind === 'block' && !this.get(id)) throw new StableMemError('not_found', `${field}: no block ${id}`)
    }
    const result = this.stmt('link', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
      VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
      .run(edge.sourceKind, edge.sourceId, edge.targetKind, edge.targetId, edge.type, this.now())
    return { created: Number(result.changes) > 0 }
  }

  /** Edges that touch the node, in both directions, oldest first. */
  edgesOf(kind: string, id: string): Edge[] {
    const rows = this.stmt('edgesOf', `SELECT source_kind, source_id, target_kind, target_id, type, created_at FROM edges
      WHERE (source_kind = ?1 AND source_id = ?2) OR (target_kind = ?1 AND target_id = ?2) ORDER BY created_at, id`).all(kind, id)
    return rows.map((r) => ({
      sourceKind: String(r.source_kind), sourceId: String(r.source_id), targetKind: String(r.target_kind),
      targetId: String(r.target_id), type: String(r.type), createdAt: Number(r.created_at),
    }))
  }

  /** Counts and file facts. */
  stats(): StoreStats {
    const counts = this.stmt('stats', `SELECT (SELECT count(*) FROM blocks) AS blocks, (SELECT count(*) FROM edges) AS edges,
      (SELECT max(updated_at) FROM blocks) AS last_write`).get() as { blocks: number, edges: number, last_write: number | null }
    return {
      blocks: Number(counts.blocks),
      edges: Number(counts.edges),
      schemaVersion: schemaVersion(this.db),
      path: this.path,
      fileBytes: this.fileBytes(),
      lastWriteAt: counts.last_write === null ? null : Number(counts.last_write),
    }
  }

  /** Total number of blocks (cheap; used by the prompt context line every step). */
  count(): number {
    return Number((this.stmt('count', 'SELECT count(*) AS n FROM blocks').get() as { n: number }).n)
  }

  /** Runs SQLite's integrity check; `['ok']` when the file is sound. */
  integrityCheck(): string[] {
    return this.db.prepare('PRAGMA integrity_check').all().map((r) => String(r.integrity_check))
  }

  /** True once `close()` ran. */
  get isClosed(): boolean {
    return this.closed
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.statements.clear()
    this.db.close()
  }

  /** Runs `fn` in one IMMEDIATE transaction, so concurrent writers queue instead of failing mid-way. */
  transaction<T>(fn: () => T): T {
    this.assertOpen()
    this.db.exec('BEGIN IMMEDIATE')
    try {
      const result = fn()
      this.db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK')
      throw error
    }
  }

  private validate(input: CommitInput, prefix: string): Required<CommitInput> & { id: string } {
    if (input === null || typeof input !== 'object') throw new StableMemError('invalid_input', `${prefix || 'input'} must be an object with a text field`)
    if (typeof input.text !== 'string') throw new StableMemError('invalid_input', `${prefix}text must be a string`)
    if (hasLoneSurrogate(input.text)) {
      throw new StableMemError('invalid_input', `${prefix}text contains an unpaired UTF-16 surrogate and cannot be stored without loss`)
    }
    const text = canonicalText(input.text)
    if (text.length === 0) throw new StableMemError('invalid_input', `${prefix}text is empty`)
    if (text.length > this.maxBlockChars) {
      throw new StableMemError('too_large', `${prefix}text has ${text.length} characters; the limit is ${this.maxBlockChars} (config maxBlockChars)`)
    }
    return {
      id: blockId(text),
      text,
      source: checkTag(input.source ?? '', `${prefix}source`, false),
      scene: checkTag(input.scene ?? '', `${prefix}scene`, false),
      semanticType: checkTag(input.semanticType ?? '', `${prefix}semanticType`, false),
      supersedes: checkTag(input.supersedes ?? '', `${prefix}supersedes`, false),
    }
  }

  private stmt(key: string, sql: string): StatementSync {
    this.assertOpen()
    let statement = this.statements.get(key)
    if (!statement) {
      statement = this.db.prepare(sql)
      this.statements.set(key, statement)
    }
    return statement
  }

  private assertOpen(): void {
    if (this.closed) throw new StableMemError('unavailable', `store ${this.path} is closed`)
  }

  private fileBytes(): number {
    if (this.path === ':memory:') return 0
    let total = 0
    for (const suffix of ['', '-wal']) {
      try { total += statSync(this.path + suffix).size } catch { /* absent file counts as zero */ }
    }
    return total
  }
}

function checkTag(value: unknown, field: string, required: boolean): string {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `${field} must be a string`)
  if (required && value.trim() === '') throw new StableMemError('invalid_input', `${field} is empty`)
  if (value.length > MAX_TAG_CHARS) throw new StableMemError('too_large', `${field} is longer than ${MAX_TAG_CHARS} characters`)
  if (hasLoneSurrogate(value) || value.includes('\0')) throw new StableMemError('invalid_input', `${field} contains NUL or an unpaired surrogate`)
  return value.normalize('NFC').trim()
}

function toBlock(row: Record<string, unknown>): Block {
  return {
    id: String(row.id),
    text: String(row.text),
    source: String(row.source),
    scene: String(row.scene),
    semanticType: String(row.semantic_type),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    accessCount: Number(row.access_count),
    lastAccessAt: row.last_access_at === null ? null : Number(row.last_access_at),
    supersededBy: row.superseded_by === null ? null : String(row.superseded_by),
  }
}

