/**
 * Reading block rows: the columns every block read selects, and the `Block` built from one row.
 * In one place so the readers (`get`, `blocksByRowid`, `allBlocks`) cannot drift apart, and the
 * read of many blocks by rowid recall makes for its candidates.
 */
import type { StatementSync } from 'node:sqlite'
import type { Block } from './types.ts'

/** Columns every block read uses (`toBlock` reads them by position). */
export const BLOCK_COLUMNS = 'id, text, source, scene, semantic_type, created_at, updated_at, access_count, last_access_at, superseded_by'

/** Position of the rowid appended after `BLOCK_COLUMNS` in rows that carry it. */
export const BLOCK_COLUMN_COUNT = BLOCK_COLUMNS.split(',').length

/** A block from a row of `BLOCK_COLUMNS`, read as an array (in that column order). */
export function toBlock(row: readonly unknown[]): Block {
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

/** The statement behind `blocksByRowid`: the rowids travel as one JSON array. */
export const BY_ROWIDS_SQL = `SELECT ${BLOCK_COLUMNS}, rowid FROM blocks WHERE rowid IN (SELECT value FROM json_each(?))`

/** Blocks by rowid with `BY_ROWIDS_SQL` (prepared by the caller), in the order asked; missing rowids are skipped. */
export function blocksByRowid(statement: StatementSync, rowids: readonly number[]): Map<number, Block> {
  const out = new Map<number, Block>()
  if (rowids.length === 0) return out
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
