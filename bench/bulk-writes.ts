/**
 * The write paths bench:perf times against each other at N notes: the floor (raw FTS5 over a bare
 * table) and the bulk commit path (`commitMany` in large batches), each into a new file, wall and
 * CPU time. `bench:perf` calls them while building its files, and alone with `--bulk-only`.
 */
import { rmSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { BlockStore } from '../lib/store/store.ts'
import { cjkIndexText, withoutCjk } from '../lib/text/cjk.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { cpuMs, nowMs } from './stats.ts'

/** A write rate: notes per second of wall time and per second of this process's CPU time. */
export interface WriteRate {
  perS: number
  cpuPerS: number
}

/**
 * The floor: the same indexed text in a bare `(rowid, text)` table plus an FTS5 table with the
 * store's columns and tokenizer, the store's connection settings (WAL, synchronous FULL, 64 MiB
 * page cache), raw prepared statements, every note in one transaction. The texts are built before
 * the timing, as they are for every commit path measured.
 */
export function floorInsert(path: string, texts: readonly string[]): WriteRate {
  const floor = new DatabaseSync(path)
  floor.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -65536;
    CREATE TABLE b (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL);
    CREATE VIRTUAL TABLE f USING fts5(latin, cjk, content = '', tokenize = 'porter unicode61 remove_diacritics 2');`)
  const t0 = nowMs()
  const cpu0 = process.cpuUsage()
  const insertText = floor.prepare('INSERT INTO b (rowid, text) VALUES (?, ?)')
  const insertFts = floor.prepare('INSERT INTO f (rowid, latin, cjk) VALUES (?, ?, ?)')
  floor.exec('BEGIN')
  const seen = new Set<string>()
  for (let i = 0; i < texts.length; i++) {
    const text = canonicalText(texts[i]!)
    if (seen.has(text)) continue
    seen.add(text)
    insertText.run(i + 1, text)
    insertFts.run(i + 1, withoutCjk(text), cjkIndexText(text))
  }
  floor.exec('COMMIT')
  const rate = { perS: texts.length / ((nowMs() - t0) / 1000), cpuPerS: texts.length / (cpuMs(cpu0) / 1000) }
  floor.close()
  return rate
}

/** The bulk commit path's rate, the notes it stored and each batch's rate (the last batches show what grows with the store). */
export interface BulkRun extends WriteRate {
  stored: number
  batches: WriteRate[]
}

/**
 * The bulk commit path: `texts(from, to)` through `commitMany` in batches of `batch` into a new
 * store at `path` (removed afterwards), each batch's inputs built before its timing.
 */
export function bulkCommit(path: string, n: number, batch: number, texts: (from: number, to: number) => string[]): BulkRun {
  const store = new BlockStore(path)
  let wallMs = 0
  let cpuTotal = 0
  const batches: WriteRate[] = []
  for (let from = 0; from < n; from += batch) {
    const inputs = texts(from, Math.min(n, from + batch)).map((text) => ({ text, source: 'bench' }))
    const t0 = nowMs()
    const cpu0 = process.cpuUsage()
    store.commitMany(inputs)
    const cpu = cpuMs(cpu0)
    const wall = nowMs() - t0
    batches.push({ perS: inputs.length / (wall / 1000), cpuPerS: inputs.length / (cpu / 1000) })
    cpuTotal += cpu
    wallMs += wall
  }
  const stored = store.count()
  store.close()
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
  return { perS: n / (wallMs / 1000), cpuPerS: n / (cpuTotal / 1000), stored, batches }
}
