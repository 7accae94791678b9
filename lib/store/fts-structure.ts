/**
 * The merge state of an FTS5 index, read from its structure record (the row `id = 10` of
 * `<table>_data`): how many segments sit at each level, how many leaf pages each holds, and
 * whether an incremental merge is under way. A query walks every segment a term has postings in,
 * so the segment count is what index upkeep (`lib/store/fts-upkeep.ts`) keeps low, what `stats()`
 * reports, and what the scale benchmarks print beside their timings (docs/benchmarks.md, "Scale").
 */
import type { DatabaseSync } from 'node:sqlite'

/** One level of the index: its segments' leaf-page counts, and how many of them a merge in progress is reading. */
export interface FtsLevel {
  level: number
  /** Segments of this level that an incremental merge is consuming (0: none). */
  merging: number
  /** Leaf pages per segment (`pgnoLast - pgnoFirst + 1`: what is left of a segment a merge has partly read). */
  pages: number[]
}

/** The decoded structure record. */
export interface FtsStructure {
  segments: number
  /** Leaf pages over all segments. */
  pages: number
  /** FTS5's write counter (what its automerge schedules merges by). */
  writes: number
  /** Non-empty levels only, lowest first. */
  levels: FtsLevel[]
}

/**
 * Decodes an FTS5 structure record (both the original layout and the one with per-segment origin
 * and tombstone fields, marked by the bytes FF 00 00 01 after the cookie). Throws on a record that
 * does not parse to its declared segment count.
 */
export function decodeFtsStructure(record: Uint8Array): FtsStructure {
  let at = 4 // the cookie
  const v2 = record[4] === 0xff && record[5] === 0x00 && record[6] === 0x00 && record[7] === 0x01
  if (v2) at += 4
  const read = (): number => {
    // SQLite's varint: big-endian groups of 7 bits, the high bit set on all but the last; a 9th byte carries 8 bits.
    let value = 0
    for (let i = 0; i < 9; i++) {
      if (at >= record.length) throw new Error('FTS5 structure record ends inside a varint')
      const byte = record[at++]!
      if (i === 8) return value * 256 + byte
      value = value * 128 + (byte & 0x7f)
      if ((byte & 0x80) === 0) return value
    }
    return value
  }
  const levelCount = read()
  const segments = read()
  const writes = read()
  const levels: FtsLevel[] = []
  let seen = 0
  let pages = 0
  for (let level = 0; level < levelCount; level++) {
    const merging = read()
    const count = read()
    const sizes: number[] = []
    for (let s = 0; s < count; s++) {
      read() // segment id
      const first = read()
      const last = read()
      if (v2) { read(); read(); read(); read(); read() } // origins, tombstone pages and entries, entries
      sizes.push(last - first + 1)
    }
    seen += count
    pages += sizes.reduce((a, b) => a + b, 0)
    if (count > 0) levels.push({ level, merging, pages: sizes })
  }
  if (seen !== segments) throw new Error(`FTS5 structure record declares ${segments} segments but lists ${seen}`)
  return { segments, pages, writes, levels }
}

/** Reads and decodes the structure record of the FTS5 table `table` on `db`. */
export function ftsStructure(db: DatabaseSync, table: string): FtsStructure {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table name: ${table}`)
  const row = db.prepare(`SELECT block FROM "${table}_data" WHERE id = 10`).get() as { block: Uint8Array } | undefined
  if (row === undefined) return { segments: 0, pages: 0, writes: 0, levels: [] }
  return decodeFtsStructure(row.block)
}

/** One line for a log: segments per level, e.g. `20 segments, 75,960 pages: L0 10, L1 1, … L9 1 (47,479 p)`. */
export function describeFtsStructure(s: FtsStructure): string {
  const levels = s.levels.map((l) => `L${l.level} ${l.pages.length}${l.merging > 0 ? ` (merging ${l.merging})` : ''}`)
  return `${s.segments} segments, ${s.pages.toLocaleString('en')} leaf pages: ${levels.join(', ')}`
}
