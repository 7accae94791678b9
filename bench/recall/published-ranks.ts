/**
 * Investigation (issue 29, removed after it answered; results in docs/recall.md, "What an
 * embedder would buy on MADial"): what fusing our lexical ranking with an embedding model's
 * ranking would give on MADial, without running the model. MADial-Bench publishes each model's
 * top-20 memory ids per dialogue (`embeddings/ch/*_top_20_ids.json`, `embeddings/en/*_top_20.json`
 * at 572e3a1); this reads them for user 1 (the development half), ranks the same chats with
 * `recallBlocks` (top 20, scoped store), fuses the two lists by weighted reciprocal rank
 * (w / (k + rank) for the model, (1 − w) / (k + rank) for lexical) and prints R@5 of lexical,
 * the model alone and each (k, w).
 *   node bench/recall/published-ranks.ts <eval set dir> <published ranks file> <zh|en>
 */
import { readFileSync } from 'node:fs'
import { buildStore, partition } from './build-store.ts'
import { readEvalSet } from './eval-set.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'

const [setDir, ranksFile, lang] = process.argv.slice(2)
if (setDir === undefined || ranksFile === undefined || (lang !== 'zh' && lang !== 'en')) {
  console.error('usage: node bench/recall/published-ranks.ts <eval set dir> <published ranks file> <zh|en>')
  process.exit(2)
}
const set = readEvalSet(setDir)
const ids = new Set(set.blocks.map((b) => b.id))
const parts = partition(set, 'scoped')
const lexical = new Map<string, string[]>()
for (const [scope, blocks] of parts) {
  const { store, evalIds } = buildStore(blocks)
  for (const q of set.queries.filter((q) => (q.scope ?? '') === scope)) {
    lexical.set(q.qid, recallBlocks(store, q.query, { topK: 20 }).flatMap((h) => evalIds.get(h.id) ?? []))
  }
}
// One JSON object a line; a line's dialogue index is its `id` when it has one, else its position.
const model = new Map<string, string[]>()
readFileSync(ranksFile, 'utf8').trim().split('\n').forEach((line, i) => {
  const r = JSON.parse(line) as { id?: number, 'user-id': number, top_20_ids?: number[], 'top-20-ids'?: number[] }
  const top = r.top_20_ids ?? r['top-20-ids'] ?? []
  if (r['user-id'] === 1) model.set(`madial-${lang}-${r.id ?? i}`, top.map((t) => `m${t}`).filter((id) => ids.has(id)))
})
const recallAt5 = (list: readonly string[], gold: readonly string[]) => list.slice(0, 5).filter((id) => gold.includes(id)).length / gold.length
const mean = (f: (q: (typeof set.queries)[number]) => number) => +(set.queries.reduce((s, q) => s + f(q), 0) / set.queries.length).toFixed(3)
const out: Record<string, number> = {
  lexical: mean((q) => recallAt5(lexical.get(q.qid) ?? [], q.gold)),
  model: mean((q) => recallAt5(model.get(q.qid) ?? [], q.gold)),
}
for (const k of [10, 30, 60]) {
  for (const w of [0.3, 0.5, 0.7]) {
    out[`k${k} w${w}`] = mean((q) => {
      const score = new Map<string, number>()
      ;(lexical.get(q.qid) ?? []).forEach((id, r) => score.set(id, (score.get(id) ?? 0) + (1 - w) / (k + r + 1)))
      ;(model.get(q.qid) ?? []).forEach((id, r) => score.set(id, (score.get(id) ?? 0) + w / (k + r + 1)))
      return recallAt5([...score].sort((a, b) => b[1] - a[1]).map(([id]) => id), q.gold)
    })
  }
}
console.log(JSON.stringify({ set: setDir, ranks: ranksFile, queries: set.queries.length, recall_at_5: out }))
