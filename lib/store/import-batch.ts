/**
 * The transactions of an import (`stablemem import`, lib/store/transfer.ts) in the bulk path's
 * shape: the full-text index rows of a batch's new blocks are written after all its block rows,
 * as commit writes its own (lib/store/commit.ts), and a batch of `BULK_NOTES` new blocks or more
 * under the bulk index options (lib/store/fts-bulk.ts), so it lands in the index as one segment.
 * Written beside each row, the index was flushed to a new segment by every statement savepoint a
 * note's other writes opened (its scene tag) and by every 1 MiB of pending terms, and automerge
 * rewrote those segments level by level: a batch of 5,600 notes, a seventh of them with a scene,
 * ended as 19 segments against 1 (test/store/import-bulk.test.ts; docs/decisions.md, D26).
 *
 * The rows waiting for the index are the batch's own: a savepoint that rolls back (import's
 * line-by-line replay of a batch with a refused line) drops the ones it queued, so no index row
 * ever names a rowid its rollback gave back. Outside a batch a restored row is indexed at once.
 */
import type { StatementSync } from 'node:sqlite'
import { indexColumns } from './fts-columns.ts'
import { BULK_NOTES, withBulkIndexing } from './fts-bulk.ts'

/** What the batches need from the store that owns the connection. */
export interface ImportBatchHost {
  stmt(key: string, sql: string): StatementSync
  transaction<T>(fn: () => T): T
  savepoint<T>(fn: () => T): T
  /** Folds the new blocks into the block and scope counts (`BlockStore.count`). */
  foldCount(): void
}

/** The import batches of one connection (`BlockStore.importTransaction`, `BlockStore.savepoint`). */
export class ImportBatches {
  private readonly host: ImportBatchHost
  /** The open batch's new rows, waiting for their index rows; undefined outside a batch. */
  private queued: Array<[rowid: number, text: string]> | undefined

  constructor(host: ImportBatchHost) {
    this.host = host
  }

  /** Indexes a restored row: at the end of the open batch, or now outside one. */
  index(rowid: number, text: string): void {
    if (this.queued === undefined) this.write(rowid, text)
    else this.queued.push([rowid, text])
  }

  /**
   * Runs `fn`, one batch, in one transaction (joining an open one); then writes the index rows it
   * queued and folds the counts once, inside the same transaction, so the batch commits whole.
   */
  run<T>(fn: () => T): T {
    return this.host.transaction(() => {
      if (this.queued !== undefined) return fn()
      const queued: Array<[rowid: number, text: string]> = []
      this.queued = queued
      try {
        const result = fn()
        const writeAll = () => { for (const [rowid, text] of queued) this.write(rowid, text) }
        if (queued.length >= BULK_NOTES) withBulkIndexing(this.host, writeAll)
        else writeAll()
        this.host.foldCount()
        return result
      } finally {
        this.queued = undefined
      }
    })
  }

  /** Runs `fn` in a savepoint of the open transaction; when it rolls back, so do the index rows it queued. */
  savepoint<T>(fn: () => T): T {
    const mark = this.queued?.length ?? 0
    try {
      return this.host.savepoint(fn)
    } catch (error) {
      if (this.queued !== undefined) this.queued.length = mark
      throw error
    }
  }

  private write(rowid: number, text: string): void {
    this.host.stmt('index', 'INSERT INTO blocks_fts (rowid, latin, cjk) VALUES (?, ?, ?)').run(rowid, ...indexColumns(text))
  }
}
