import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { applySecretsPolicy, type SecretsPolicy } from '../secrets.ts'
import { isInvisibleOnly } from '../text/invisible.ts'
import { nearKey } from '../text/near-key.ts'
import { canonicalText, hasLoneSurrogate } from '../text/normalize.ts'
import { blockId } from './block-id.ts'
import { BrowseTable } from './browse.ts'
import { DUPLICATE_POLICIES, NearKeys, type DuplicatePolicy } from './duplicates.ts'
import { isBusy } from './failure.ts'
import { BULK_NOTES, withBulkIndexing, type BulkIndexHost } from './fts-bulk.ts'
import { indexColumns } from './fts-columns.ts'
import { checkCount, checkTime } from './import-numbers.ts'
import { forgetBlocks, vacuumStore, type ForgetHost, type ForgetOptions, type ForgetResult, type ForgetTarget, type VacuumResult } from './forget.ts'
import { ftsSegments, mergeDue, mergeIndex, mergeSlice, type MergeScope, type SliceOutcome, type UpkeepResult } from './fts-upkeep.ts'
import { enterWalMode, openFile, probe, refuseForeign, removeIdleWalFiles } from './open-file.ts'
import { withoutFsync, withoutWaiting } from './pragmas.ts'
import { SCHEMA_VERSION, migrate, schemaVersion } from './schema.ts'
import { pendingScrubs, scrub, type PendingScrubs, type ScrubOptions, type ScrubResult } from './scrub.ts'
import { LayerTable, type Layer } from './layers.ts'
import { adopt, exists, mark, restore, type ChainAccess } from './supersede.ts'
import { checkTag } from './tags.ts'
import { checkScopeKey, GLOBAL_SCOPE } from './scope-key.ts'
import { ScopeTable } from './scopes.ts'
import { checkSceneKey } from './scene-key.ts'
import { SceneTable } from './scenes.ts'
import type { Block, CommitInput, CommitResult, Edge, EdgeInput, StoreStats } from './types.ts'
import { VectorTable } from './vectors.ts'

/** Options for opening a store file. */
export interface StoreOptions {
  /** Longest accepted block text, in UTF-16 code units after normalisation. */
  maxBlockChars?: number
  /** How long a writer waits for another process's lock before failing, in ms. */
  busyTimeoutMs?: number
  /** What commit does with credentials in a note (default `redact`; see `lib/secrets.ts`). */
  secrets?: SecretsPolicy
  /** What commit does with a near-duplicate of a current note (default `link`; see `lib/store/duplicates.ts`). */
  duplicates?: DuplicatePolicy
  /** Clock, injectable for deterministic tests. */
  now?: () => number
  /**
   * Open for reading only (the CLI's read commands): nothing is written, no journal is created,
   * and WAL files this open had to create are removed again on close. A file of an older schema
   * is still upgraded first, which needs write access.
   */
  readOnly?: boolean
  /**
   * The size the WAL file is cut back to once a checkpoint has copied it into the store (default
   * `WAL_SIZE_LIMIT`); -1 keeps SQLite's default of never shrinking it (for measurements).
   */
  walSizeLimitBytes?: number
}

/**
 * Bound of the WAL file once no reader holds an old snapshot: SQLite checkpoints every 1,000
 * pages (4 MiB) and then, with this limit, truncates the WAL to 4 MiB instead of keeping its
 * largest size for as long as any process has the file open. While a reader holds a snapshot
 * nothing after it can be checkpointed, so the WAL grows until that reader finishes
 * (docs/reliability.md has the measurement).
 */
export const WAL_SIZE_LIMIT = 4 << 20

/** Default upper bound for one block's text: memory notes are short; documents belong elsewhere. */
export const DEFAULT_MAX_BLOCK_CHARS = 32_768

/** Distinct FTS expressions whose match counts are kept between writes. */
const MATCH_COUNT_CACHE = 50_000

