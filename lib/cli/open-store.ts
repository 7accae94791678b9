/**
 * How CLI commands open the store file. Reading commands refuse a missing file instead of
 * creating an empty one as a side effect of a typo in `--db`; writing commands create it.
 */
import { existsSync } from 'node:fs'
import { StableMemError } from '../errors.ts'
import { BlockStore } from '../store/store.ts'

/** Opens an existing store file; a missing file is a plain failure naming the path. */
export function openExisting(path: string): BlockStore {
  if (!existsSync(path)) throw new StableMemError('unavailable', `no store at ${path} (nothing saved there yet; pass --db to choose another file)`)
  return new BlockStore(path)
}

/** Opens the store file, creating it (and its directory) when absent. */
export function openForWrite(path: string): BlockStore {
  return new BlockStore(path)
}

/** Runs `fn` with the store open and always closes it. */
export async function withStore<T>(store: BlockStore, fn: (store: BlockStore) => T | Promise<T>): Promise<T> {
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}
