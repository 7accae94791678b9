/**
 * Whether a store file holds a prefix of bench:perf's corpus: the check `bench:grow` makes before
 * it extends or re-scopes a store, so a store of another seed or corpus is never grown into a
 * mixture that no build would give.
 */
import type { DatabaseSync } from 'node:sqlite'
import { canonicalText } from '../lib/text/normalize.ts'
import type { Corpus } from './corpus.ts'

/**
 * Checks that `db` holds exactly blocks 0 … count−1 of `gen`, rowid i+1 for block i (what a
 * build of distinct corpus notes gives): count = largest rowid, and `samples` rows spread over
 * the range (plus the first and last) carry the corpus text. Returns the count.
 */
export function checkPrefix(db: DatabaseSync, gen: Corpus, samples = 200): number {
  const { n, top } = db.prepare('SELECT count(*) AS n, coalesce(max(rowid), 0) AS top FROM blocks').get() as { n: number, top: number }
  if (Number(n) !== Number(top)) throw new Error(`the store has ${n} notes but its largest rowid is ${top}: not a prefix of the corpus`)
  const count = Number(n)
  const text = db.prepare('SELECT text FROM blocks WHERE rowid = ?')
  const rows = new Set<number>([1, count])
  for (let s = 1; s < samples; s++) rows.add(1 + Math.floor((s * count) / samples))
  for (const rowid of rows) {
    if (rowid < 1 || rowid > count) continue
    const row = text.get(rowid) as { text: string } | undefined
    if (row?.text !== canonicalText(gen.block(rowid - 1).text)) throw new Error(`row ${rowid} is not block ${rowid - 1} of this corpus (another seed, or not a bench:perf store)`)
  }
  return count
}
