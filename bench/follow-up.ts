/**
 * `npm run bench:follow-up -- [--blocks N] [--queries Q] [--earlier E] [--store FILE] [--json]`
 *
 * The cost of reading a live conversation (`lib/recall/conversation.ts`) at N notes of
 * `bench:perf`'s corpus: a vague follow-up question ("那后来怎么样了？", "and what about the other
 * one?"), which alone matches nothing and so is recalled again with its E earlier messages (each
 * a `bench:perf` query), against the same question alone, recall + gate, alternating which goes
 * first query by query. Two passes; the second (warm caches, as every turn after the first) is
 * reported: wall-clock p50 / p99 ms of each, and their ratio. The store is built (one
 * `commitMany` per 5,000 notes, then `upkeep`) unless `--store` names a file that already holds
 * the corpus; bench:perf's pre-step turns each start a session, so they never read a conversation.
 */
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp, jsonWanted, progressLog, wholeFlag } from './args.ts'
import { QUERY_KINDS, corpus } from './corpus.ts'
import { nowMs, round, summary } from './stats.ts'

const USAGE = 'npm run bench:follow-up -- [--blocks N] [--queries Q] [--earlier E] [--store FILE] [--seed S] [--json]\n\nThe cost of reading a live conversation: a vague follow-up recalled with its E earlier messages against the same question alone, at N notes (docs/recall.md, "The live conversation").'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '400' },
    earlier: { type: 'string', default: '4' },
    store: { type: 'string', default: '' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean' },
  },
})
const json = jsonWanted(args.json)
const log = progressLog(json)
const blocks = wholeFlag('blocks', args.blocks)
const queries = wholeFlag('queries', args.queries)
const earlierCount = wholeFlag('earlier', args.earlier)
const generator = corpus(wholeFlag('seed', args.seed))
const path = args.store !== '' ? args.store : join(tmpdir(), `stablemem-follow-up-${blocks}.sqlite`)
const store = new BlockStore(path)
if (store.count() < blocks) {
  for (let i = store.count(); i < blocks; i += 5_000) {
    store.commitMany(Array.from({ length: Math.min(5_000, blocks - i) }, (_, j) => ({ text: generator.block(i + j).text })))
  }
  store.upkeep()
}
log(`${store.count()} notes in ${path}`)
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const VAGUE = ['那后来怎么样了？', '那个定了吗？', 'and what about the other one?', '还有别的吗？']
const asked = (i: number) => generator.query(QUERY_KINDS[i % QUERY_KINDS.length]!, (i * 7_919) % blocks)
const time = (message: string, earlier: string[]) => {
  const start = nowMs()
  gateHits(recallBlocks(store, message, { topK: 5, earlier }), gate)
  return nowMs() - start
}
let alone: number[] = []
let withEarlier: number[] = []
for (let pass = 0; pass < 2; pass++) {
  alone = []
  withEarlier = []
  for (let i = 0; i < queries; i++) {
    const message = VAGUE[i % VAGUE.length]!
    const earlier = Array.from({ length: earlierCount }, (_, k) => asked(i + k))
    if (i % 2 === 0) {
      alone.push(time(message, []))
      withEarlier.push(time(message, earlier))
    } else {
      withEarlier.push(time(message, earlier))
      alone.push(time(message, []))
    }
  }
}
store.close()
const a = summary(alone)
const e = summary(withEarlier)
const result = {
  blocks, queries, earlier: earlierCount, load: round(loadavg()[0]!, 2),
  alone: a, with_earlier: e, p50_ratio: round(e.p50_ms / a.p50_ms, 2), p99_ratio: round(e.p99_ms / a.p99_ms, 2),
}
log(`follow-up alone p50 ${a.p50_ms} ms p99 ${a.p99_ms} ms; with ${earlierCount} earlier messages p50 ${e.p50_ms} ms p99 ${e.p99_ms} ms`)
if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
