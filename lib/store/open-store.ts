/**
 * Opening a store: the options a `BlockStore` is opened with, and the sequence that turns a path
 * into a ready connection (folder created, foreign or newer files refused, an older schema
 * upgraded even for a read-only open, WAL mode, the connection's pragmas, the migration and the
 * read/write probe). The steps themselves are in `open-file.ts`, `schema.ts` and `pragmas.ts`.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { DatabaseSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import type { SecretsPolicy } from '../secrets.ts'
import type { DuplicatePolicy } from './duplicates.ts'
import { enterWalMode, openFile, probe, refuseForeign } from './open-file.ts'
import { SCHEMA_VERSION, migrate, schemaVersion } from './schema.ts'

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

/**
 * SQLite's page cache per connection, in KiB (negative = KiB in the pragma). SQLite's default
 * (2 MiB) is smaller than the FTS index of a few thousand notes, so every commit and query
 * re-read evicted pages; 64 MiB is an upper bound, allocated only as pages are touched.
 */
const PAGE_CACHE_KIB = -65_536

/** An open connection and how it was opened. */
export interface OpenedStore {
  db: DatabaseSync
  /** True when the store is open for reading only (and the file needed no upgrade). */
  readOnly: boolean
  /** WAL files did not exist before a read-only open (`BlockStore.close` removes them when idle). */
  createdWalFiles: boolean
}

/** Opens (creating if needed) the store file at `path` with `options`; any failure closes the file again and names it. */
export function openStore(path: string, busyTimeoutMs: number, options: StoreOptions): OpenedStore {
  let readOnly = options.readOnly === true && path !== ':memory:'
  const createdWalFiles = readOnly && !existsSync(`${path}-wal`) && !existsSync(`${path}-shm`)
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
  return { db, readOnly, createdWalFiles }
}

/** Bytes of the store file and its WAL (0 for `:memory:`; an absent file counts as zero). */
export function fileBytes(path: string): number {
  if (path === ':memory:') return 0
  let total = 0
  for (const suffix of ['', '-wal']) {
    try { total += statSync(path + suffix).size } catch { /* absent file counts as zero */ }
  }
  return total
}
