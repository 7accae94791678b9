/**
 * Opening a store file safely: refuse a file that is not ours (or is newer), switch it to WAL even
 * while other processes open the same new file, check at open that it is readable and writable,
 * and open read-only stores in folders SQLite cannot write. `BlockStore`'s constructor runs these
 * in order; they hold no state of their own.
 */
import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { DatabaseSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { isBusy } from './failure.ts'
import { withoutWaiting } from './pragmas.ts'
import { SCHEMA_VERSION, schemaVersion } from './schema.ts'

/** Pause between attempts to switch a new file to WAL while another process is switching it. */
const WAL_SWITCH_PAUSE_MS = 5

/**
 * Refuses, before anything is written (even the journal mode), a file this code must not touch:
 * one from a newer release, or another program's SQLite database (no schema version of ours but
 * tables of its own). The user's file is never converted or "repaired".
 */
export function refuseForeign(db: DatabaseSync, path: string): void {
  // One statement, so the version and the tables come from the same snapshot even while another
  // process is creating the store.
  const row = db.prepare(`SELECT (SELECT user_version FROM pragma_user_version) AS version,
    (SELECT group_concat(name, ', ') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 3)) AS tables`)
    .get() as { version: number, tables: string | null }
  const version = Number(row.version)
  if (version > SCHEMA_VERSION) {
    throw new StableMemError('newer_schema',
      `store schema version ${version} is newer than this dsh-stablemem supports (${SCHEMA_VERSION}); upgrade the package`)
  }
  if (version === 0 && row.tables !== null) {
    throw new StableMemError('unavailable', `${path} is an SQLite database of another program (tables ${row.tables}); refusing to change it`)
  }
}

/**
 * Puts the file in WAL mode and bounds its WAL. On a new file several processes may switch at the
 * same moment: each holds a read lock and asks for the exclusive one, and SQLite, seeing the
 * deadlock, fails all but one at once with "database is locked" without calling the busy handler
 * (reproduced by test/reliability/concurrency.test.ts, about one start in twenty with six agents).
 * The loser's lock is gone when its statement fails, so the switch is retried with short pauses
 * until the busy timeout has passed; by then the winner has finished and the file is in WAL mode.
 */
export function enterWalMode(db: DatabaseSync, busyTimeoutMs: number, walSizeLimitBytes: number): void {
  const deadline = Date.now() + busyTimeoutMs
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (;;) {
    try {
      db.exec('PRAGMA journal_mode = WAL')
      break
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error
      Atomics.wait(pause, 0, 0, WAL_SWITCH_PAUSE_MS)
    }
  }
  db.exec(`PRAGMA journal_size_limit = ${walSizeLimitBytes}`)
}

/**
 * Cheap checks at open that a damaged or read-only file fails now, with one clear error, rather
 * than on the first turn: a write can begin (in a transaction that is rolled back, so the file is
 * never changed; a read-only file or folder fails here), and the last page of the block table and
 * the FTS index's structure records can be read.
 */
export function probe(db: DatabaseSync, busyTimeoutMs: number, write: boolean): void {
  if (write) probeWrite(db, busyTimeoutMs)
  db.prepare('SELECT max(rowid) FROM blocks').get()
  db.prepare(`SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH '"stablemem"' LIMIT 1`).get()
}

function probeWrite(db: DatabaseSync, busyTimeoutMs: number): void {
  try {
    withoutWaiting(db, busyTimeoutMs, () => {
      db.exec('BEGIN IMMEDIATE')
      try {
        db.exec(`PRAGMA user_version = ${schemaVersion(db)}`)
      } finally {
        db.exec('ROLLBACK')
      }
    })
  } catch (error) {
    // Another process holds the write lock: the file is writable, and opening must not wait for it.
    if (!isBusy(error)) throw error
  }
}

/**
 * Opens the SQLite file. Read-only, a WAL store still needs its `-shm` index, which SQLite cannot
 * create in a read-only folder: then, and only when no `-wal` file exists (so no writer can be
 * active there and nothing is left unread), the file is opened as immutable.
 */
export function openFile(path: string, busyTimeoutMs: number, readOnly: boolean): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    db = new DatabaseSync(path, { timeout: busyTimeoutMs, readOnly })
    if (readOnly) db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1').get() // SQLite opens the WAL index on the first read
    return db
  } catch (error) {
    db?.close()
    if (readOnly && !existsSync(`${path}-wal`)) {
      try {
        return new DatabaseSync(`${pathToFileURL(path).href}?immutable=1`, { readOnly: true })
      } catch { /* report the first error */ }
    }
    throw new StableMemError('unavailable', `cannot open store ${path}: ${(error as Error).message}`, { cause: error })
  }
}

/**
 * After a read-only open that had to create the WAL files: one plain open and close removes them
 * again when this was the last connection (SQLite deletes an empty WAL on the last close), and
 * leaves them alone while another process uses them.
 */
export function removeIdleWalFiles(path: string): void {
  if (!existsSync(`${path}-wal`) && !existsSync(`${path}-shm`)) return
  try {
    const db = new DatabaseSync(path)
    db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1').get() // the WAL is only looked at once the file is read
    db.close()
  } catch { /* a read-only folder: SQLite could not have created them either */ }
}