/**
 * SQLite's page cache per connection, in KiB (negative = KiB in the pragma). SQLite's default
 * (2 MiB) is smaller than the FTS index of a few thousand notes, so every commit and query
 * re-read evicted pages; 64 MiB is an upper bound, allocated only as pages are touched.
 */
const PAGE_CACHE_KIB = -65_536

/** Columns every block read uses, in one place so readers cannot drift apart (`toBlock` reads them by position). */
const BLOCK_COLUMNS = 'id, text, source, scene, semantic_type, created_at, updated_at, access_count, last_access_at, superseded_by'
/** Position of the rowid appended after `BLOCK_COLUMNS` in rows that carry it. */
const BLOCK_COLUMN_COUNT = BLOCK_COLUMNS.split(',').length

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
  /** Transactions and savepoints that rolled back (the scene cache reads again after one: `SceneTableDeps.rollbacks`). */
  private rollbacks = 0
  /** The supersede chain's view of this store (`supersede.ts`). */
  private readonly chain: ChainAccess = { stmt: (key, sql) => this.stmt(key, sql) }
  /** What the bulk index options need (`fts-bulk.ts`). */
  private readonly indexHost: BulkIndexHost = { stmt: (key, sql) => this.stmt(key, sql) }
  private readonly matchCounts = new Map<string, number>()
  private matchCountsVersion = -1
  private vocabReady = false
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
    let readOnly = options.readOnly === true && path !== ':memory:'
    this.createdWalFiles = readOnly && !existsSync(`${path}-wal`) && !existsSync(`${path}-shm`)
    if (!readOnly && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    let db = openFile(path, busyTimeoutMs, readOnly)
    try {
      refuseForeign(db, path)
      if (readOnly && schemaVersion(db) < SCHEMA_VERSION) {
        // This code reads only the current schema, so an older file is upgraded once, read-write.
        db.close()
        readOnly = false
        db = openFile(path, busyTimeoutMs, false)
        refuseForeign(db, path)
      }
      if (!readOnly && path !== ':memory:') enterWalMode(db, busyTimeoutMs, options.walSizeLimitBytes ?? WAL_SIZE_LIMIT)
      // secure_delete: freed pages and cells are zeroed, so `forget` leaves no bytes of a note behind.
      db.exec(`PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON; PRAGMA cache_size = ${PAGE_CACHE_KIB}`)
      if (!readOnly) migrate(db)
      probe(db, busyTimeoutMs, !readOnly)
    } catch (error) {
      db.close()
      if (error instanceof StableMemError) throw error
      throw new StableMemError('unavailable', `cannot use store ${path}: ${(error as Error).message}`, { cause: error })
    }
    this.readOnly = readOnly
    this.busyTimeoutMs = busyTimeoutMs
    this.db = db
    this.vectors = new VectorTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now() })
    this.layers = new LayerTable({
      stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(),
      commitMany: (inputs, createdAs) => this.commitMany(inputs, createdAs), link: (edge) => this.link(edge),
    })
    this.scopes = new ScopeTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(), count: () => this.count() })
    this.scenes = new SceneTable({ stmt: (key, sql) => this.stmt(key, sql), transaction: (fn) => this.transaction(fn), now: () => this.now(), dataVersion: () => this.dataVersion(), inTransaction: () => this.db.isTransaction, rollbacks: () => this.rollbacks })
    this.nearKeys = new NearKeys({ stmt: (key, sql) => this.stmt(key, sql) }, nearKey)
    this.browse = new BrowseTable({ stmt: (key, sql) => this.stmt(key, sql), count: () => this.count() })
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
    const rows = inputs.map((input, i) => this.validate(input, inputs.length > 1 ? `inputs[${i}].` : ''))
    const now = this.now()
    // No RETURNING: with it, node:sqlite's insert costs twice as much (measured by bench:perf);
    // `changes` and `lastInsertRowid` say the same thing. The near-duplicate key is written with
    // the row: setting it afterwards cost a second lookup, a row rewrite and an insert plus a
    // delete in the index of unkeyed rows, per note (docs/benchmarks.md, "Scale").
    const insert = this.stmt('insert', `INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at, near_key, layer)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`)
    const update = this.stmt('update', `UPDATE blocks SET
      source = CASE WHEN ?1 <> '' THEN ?1 ELSE source END,
      scene = CASE WHEN ?2 <> '' THEN ?2 ELSE scene END,
      semantic_type = CASE WHEN ?3 <> '' THEN ?3 ELSE semantic_type END,
      updated_at = CASE WHEN ?1 <> '' OR ?2 <> '' OR ?3 <> '' THEN ?4 ELSE updated_at END
      WHERE id = ?5`)
    const index = this.stmt('index', 'INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)')
    this.matchCounts.clear()
    const keys = rows.map((row) => nearKey(row.text))
    // The index rows are written after every block row of the batch, not beside each one: FTS5
    // flushes its pending terms to a new segment at every statement savepoint, and each block
    // insert opened one while `block_count` had an insert trigger, and any later trigger would
    // again. Interleaved, every note became a segment of its own that later merges rewrote
    // (docs/benchmarks.md, "Writes").
    const indexed: Array<[rowid: number | bigint, text: string]> = []
    const results = this.transaction(() => {
      const out = rows.map((row, i) => {
        if (i === 0) this.nearKeys.fill()
        const near = this.nearKeys.find(keys[i]!, row.id)
        const duplicateOf = near === row.supersedes ? undefined : near // replacing a note is not duplicating it
        if (duplicateOf !== undefined && this.duplicates === 'skip' && !this.get(row.id)) {
          this.scopes.join(duplicateOf, row.scope, now) // the kept note now also belongs to this scope
          if (row.scene !== '') this.scenes.tag(row.scene, duplicateOf, 1, now)
          return { id: duplicateOf, created: false, duplicateOf }
        }
        const as = createdAs?.(i)
        const inserted = insert.run(row.id, row.text, as?.source ?? row.source, row.scene, row.semanticType, now, now, keys[i]!, as?.layer ?? 'stable')
        const created = Number(inserted.changes) === 1
        let replaced: string | undefined
        if (created) {
          indexed.push([inserted.lastInsertRowid, row.text])
        } else {
          update.run(row.source, row.scene, row.semanticType, now, row.id)
          // Saying a replaced text again makes it current again: the later commit wins.
          replaced = restore(this.chain, row.id, now)
        }
        if (row.supersedes !== '') mark(this.chain, row.supersedes, row.id, now)
        const result: CommitResult = { id: row.id, created }
        if (replaced !== undefined) result.restored = replaced
        if (row.redacted.length > 0) result.redacted = row.redacted
        if (created) this.scopes.joinRowid(Number(inserted.lastInsertRowid), row.scope, now)
        else this.scopes.join(row.id, row.scope, now)
        if (row.scene !== '') this.scenes.tag(row.scene, row.id, 1, now)
        if (!created || duplicateOf === undefined) return result
        if (this.duplicates === 'link') this.insertEdge({ sourceKind: 'block', sourceId: row.id, targetKind: 'block', targetId: duplicateOf, type: 'duplicates' }, now, false)
        return { ...result, duplicateOf }
      })
      if (indexed.length > 0) this.foldCount()
      const writeIndex = () => { for (const [rowid, text] of indexed) index.run(rowid, ...indexColumns(text)) }
      // A large batch (a long transcript, `commitMany` of many notes) is indexed in a few large segments (lib/store/fts-bulk.ts).
      if (indexed.length >= BULK_NOTES) withBulkIndexing(this.indexHost, writeIndex)
      else writeIndex()
      return out
    })
    return results
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
    const out = new Map<number, Block>()
    if (rowids.length === 0) return out
    const statement = this.stmt('byRowids', `SELECT ${BLOCK_COLUMNS}, rowid FROM blocks
      WHERE rowid IN (SELECT value FROM json_each(?))`)
    statement.setReturnArrays(true) // rows as arrays: a third cheaper to materialise than objects
    const rows = statement.all(JSON.stringify(rowids)) as unknown as unknown[][]
    const found = new Map<number, Block>()
    for (const row of rows) found.set(Number(row[BLOCK_COLUMN_COUNT]), toBlock(row))
    for (const rowid of rowids) {
      const block = found.get(rowid)
      if (block) out.set(rowid, block)
    }
    return out
  }

  /**
   * Runs an FTS5 MATCH expression and returns up to `limit` candidates by bm25 with the given
   * column weights (or the newest `limit`, with theirs). The expression must come from `lib/recall/fts-query.ts`, which quotes
   * every term; user text never reaches MATCH directly.
   */
  ftsCandidates(match: string, limit: number, weights: readonly [number, number] = [1, 1], newest = false): FtsCandidate[] {
    // `newest`: the latest `limit` matches (FTS5 walks the postings from the end and stops), each
    // with its bm25, instead of scoring every match to keep the best: a lone very common term.
    const sql = `SELECT rowid, bm25(blocks_fts, ?, ?) AS bm25 FROM blocks_fts WHERE blocks_fts MATCH ? ORDER BY ${newest ? 'rowid DESC' : 'bm25'} LIMIT ?`
    const rows = this.stmt(newest ? 'ftsNewest' : 'fts', sql).all(weights[0], weights[1], match, limit) as Array<{ rowid: number, bm25: number }>
    return rows.map((r) => ({ rowid: Number(r.rowid), bm25: Number(r.bm25) }))
  }

  /**
   * How many blocks match an FTS5 expression (from `lib/recall/fts-query.ts`): a term's document
   * frequency, which recall turns into IDF weights. Cached until the next write by this or any
   * other connection (`PRAGMA data_version`), so a store read far more than written pays once per term.
   */
  matchCount(match: string): number {
    const counts = this.freshMatchCounts()
    const cached = counts.get(match)
    if (cached !== undefined) return cached
    const row = this.stmt('matchCount', 'SELECT count(*) AS n FROM blocks_fts WHERE blocks_fts MATCH ?').get(match) as { n: number }
    return this.rememberCount(match, Number(row.n))
  }

  /**
   * How many blocks contain each of these CJK bigrams (document frequency in the `cjk` column);
   * absent bigrams map to 0. Bigrams not yet cached are read from the FTS index's vocabulary in
   * one statement, and all are cached like `matchCount`, so a query whose bigrams were seen
   * before costs no SQL. Recall uses it to keep a query's most specific bigrams.
   */
  cjkDocumentFrequencies(bigrams: readonly string[]): Map<string, number> {
    const counts = this.freshMatchCounts()
    const out = new Map<string, number>()
    const missing: string[] = []
    for (const bigram of bigrams) {
      const cached = counts.get(cjkCountKey(bigram))
      if (cached !== undefined) out.set(bigram, cached)
      else missing.push(bigram)
    }
    if (missing.length === 0) return out
    if (!this.vocabReady) {
      this.db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stablemem_vocab USING fts5vocab(main, 'blocks_fts', 'col')")
      this.vocabReady = true
    }
    const rows = this.stmt('vocab', `SELECT term, doc FROM temp.stablemem_vocab
      WHERE col = 'cjk' AND term IN (SELECT value FROM json_each(?))`).all(JSON.stringify(missing))
    const found = new Map(rows.map((row) => [String(row.term), Number(row.doc)]))
    for (const bigram of missing) out.set(bigram, this.rememberCount(cjkCountKey(bigram), found.get(bigram) ?? 0))
    return out
  }

  /**
   * Rowids of up to `limit` blocks matching an FTS5 expression (from `lib/recall/fts-query.ts`),
   * unranked: the cheapest "does any note hold this" the index answers (it stops at the first).
   * Fewer than `limit` rows are all the matches, so their number is cached as `matchCount`'s.
   */
  ftsRowids(match: string, limit: number): number[] {
    // No version check here: every reader of the cache checks it first, and clears what was cached before a write.
    const rowids = this.stmt('ftsRowids', 'SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT ?').all(match, limit).map((r) => Number(r.rowid))
    if (rowids.length < limit) this.rememberCount(match, rowids.length)
    return rowids
  }

  /** The document-frequency cache, emptied first if any connection wrote since it was filled. */
  private freshMatchCounts(): Map<string, number> {
    const version = this.dataVersion()
    if (version !== this.matchCountsVersion) {
      this.matchCounts.clear()
      this.matchCountsVersion = version
    }
    return this.matchCounts
  }

  /** Caches one document frequency (bounded: the cache starts over when full) and returns it. */
  private rememberCount(key: string, n: number): number {
    if (this.matchCounts.size >= MATCH_COUNT_CACHE) this.matchCounts.clear()
    this.matchCounts.set(key, n)
    return n
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
    this.writeAccess(counts)
  }

  /**
   * `recordAccess` for counts gathered earlier (`count` accesses each, the latest at `at`), that
   * never waits for another connection's write lock: false, with nothing written, while one holds
   * it. The per-turn path uses it (`lib/store/access.ts`), so a turn never waits on an import or a
   * backfill in another process.
   */
  tryWriteAccess(counts: ReadonlyMap<string, { count: number, at: number }>): boolean {
    if (counts.size === 0) return true
    try {
      withoutWaiting(this.db, this.busyTimeoutMs, () => { this.writeAccess(counts) })
      return true
    } catch (error) {
      if (isBusy(error)) return false
      throw error
    }
  }

  /** Adds access counts in one transaction without an fsync (see `recordAccess`). */
  private writeAccess(counts: ReadonlyMap<string, { count: number, at: number }>): void {
    const touch = this.stmt('touch', `UPDATE blocks SET access_count = access_count + ?1,
      last_access_at = CASE WHEN last_access_at IS NULL OR last_access_at < ?2 THEN ?2 ELSE last_access_at END WHERE id = ?3`)
    withoutFsync(this.db, () => this.transaction(() => { for (const [id, { count, at }] of counts) touch.run(count, at, id) }))
  }

  /**
   * Records a directed edge; idempotent per (source kind, source id, target kind, target id, type).
   * A `block` endpoint must exist, so an edge can never point at nothing.
   */
  link(edge: EdgeInput): { created: boolean, redacted?: string[] } {
    return this.insertEdge(edge, this.now(), false)
  }

  /**
   * The one edge writer behind `link` and `importEdge`. It stores the normalised fields it
   * checked: checking one spelling and writing another would let ' block' slip past the endpoint
   * check and break uniqueness. Its fields are tags (`lib/store/tags.ts`): a credential in one is
   * masked like one in a note, and refused on import, which must restore exactly.
   */
  private insertEdge(edge: EdgeInput, createdAt: number, importing: boolean): { created: boolean, redacted?: string[] } {
    if (edge === null || typeof edge !== 'object') throw new StableMemError('invalid_input', 'edge must be an object')
    const redacted = new Set<string>()
    const [sourceKind, sourceId, targetKind, targetId, type] = (['sourceKind', 'sourceId', 'targetKind', 'targetId', 'type'] as const)
      .map((field) => {
        const tag = checkTag(edge[field], field, true, this.secrets)
        for (const kind of tag.redacted) redacted.add(kind)
        return tag.value
      }) as [string, string, string, string, string]
    if (importing && redacted.size > 0) throw unmaskedImport('edge fields', [...redacted])
    for (const [kind, id, field] of [[sourceKind, sourceId, 'sourceId'], [targetKind, targetId, 'targetId']] as const) {
      if (kind === 'block' && !this.get(id)) throw new StableMemError('not_found', `${field}: no block ${id}`)
    }
    const result = this.stmt('link', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
      VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
      .run(sourceKind, sourceId, targetKind, targetId, type, createdAt)
    const created = Number(result.changes) > 0
    return redacted.size > 0 ? { created, redacted: [...redacted] } : { created }
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

  /**
   * Hard-deletes notes, by id or by filter, with their index entries, vectors and edges, and
   * leaves no bytes of them in the file or its WAL: at return, or for a large forget without
   * `wait` once the scrub has run (`bytesPending`, `scrub`); see `lib/store/forget.ts`.
   */
  forget(target: ForgetTarget, options: ForgetOptions = {}): ForgetResult {
    const result = forgetBlocks(this.forgetHost(), target, options)
    if (!result.dryRun && result.deleted.length > 0) {
      this.matchCounts.clear()
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
    this.matchCounts.clear()
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
    if (this.db.isTransaction) return fn()
    this.db.exec('BEGIN IMMEDIATE')
    try {
      const result = fn()
      this.db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK')
      this.rollbacks++
      throw error
    }
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
    const sql = 'SELECT source_kind, source_id, target_kind, target_id, type, created_at FROM edges ORDER BY id'
    for (const r of this.db.prepare(sql).iterate()) {
      yield {
        sourceKind: String(r.source_kind), sourceId: String(r.source_id), targetKind: String(r.target_kind),
        targetId: String(r.target_id), type: String(r.type), createdAt: Number(r.created_at),
      }
    }
  }

  /**
   * Restores one exported block exactly: id, text, tags, times and access statistics, so an
   * export/import round trip is lossless. The text must already be canonical and the id must be
   * its content address; anything else is refused, because it would break content addressing.
   * A block that already exists is merged, never duplicated: earliest creation, latest update
   * and access, the larger access count, and the imported non-empty tags when the import is newer.
   * Merging is idempotent, so importing the same file twice changes nothing. Call it inside
   * `transaction` to restore many blocks in one write.
   *
   * `supersededBy` is restored when its block exists (a link that would loop is refused); when it
   * does not exist yet, the block is stored as current and `pending` names the missing successor,
   * for the caller to `adoptSuccessor` once that block arrives. `secrets` decides what happens to
   * credentials (see `ImportOptions`); a masked note is stored under its masked text's id, returned.
   * `scopes` are added to the block's memberships; a new block without them is global (exports
   * made before scopes existed).
   */
  importBlock(block: Block, secrets: SecretsPolicy = 'refuse', scopes?: readonly string[]): { created: boolean, id: string, pending?: string, redacted?: string[] } {
    const keys = (scopes ?? []).map((scope, i) => checkScopeKey(scope, `scopes[${i}]`))
    const original = this.validate(block, '', 'allow')
    if (original.text !== block.text) throw new StableMemError('invalid_input', 'text is not in canonical form (NFC, trimmed)')
    if (original.id !== block.id) throw new StableMemError('invalid_input', `id ${String(block.id)} is not the content address of its text (expected ${original.id})`)
    const row = secrets === 'allow' ? original : this.validate(block, '', 'redact')
    if (row.redacted.length > 0 && secrets === 'refuse') {
      throw new StableMemError('contains_secret', `text contains credentials (${row.redacted.join(', ')}); import refuses them unless told to keep them (secrets allow) or mask them (secrets redact)`)
    }
    const createdAt = checkTime(block.createdAt, 'createdAt')
    const updatedAt = checkTime(block.updatedAt, 'updatedAt')
    const accessCount = checkCount(block.accessCount, 'accessCount')
    const lastAccessAt = block.lastAccessAt === null ? null : checkTime(block.lastAccessAt, 'lastAccessAt')
    const supersededBy = block.supersededBy === null ? null : checkTag(block.supersededBy, 'supersededBy', true, 'allow').value
    const rowid = this.restoreRow(row, createdAt, updatedAt, accessCount, lastAccessAt)
    const created = rowid !== undefined
    const now = this.now()
    // A new block's rowid is known: its memberships need no id lookup, and it is above the counts' marks.
    if (created) for (const key of keys.length === 0 ? [GLOBAL_SCOPE] : keys) this.scopes.joinRowid(rowid, key, now)
    else for (const key of keys) this.scopes.join(row.id, key, now)
    if (row.scene !== '') this.scenes.tag(row.scene, row.id, 1)
    const result = row.redacted.length > 0 ? { created, id: row.id, redacted: row.redacted } : { created, id: row.id }
    if (supersededBy === null) return result
    if (!exists(this.chain, supersededBy)) return { ...result, pending: supersededBy }
    adopt(this.chain, row.id, supersededBy)
    return result
  }

  /**
   * Runs one batch of an import in one transaction (`transaction`) and folds the block and scope
   * counts once at its end, instead of once per restored block (see `restoreRow`). `lines`: how
   * many lines the batch holds (a large one runs under the bulk index options).
   */
  importTransaction<T>(fn: () => T, lines = 0): T {
    return this.transaction(() => {
      const restore = () => {
        const result = fn()
        this.foldCount()
        return result
      }
      // A batch of many lines is indexed in a few large segments, as a large `commitMany` is (lib/store/fts-bulk.ts).
      return lines >= BULK_NOTES ? withBulkIndexing(this.indexHost, restore) : restore()
    })
  }

  /** Restores an imported `supersededBy` whose block arrived later in the file (see `importBlock`). */
  adoptSuccessor(id: string, successor: string): void {
    adopt(this.chain, id, successor)
  }

  /**
   * Inserts or merges one imported row (see `importBlock`); the new row's rowid, or undefined when
   * it merged into an existing one. The near-duplicate key is written with the row and no RETURNING
   * is asked for, as in `commitMany`; the block count is not folded here but once per batch
   * (`importTransaction`): `count()` is exact either way, and a fold per row (a count of the rows
   * above the mark and of the memberships above theirs) was a third of an import's time.
   */
  private restoreRow(row: { id: string, text: string, source: string, scene: string, semanticType: string },
    createdAt: number, updatedAt: number, accessCount: number, lastAccessAt: number | null): number | undefined {
    const insert = this.stmt('importInsert', `INSERT INTO blocks (id, text, source, scene, semantic_type, created_at, updated_at, access_count, last_access_at, near_key)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`)
    const inserted = insert.run(row.id, row.text, row.source, row.scene, row.semanticType, createdAt, updatedAt, accessCount, lastAccessAt, nearKey(row.text))
    if (Number(inserted.changes) === 1) {
      const rowid = Number(inserted.lastInsertRowid)
      this.stmt('index', 'INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)').run(rowid, ...indexColumns(row.text))
      this.matchCounts.clear()
      return rowid
    }
    this.stmt('importMerge', `UPDATE blocks SET
      source = CASE WHEN ?1 <> '' AND ?5 > updated_at THEN ?1 ELSE source END,
      scene = CASE WHEN ?2 <> '' AND ?5 > updated_at THEN ?2 ELSE scene END,
      semantic_type = CASE WHEN ?3 <> '' AND ?5 > updated_at THEN ?3 ELSE semantic_type END,
      created_at = min(created_at, ?4),
      updated_at = max(updated_at, ?5),
      access_count = max(access_count, ?6),
      last_access_at = CASE WHEN ?7 IS NULL THEN last_access_at WHEN last_access_at IS NULL THEN ?7 ELSE max(last_access_at, ?7) END
      WHERE id = ?8`).run(row.source, row.scene, row.semanticType, createdAt, updatedAt, accessCount, lastAccessAt, row.id)
    return undefined
  }

  /**
   * Runs `fn` inside a savepoint of the open transaction: if it throws, only its own writes are
   * undone. Import applies each line this way, so a refused line leaves nothing half-written.
   */
  savepoint<T>(fn: () => T): T {
    this.db.exec('SAVEPOINT stablemem_line')
    try {
      const result = fn()
      this.db.exec('RELEASE stablemem_line')
      return result
    } catch (error) {
      this.db.exec('ROLLBACK TO stablemem_line')
      this.db.exec('RELEASE stablemem_line')
      this.rollbacks++
      throw error
    }
  }

  /**
   * Restores one exported edge with its original creation time; idempotent like `link`, and a
   * `block` endpoint must already exist (export writes blocks before edges).
   */
  importEdge(edge: Edge): { created: boolean } {
    return this.insertEdge(edge, checkTime(edge.createdAt, 'createdAt'), true)
  }

  /**
   * SQLite's `data_version`: changes when another connection writes the file (never for our own
   * writes), so the count caches know when to recount.
   */
  private dataVersion(): number {
    return Number((this.stmt('dataVersion', 'PRAGMA data_version').get() as { data_version: number }).data_version)
  }

  private validate(input: CommitInput, prefix: string, secrets: SecretsPolicy = this.secrets): Required<CommitInput> & { id: string, redacted: string[] } {
    if (input === null || typeof input !== 'object') throw new StableMemError('invalid_input', `${prefix === '' ? 'input' : prefix.slice(0, -1)} must be an object with a text field`)
    if (typeof input.text !== 'string') throw new StableMemError('invalid_input', `${prefix}text must be a string`)
    if (hasLoneSurrogate(input.text)) {
      throw new StableMemError('invalid_input', `${prefix}text contains an unpaired UTF-16 surrogate and cannot be stored without loss`)
    }
    const canonical = canonicalText(input.text)
    if (canonical.length === 0) throw new StableMemError('invalid_input', `${prefix}text is empty`)
    if (isInvisibleOnly(canonical)) throw new StableMemError('invalid_input', `${prefix}text has no visible characters`)
    if (canonical.length > this.maxBlockChars) {
      throw new StableMemError('too_large', `${prefix}text has ${canonical.length} characters; the limit is ${this.maxBlockChars} (config maxBlockChars)`)
    }
    const { text, redacted } = applySecretsPolicy(canonical, secrets, `${prefix}text`)
    if (text.length > this.maxBlockChars) {
      throw new StableMemError('too_large', `${prefix}text has ${text.length} characters after masking credentials; the limit is ${this.maxBlockChars} (config maxBlockChars)`)
    }
    // Tags are masked under the same policy as the text (`lib/store/tags.ts`).
    const tag = (value: unknown, field: string): string => {
      const checked = checkTag(value, `${prefix}${field}`, false, secrets)
      for (const kind of checked.redacted) if (!redacted.includes(kind)) redacted.push(kind)
      return checked.value
    }
    const [source, scene, semanticType, supersedes] = [tag(input.source ?? '', 'source'), checkSceneKey(tag(input.scene ?? '', 'scene'), `${prefix}scene`, false),
      tag(input.semanticType ?? '', 'semanticType'), tag(input.supersedes ?? '', 'supersedes')]
    const scope = checkScopeKey(input.scope ?? GLOBAL_SCOPE, `${prefix}scope`)
    return { id: blockId(text), text, redacted, source, scene, semanticType, supersedes, scope }
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
    if (this.path === ':memory:') return 0
    let total = 0
    for (const suffix of ['', '-wal']) {
      try { total += statSync(this.path + suffix).size } catch { /* absent file counts as zero */ }
    }
    return total
  }
}

/** Import restores exactly: a credential the policy would mask is refused, naming its kinds. */
function unmaskedImport(what: string, kinds: readonly string[]): StableMemError {
  return new StableMemError('contains_secret', `${what} contain credentials (${kinds.join(', ')}); the secrets policy does not allow importing them unmasked`)
}

/** A block from a row of `BLOCK_COLUMNS`, read as an array (in that column order). */
function toBlock(row: readonly unknown[]): Block {
  return {
    id: String(row[0]),
    text: String(row[1]),
    source: String(row[2]),
    scene: String(row[3]),
    semanticType: String(row[4]),
    createdAt: Number(row[5]),
    updatedAt: Number(row[6]),
    accessCount: Number(row[7]),
    lastAccessAt: row[8] === null ? null : Number(row[8]),
    supersededBy: row[9] === null ? null : String(row[9]),
  }
}

/** Cache key of a CJK bigram's document frequency; the NUL keeps it apart from every MATCH expression. */
function cjkCountKey(bigram: string): string {
  return `cjk\0${bigram}`
}
