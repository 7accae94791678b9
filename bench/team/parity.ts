import type pg from 'pg'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { teamRecall } from '../../lib/team/search.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { buildStore, partition } from '../recall/build-store.ts'
import type { EvalSet } from '../recall/eval-set.ts'
import { metrics, type Outcome } from '../recall/metrics.ts'

/**
 * R@5 parity of the team layer: each scope of a set (or the whole set, `global`) is shared into
 * a namespace of its own, in the set's time order, and every query is ranked by the local path
 * (`recallBlocks` over a SQLite store of the same notes) and by the team path (`teamRecall` over
 * PostgreSQL). Abstention is off on both sides: this compares the rankings.
 */
export async function parity(client: pg.ClientBase, set: EvalSet, mode: 'scoped' | 'global', grant: (namespace: string) => Promise<void>): Promise<{ local: number, team: number, n: number }> {
  const local: Outcome[] = []
  const team: Outcome[] = []
  let g = 0
  for (const [scope, blocks] of partition(set, mode)) {
    const namespace = `${set.name}-${mode}-${g++}`.toLowerCase().replace(/[^a-z0-9_.-]/g, '-').slice(0, 60)
    await grant(namespace)
    const { store, evalIds } = buildStore(blocks)
    const ordered = blocks.map((b, i) => ({ b, t: Number.isFinite(Date.parse(b.time)) ? Date.parse(b.time) : i, i })).sort((x, y) => x.t - y.t || x.i - y.i)
    for (const { b, t } of ordered) await shareNotes(client, [{ text: b.text, source: 'bench', scene: b.session }], { namespace, member: 'bench', secrets: 'redact', maxBlockChars: 32_768, now: t })
    for (const q of set.queries.filter((q) => mode === 'global' || q.scope === scope)) {
      const mine = recallBlocks(store, q.query, { topK: 10, abstain: false })
      local.push({ category: q.category, gold: q.gold, ranked: mine.flatMap((h) => evalIds.get(h.id) ?? [h.id]) })
      const theirs = await teamRecall(client, namespace, q.query, 10)
      team.push({ category: q.category, gold: q.gold, ranked: theirs.hits.flatMap((h) => evalIds.get(h.id) ?? [h.id]) })
    }
    store.close()
  }
  return { local: metrics(local, [5])['recall@5']!, team: metrics(team, [5])['recall@5']!, n: local.length }
}
