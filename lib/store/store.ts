/**
 * The store's one class, `BlockStore`: it opens the file and owns the connection, and each concern
 * is a module it lends its statements to (commit.ts, import-rows.ts, fts-reads.ts, forget.ts …).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import type { SecretsPolicy } from '../secrets.ts'
import { nearKey } from '../text/near-key.ts'
import { tryWriteAccess, writeAccess, type AccessCounts, type AccessHost } from './access-writes.ts'
import { BLOCK_COLUMNS, BY_ROWIDS_SQL, blocksByRowid, toBlock } from './block-rows.ts'
import { BrowseTable } from './browse.ts'
import { commitBlocks, type CommitHost } from './commit.ts'
import { DUPLICATE_POLICIES, NearKeys, type DuplicatePolicy } from './duplicates.ts'
import { allEdges, edgesOf, insertEdge, type EdgeHost } from './edges.ts'
import { FtsReads } from './fts-reads.ts'
import { checkTime } from './import-numbers.ts'
import { ImportBatches } from './import-batch.ts'
import { importBlock, type ImportedBlock, type ImportHost } from './import-rows.ts'
import { forgetBlocks, vacuumStore, type ForgetHost, type ForgetOptions, type ForgetResult, type ForgetTarget, type VacuumResult } from './forget.ts'
import { ftsSegments, mergeDue, mergeIndex, mergeSlice, type MergeScope, type SliceOutcome, type UpkeepResult } from './fts-upkeep.ts'
import { removeIdleWalFiles } from './open-file.ts'
import { DEFAULT_MAX_BLOCK_CHARS, fileBytes, openStore, type StoreOptions } from './open-store.ts'
import { schemaVersion } from './schema.ts'
import { pendingScrubs, scrub, type PendingScrubs, type ScrubOptions, type ScrubResult } from './scrub.ts'
import { LayerTable, type Layer, type LayerState } from './layers.ts'
import { adopt, type ChainAccess } from './supersede.ts'
import { ScopeTable } from './scopes.ts'
import { SceneTable } from './scenes.ts'
import type { Block, CommitInput, CommitResult, Edge, EdgeInput, FtsCandidate, StoreStats } from './types.ts'
import { Transactions } from './transactions.ts'
import { validateInput } from './validate.ts'
import { VectorTable } from './vectors.ts'

export type { FtsCandidate } from './types.ts'
export { DEFAULT_MAX_BLOCK_CHARS, WAL_SIZE_LIMIT, type StoreOptions } from './open-store.ts'

/**
 * The durable block store: one SQLite file, content-addressed blocks, edges, and an FTS5 index
 * that can find Chinese text without a tokenizer extension. All methods are synchronous
 * (node:sqlite is), short, and transactional; the service wraps them for async callers.
 */
export class BlockStore {
  readonly path: string
  readonly maxBlockChars: number
  readonly secrets: SecretsPolicy
  readonly duplicates: DuplicatePolicy
  /** Block vectors and centroids (written by `lib/embed/`, after commit). */
  readonly vectors: VectorTable
  /** Holder layers, provenance of captured blocks and the kernel run log (`lib/store/layers.ts`). */
  readonly layers: LayerTable
  /** True when opened with `readOnly` (and the file needed no upgrade). */
  readonly readOnly: boolean
  /** Which scopes each block belongs to (`lib/store/scopes.ts`). */
  readonly scopes: ScopeTable
  /** Scenes, their features and the notes attached to them (`lib/store/scenes.ts`). */
  readonly scenes: SceneTable
  /** Pages, filters and note pages for the memory browser (`lib/store/browse.ts`). */
  readonly browse: BrowseTable
  private readonly nearKeys: NearKeys
  private forgets = 0
  private readonly db: DatabaseSync
  private readonly busyTimeoutMs: number
  /** WAL files that did not exist before a read-only open (removed on close when no one else uses them). */
  private readonly createdWalFiles: boolean
  private readonly now: () => number
  private readonly statements = new Map<string, StatementSync>()
  private readonly transactions: Transactions
  /** The supersede chain's view of this store (`supersede.ts`). */
  private readonly chain: ChainAccess = { stmt: (key, sql) => this.stmt(key, sql) }
  /** The full-text reads and their count cache (`fts-reads.ts`). */
  private readonly fts: FtsReads
  /** What the commit path, import and the edge table use of this store (`commit.ts`, `import-rows.ts`, `edges.ts`). */
  private readonly writer: CommitHost & ImportHost & EdgeHost
  /** Import's transactions and the index rows they write last (`import-batch.ts`). */
  private readonly imports: ImportBatches
  private closed = false

