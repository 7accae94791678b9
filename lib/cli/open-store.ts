/**
 * How CLI commands open the store file. Reading commands open it read-only (another user's file,
 * a read-only mount) and refuse a missing file instead of creating an empty one as a side effect
 * of a typo in `--db`; writing commands create it. Neither touches something that is not a
 * regular file (`--db /dev/null`).
 */
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { StableMemError } from '../errors.ts'
import { BlockStore } from '../store/store.ts'

/**
 * Opens an existing store file, read-only unless `write`. A missing file is a plain failure naming
 * the absolute path tried, and only suggests `--db` when the path was the default one.
 */
export function openExisting(path: string, given: boolean, options: { write?: boolean } = {}): BlockStore {
  if (!existsSync(path)) {
    throw new StableMemError('not_found', `no store at ${resolve(path)}${given ? '' : ' (the default path: nothing saved there yet; --db chooses another file)'}`)
  }
  refuseSpecial(path)
  return new BlockStore(path, { readOnly: options.write !== true })
}

/** Opens the store file, creating it (and its directory) when absent. */
export function openForWrite(path: string): BlockStore {
  if (existsSync(path)) refuseSpecial(path)
  return new BlockStore(path)
}

/** A device, pipe or folder is never opened as a store: SQLite would create a journal beside it. */
function refuseSpecial(path: string): void {
  if (!statSync(path).isFile()) throw new StableMemError('invalid_input', `${resolve(path)} is not a regular file, so it cannot be a store`)
}

/** Runs `fn` with the store open and always closes it. */
export async function withStore<T>(store: BlockStore, fn: (store: BlockStore) => T | Promise<T>): Promise<T> {
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}
