import type { StatementSync } from 'node:sqlite'

/**
 * What commit does with a note that is a near-duplicate of a current one (same `nearKey`):
 * `keep` stores it and only reports `duplicateOf`; `link` (default) stores it with a `duplicates`
 * edge to the existing note; `skip` stores nothing and answers with the existing note's id.
 */
export type DuplicatePolicy = 'keep' | 'link' | 'skip'

/** The accepted policy names, for validation. */
export const DUPLICATE_POLICIES: readonly DuplicatePolicy[] = ['keep', 'link', 'skip']

/** Rows keyed per statement while filling keys for notes that have none. */
const BACKFILL_BATCH = 2_000

/** What `BlockStore` lends the near-duplicate index: its cached statements. */
export interface NearKeyHost {
  stmt(key: string, sql: string): StatementSync
}

/**
 * The near-duplicate index: the `near_key` column of `blocks` (see `lib/text/near-key.ts`).
 * Notes written by an older release, by import or by another code path have no key yet; they are
 * keyed before the next lookup (a partial index finds them without a scan), so no writer has to
 * know about keys.
 */
export class NearKeys {
  private readonly host: NearKeyHost
  private readonly keyOf: (text: string) => string

  constructor(host: NearKeyHost, keyOf: (text: string) => string) {
    this.host = host
    this.keyOf = keyOf
  }

  /** Keys every note that has none; call inside a write transaction. Returns how many were keyed. */
  fill(): number {
    const pending = this.host.stmt('near.unkeyed', 'SELECT id, text FROM blocks WHERE near_key IS NULL LIMIT ?')
    const set = this.host.stmt('near.set', 'UPDATE blocks SET near_key = ? WHERE id = ?')
    let keyed = 0
    for (;;) {
      const rows = pending.all(BACKFILL_BATCH) as Array<{ id: string, text: string }>
      for (const row of rows) set.run(this.keyOf(String(row.text)), row.id)
      keyed += rows.length
      if (rows.length < BACKFILL_BATCH) return keyed
    }
  }

  /** The oldest current (not superseded) note with this key other than `id`, if any. */
  find(key: string, id: string): string | undefined {
    if (key === '') return undefined
    const row = this.host.stmt('near.find', `SELECT id FROM blocks WHERE near_key = ? AND id <> ? AND superseded_by IS NULL
      ORDER BY rowid LIMIT 1`).get(key, id) as { id: string } | undefined
    return row?.id
  }

  /** Every other note (current or not) with the same key as note `id`. */
  siblings(id: string): string[] {
    const rows = this.host.stmt('near.siblings', `SELECT b.id AS id FROM blocks a JOIN blocks b ON b.near_key = a.near_key AND b.id <> a.id
      WHERE a.id = ? AND a.near_key <> ''`).all(id) as Array<{ id: string }>
    return rows.map((r) => String(r.id))
  }
}