  /** Opens (creating if needed) the store at `path`; `:memory:` gives a private in-memory store. */
  constructor(path: string, options: StoreOptions = {}) {
    this.path = path
    this.maxBlockChars = options.maxBlockChars ?? DEFAULT_MAX_BLOCK_CHARS
    this.secrets = options.secrets ?? 'redact'
    this.duplicates = options.duplicates ?? 'link'
    if (!DUPLICATE_POLICIES.includes(this.duplicates)) throw new StableMemError('invalid_input', `duplicates must be one of ${DUPLICATE_POLICIES.join(', ')}`)
    this.now = options.now ?? Date.now
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000
    const { db, readOnly, createdWalFiles } = openStore(path, busyTimeoutMs, options)
    this.createdWalFiles = createdWalFiles
    this.readOnly = readOnly
    this.busyTimeoutMs = busyTimeoutMs
    this.db = db
    this.transactions = new Transactions(db)
    this.vectors = new VectorTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now() })
    this.layers = new LayerTable({
      stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(),
      commitMany: (inputs, createdAs) => this.commitMany(inputs, createdAs), link: (edge) => this.link(edge),
    })
    this.scopes = new ScopeTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(), count: () => this.count() })
    this.scenes = new SceneTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(), dataVersion: () => this.dataVersion(), inTransaction: () => this.db.isTransaction, rollbacks: () => this.transactions.rollbacks })
    this.imports = new ImportBatches({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), savepoint: (fn) => this.transactions.savepoint(fn), foldCount: () => { this.foldCount() } })
    this.nearKeys = new NearKeys({ stmt: (key, sql) => this.stmt(key, sql) }, nearKey)
    this.browse = new BrowseTable({ stmt: (key, sql) => this.stmt(key, sql), count: () => this.count() })
    this.fts = new FtsReads({ stmt: (key, sql) => this.stmt(key, sql), exec: (sql) => { this.db.exec(sql) }, dataVersion: () => this.dataVersion() })
    this.writer = {
      stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(),
      validate: (input, prefix, secrets?: SecretsPolicy) => validateInput(input, prefix, secrets ?? this.secrets, this.maxBlockChars),
      get: (id) => this.get(id), hasBlock: (id) => this.get(id) !== undefined,
      link: (edge, createdAt) => { insertEdge(this.writer, edge, createdAt, false) },
      foldCount: () => { this.foldCount() }, wrote: () => { this.fts.forgetCounts() }, index: (rowid, text) => { this.imports.index(rowid, text) },
      mergeState: (id, state) => { this.layers.mergeState(id, state) },
      secrets: this.secrets, duplicates: this.duplicates, nearKeys: this.nearKeys, scopes: this.scopes, scenes: this.scenes, chain: this.chain,
    }
  }

  /** Stores one block; idempotent by content. See `commitMany`. */
  commit(input: CommitInput): CommitResult {
    return this.commitMany([input])[0]!
  }

  /**
   * Stores blocks in one transaction. A block that already exists keeps its text and creation
   * time; non-empty `source`, `scene` and `semanticType` update it, empty ones never blank it.
   * Every input is validated before anything is written, so a bad item rejects the whole batch.
   * `createdAs` gives the layer and source a block this batch creates is written with (capture's
   * cold blocks: set in the insert rather than by a second write of the row); an existing block
   * keeps both.
   */
  commitMany(inputs: readonly CommitInput[], createdAs?: (index: number) => { layer: Layer, source: string }): CommitResult[] {
    return commitBlocks(this.writer, inputs, createdAs)
  }

  /** The block with this id, or undefined. */
  get(id: string): Block | undefined {
    const statement = this.stmt('get', `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE id = ?`)
    statement.setReturnArrays(true)
    const row = statement.get(id) as unknown as unknown[] | undefined
    return row ? toBlock(row) : undefined
  }

  /**
   * Blocks by FTS rowid, in the order asked; missing rowids are skipped. One statement for the
   * whole list (the rowids travel as one JSON array), so recall's 200 candidates cost one query,
   * not 200.
   */
  blocksByRowid(rowids: readonly number[]): Map<number, Block> {
    return blocksByRowid(this.stmt('byRowids', BY_ROWIDS_SQL), rowids)
  }

  /** Up to `limit` candidates for an FTS5 expression by bm25, or the newest `limit` (`FtsReads.candidates`). */
  ftsCandidates(match: string, limit: number, weights: readonly [number, number] = [1, 1], newest = false): FtsCandidate[] {
    return this.fts.candidates(match, limit, weights, newest)
  }

  /** How many blocks match an FTS5 expression, cached until any connection writes (`FtsReads.matchCount`). */
  matchCount(match: string): number {
    return this.fts.matchCount(match)
  }

  /** How many blocks contain each of these CJK bigrams, cached like `matchCount` (`FtsReads.cjkDocumentFrequencies`). */
  cjkDocumentFrequencies(bigrams: readonly string[]): Map<string, number> {
    return this.fts.cjkDocumentFrequencies(bigrams)
  }

  /** Rowids of up to `limit` blocks matching an FTS5 expression, unranked (`FtsReads.rowids`). */
  ftsRowids(match: string, limit: number): number[] {
    return this.fts.rowids(match, limit)
  }

  /**
   * Records that these blocks were recalled (count and last access time), for later cooling.
   * This runs inside every turn, so it skips the fsync (`synchronous = NORMAL` for this one
   * transaction): in WAL mode that can lose only the latest access counts on a power cut, never
   * a note and never the file's integrity, and it keeps a disk flush out of the turn's latency.
   */
  recordAccess(ids: readonly string[]): void {
    if (ids.length === 0) return
    const now = this.now()
    const counts = new Map<string, { count: number, at: number }>()
    for (const id of ids) counts.set(id, { count: (counts.get(id)?.count ?? 0) + 1, at: now })
    writeAccess(this.accessHost(), counts)
  }

  /**
   * `recordAccess` for counts gathered earlier (`count` accesses each, the latest at `at`), that
   * never waits for another connection's write lock: false, with nothing written, while one holds
   * it. The per-turn path uses it (`lib/store/access.ts`), so a turn never waits on an import or a
   * backfill in another process.
   */
  tryWriteAccess(counts: AccessCounts): boolean {
    return tryWriteAccess(this.accessHost(), counts)
  }

  /**
   * Records a directed edge; idempotent per (source kind, source id, target kind, target id, type).
   * A `block` endpoint must exist, so an edge can never point at nothing.
   */
  link(edge: EdgeInput): { created: boolean, redacted?: string[] } {
    return insertEdge(this.writer, edge, this.now(), false)
  }

  /** Edges that touch the node, in both directions, oldest first. */
  edgesOf(kind: string, id: string): Edge[] {
    return edgesOf(this.writer, kind, id)
  }

  /**
   * Hard-deletes notes, by id or by filter, with their index entries, vectors and edges, and
   * leaves no bytes of them in the file or its WAL: at return, or for a large forget without
   * `wait` once the scrub has run (`bytesPending`, `scrub`); see `lib/store/forget.ts`.
   */
  forget(target: ForgetTarget, options: ForgetOptions = {}): ForgetResult {
    const result = forgetBlocks(this.forgetHost(), target, options)
    if (!result.dryRun && result.deleted.length > 0) {
      this.fts.forgetCounts()
      this.forgets++
    }
    return result
  }

  /**
   * Scrubs the bytes a large forget left in the index and the WAL, in bounded slices
   * (`budgetMs`: a background host's turn); nothing to do when none is pending. lib/store/scrub.ts.
   */
  scrub(options: ScrubOptions = {}): ScrubResult {
    return scrub(this.forgetHost(), options)
  }

  /** Forgets whose bytes the scrub has not removed yet (`stats`, `doctor`). */
  pendingScrubs(): PendingScrubs {
    return pendingScrubs(this.forgetHost())
  }

  /** Rewrites the index and the file without free space (`stablemem vacuum`); see `lib/store/forget.ts`. */
  vacuum(): VacuumResult {
    this.assertOpen()
    const result = vacuumStore(this.forgetHost())
    this.fts.forgetCounts()
    return result
  }

  /** How many segments the full-text index has: each term lookup seeks every one (see `lib/store/fts-upkeep.ts`). */
  ftsSegments(): number {
    this.assertOpen()
    return ftsSegments(this.db)
  }

  /**
   * One bounded merge slice of the full-text index in its own transaction (`mergeSlice`), across
   * all levels unless `scope: 'levels'`: `wait: false` reports `busy` instead of waiting for
   * another process's write lock.
   */
  upkeepSlice(options: { pages?: number, wait?: boolean, scope?: MergeScope } = {}): SliceOutcome {
    this.assertOpen()
    return mergeSlice(this.db, this.busyTimeoutMs, options.pages, options.wait ?? true, options.scope)
  }

  /** Which merge the index's segments are worth, if any (`mergeDue`, lib/store/fts-upkeep.ts). */
  mergeDue(levelsDone: boolean): MergeScope | undefined {
    this.assertOpen()
    return mergeDue(this.db, levelsDone)
  }

  /**
   * Merges the full-text index into one segment in short transactions (`stablemem upkeep`, the end
   * of an import), which also finishes a pending scrub; see `mergeIndex` and `scrub`.
   */
  upkeep(): UpkeepResult {
    this.assertOpen()
    const result = mergeIndex(this.db, this.busyTimeoutMs)
    scrub(this.forgetHost())
    return result
  }

  /** True when `forget` deleted this id and it has not been stored again. */
  isForgotten(id: string): boolean {
    return this.stmt('tombstone', 'SELECT 1 AS x FROM tombstones WHERE id = ?').get(id) !== undefined && !this.get(id)
  }

  /** Changes whenever this connection forgot notes, so in-memory indexes (vectors) know to reload. */
  get forgetEpoch(): number {
    return this.forgets
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
      ftsSegments: ftsSegments(this.db),
      pendingScrubs: pendingScrubs(this.forgetHost()),
    }
  }

  /**
   * Total number of blocks; the prompt context line asks on every step. `count(*)` reads the
   * whole id index (65–144 ms at a million blocks), so the schema keeps the number of blocks up
   * to a rowid mark in one row (`block_count`, lib/store/schema.ts) and this adds the blocks
   * above the mark, which commit and import fold in as they write: one row read and a short
   * rowid range, always exact, whichever connection or code path wrote.
   */
  count(): number {
    return Number((this.stmt('count', 'SELECT n + (SELECT count(*) FROM blocks WHERE rowid > mark) AS n FROM block_count').get() as { n: number }).n)
  }

  /** Folds the blocks above the count's mark into its number (inside the writer's transaction); see `count`. */
  private foldCount(): void {
    this.stmt('foldCount', `UPDATE block_count SET n = n + (SELECT count(*) FROM blocks WHERE rowid > mark),
      mark = max(mark, coalesce((SELECT max(rowid) FROM blocks), 0))`).run()
    this.scopes.foldCounts() // the notes per scope, kept the same way (lib/store/scope-counts.ts)
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
    // Scene reinforcements still in memory are written now; if the file refuses, they are only counts.
    if (!this.readOnly && this.scenes.hasPending) {
      try { this.scenes.flush() } catch { /* a lost count, never a lost note */ }
    }
    this.closed = true
    this.statements.clear()
    this.db.close()
    if (this.readOnly && this.createdWalFiles) removeIdleWalFiles(this.path)
  }

  /**
   * Runs `fn` in one IMMEDIATE transaction, so concurrent writers queue instead of failing mid-way.
   * Called inside another transaction, `fn` joins it (the layer table commits several notes and
   * their provenance as one write).
   */
  transaction<T>(fn: () => T): T {
    this.assertOpen()
    return this.transactions.run(fn)
  }

  /** Every block in insertion order, read lazily so an export never holds the whole store in memory. */
  * allBlocks(): IterableIterator<Block> {
    this.assertOpen()
    const statement = this.db.prepare(`SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY rowid`)
    statement.setReturnArrays(true)
    for (const row of statement.iterate()) yield toBlock(row as unknown as unknown[])
  }

  /** Every edge in insertion order, read lazily (see `allBlocks`). */
  * allEdges(): IterableIterator<Edge> {
    this.assertOpen()
    yield * allEdges(this.db)
  }

  /**
   * Restores one exported block exactly (id, text, tags, times, access statistics, layer),
   * merging into an existing block of the same id; call it inside `transaction`
   * (`importTransaction`) to restore many blocks in one write. The rules are in
   * `lib/store/import-rows.ts`.
   */
  importBlock(block: Block, secrets: SecretsPolicy = 'refuse', scopes?: readonly string[], state?: LayerState): ImportedBlock {
    return importBlock(this.writer, block, secrets, scopes, state)
  }

  /**
   * Runs one batch of an import in one transaction (`transaction`): the index rows of its new
   * blocks are written after them, under the bulk options when many, and the block and scope
   * counts folded once at its end (lib/store/import-batch.ts).
   */
  importTransaction<T>(fn: () => T): T {
    return this.imports.run(fn)
  }

  /** Restores an imported `supersededBy` whose block arrived later in the file (see `importBlock`). */
  adoptSuccessor(id: string, successor: string): void {
    adopt(this.chain, id, successor)
  }

  /**
   * Runs `fn` inside a savepoint of the open transaction: if it throws, only its own writes are
   * undone. Import applies each line this way, so a refused line leaves nothing half-written.
   */
  savepoint<T>(fn: () => T): T {
    return this.imports.savepoint(fn)
  }

  /**
   * Restores one exported edge with its original creation time; idempotent like `link`, and a
   * `block` endpoint must already exist (export writes blocks before edges).
   */
  importEdge(edge: Edge): { created: boolean } {
    return insertEdge(this.writer, edge, checkTime(edge.createdAt, 'createdAt'), true)
  }

  /**
   * SQLite's `data_version`: changes when another connection writes the file (never for our own
   * writes), so the count caches know when to recount.
   */
  private dataVersion(): number {
    return Number((this.stmt('dataVersion', 'PRAGMA data_version').get() as { data_version: number }).data_version)
  }

  private accessHost(): AccessHost {
    return { db: this.db, busyTimeoutMs: this.busyTimeoutMs, stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn) }
  }

  private forgetHost(): ForgetHost {
    this.assertOpen()
    return {
      db: this.db,
      stmt: (key, sql) => this.stmt(key, sql),
      now: () => this.now(),
      fillNearKeys: () => { this.nearKeys.fill() },
      fileBytes: () => this.fileBytes(),
      busyTimeoutMs: this.busyTimeoutMs,
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
    return fileBytes(this.path)
  }
}
