import { BlockStore } from '../../lib/store/store.ts'
import { EvalSetError, type EvalBlock, type EvalSet } from './eval-set.ts'

/**
 * One store's blocks per scope (scoped) or all blocks (global). Duplicated texts collapse to one
 * block in the store (content addressing); the bench maps every gold id of such a text to it.
 */
export function partition(set: EvalSet, mode: 'scoped' | 'global'): Map<string, EvalBlock[]> {
  const groups = new Map<string, EvalBlock[]>()
  for (const b of set.blocks) {
    const key = mode === 'global' ? '' : b.scope
    const list = groups.get(key) ?? []
    list.push(b)
    groups.set(key, list)
  }
  if (mode === 'scoped') {
    for (const q of set.queries) {
      if (!groups.has(q.scope)) throw new EvalSetError(`query ${q.qid}: scope ${JSON.stringify(q.scope)} has no blocks (scoped mode)`)
    }
  }
  return groups
}

/**
 * A fresh in-memory store filled through `commitMany`, one transaction per distinct block time,
 * the clock set to that time so creation times (recall's recency tie-break) follow the data.
 * Store ids are content hashes; `evalIds` maps each back to the set's ids (several when the set
 * holds the same text twice, which the store keeps once).
 */
export function buildStore(blocks: readonly EvalBlock[]): { store: BlockStore, evalIds: Map<string, string[]> } {
  let clock = 0
  const store = new BlockStore(':memory:', { now: () => clock })
  const evalIds = new Map<string, string[]>()
  const ordered = blocks.map((b, i) => ({ b, i, t: timeOf(b.time, i) })).sort((x, y) => x.t - y.t || x.i - y.i)
  for (let start = 0; start < ordered.length;) {
    let end = start
    while (end < ordered.length && ordered[end]!.t === ordered[start]!.t) end++
    clock = ordered[start]!.t
    const results = store.commitMany(ordered.slice(start, end).map(({ b }) => ({ text: b.text, source: 'bench', scene: b.session })))
    results.forEach((r, j) => evalIds.set(r.id, [...(evalIds.get(r.id) ?? []), ordered[start + j]!.b.id]))
    start = end
  }
  return { store, evalIds }
}

function timeOf(time: string, index: number): number {
  const parsed = Date.parse(time)
  return Number.isFinite(parsed) ? parsed : index
}

