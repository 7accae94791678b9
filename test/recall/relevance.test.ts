/**
 * The absolute relevance signal on hand-made stores, and the injection gate that reads it.
 * Values are pinned to three decimals: relevance is deterministic (store counts and string
 * matches only), so a change here is a change of the signal.
 */
import t from 'tap'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits, type GateOptions } from '../../lib/recall/gate.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { queryRelevance } from '../../lib/recall/relevance.ts'
import type { Hit } from '../../lib/recall/types.ts'
import { BlockStore } from '../../lib/store/store.ts'

function storeOf(texts: readonly string[]): BlockStore {
  const store = new BlockStore(':memory:')
  store.commitMany(texts.map((text) => ({ text })))
  return store
}

const GATE: GateOptions = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const fixed = (hits: readonly Hit[]) => hits.map((h) => [h.text, Number(h.relevance.toFixed(3))])

t.test('a name the store has never seen: the hits hold a word the store often uses, not who was asked about', async (t) => {
  const store = storeOf([
    'Gina: I joined a support group for small business owners last week.',
    'Jon: The dance studio finally opened, the first class was full.',
    'Gina: My store had its best month since the launch.',
    'Jon: I lost my job at the bank, so I am starting the studio.',
    'Gina: How is the studio doing? Are the classes full?',
    'Jon: The studio needs a new floor before the winter.',
    'Gina: I ordered new shelves for the store.',
    'Jon: My brother visited the bank on Friday.',
  ])
  t.teardown(() => store.close())
  const hits = recallBlocks(store, 'What did Caroline say about the studio?', { topK: 3 })
  t.ok(hits.length === 3 && hits.every((h) => h.text.includes('studio')), 'ranking finds studio notes')
  t.same(hits.map((h) => Number(h.relevance.toFixed(3))), [0.279, 0.279, 0.279], 'each holds the studio (in 4 of 8 notes) but not Caroline (in none)')
  t.ok(hits[0]!.relevance < DEFAULT_MIN_RELEVANCE, 'below the gate: the query is about someone else')
  t.same(gateHits(hits, GATE), [], 'nothing is injected')
  const own = storeOf(['Caroline: My friend opened a studio downtown.', 'Caroline: I painted a sunrise.', 'Melanie: The kids loved the beach.'])
  t.teardown(() => own.close())
  t.same(fixed(recallBlocks(own, 'What did Caroline say about the studio?', { topK: 1 })),
    [['Caroline: My friend opened a studio downtown.', 1]], 'in the store that knows her, all of it')
})

t.test('a rare CJK bigram the note holds carries the question; straddling bigrams of the question do not count against it', async (t) => {
  const store = storeOf([
    '格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。',
    '红矮星是主序星中质量最小的一类恒星。',
    'billing 服务端口 8499，部署在 10.3.7.9',
  ])
  t.teardown(() => store.close())
  const hits = recallBlocks(store, '格利泽的质量是多少？', { topK: 3 })
  t.same(fixed(hits), [
    ['格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。', 1],
    ['红矮星是主序星中质量最小的一类恒星。', 0.193],
  ])
  t.same(gateHits(hits, GATE).map((h) => h.text), ['格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。'], 'the adaptive count drops the note that holds only 质量')
  const ops = recallBlocks(store, 'billing 服务的端口是多少？', { topK: 1 })
  t.equal(ops[0]!.relevance, 1, '"务的", "的端", "口是" straddle words: a small store lacks them and that says nothing')
})

t.test('a transcript of small talk against a store of work notes: every hit is below the gate', async (t) => {
  const store = storeOf([
    'billing 服务端口 8499，部署在 10.3.7.9',
    '值班室分机号 4324，值班人 老周',
    '周会改到每周三下午三点，会议室 B302',
    'nginx 配置文件在 /etc/nginx/conf.d/app.conf',
  ])
  t.teardown(() => store.close())
  const chat = '用户: 今天好累啊，下午开了三个会\n助手: 辛苦了，要不要早点休息？\n用户: 晚上吃什么好呢，想吃点热的'
  const hits = recallBlocks(store, chat, { topK: 5 })
  t.ok(hits.length > 0, 'ranking alone finds something (下午, 三点 …)')
  t.same(fixed(hits), [['周会改到每周三下午三点，会议室 B302', 0.105]])
  t.same(gateHits(hits, GATE), [])
})

t.test('relevance of notes found by other means (vectors) uses the same parts', async (t) => {
  const store = storeOf(['billing 服务端口 8499', '值班室分机号 4324'])
  t.teardown(() => store.close())
  const of = queryRelevance(store, 'billing 的端口')
  t.equal(of('billing 服务端口 8499'), 1)
  t.equal(of('值班室分机号 4324'), 0)
  t.equal(queryRelevance(store, '的了吗')('anything'), 0, 'nothing specific: relevance 0')
})

/** A hit for the gate tests. */
function hit(id: string, relevance: number, extra: Partial<Hit> = {}): Hit {
  return { id, text: id, score: 0.5, exact: false, relevance, why: '', ...extra }
}

t.test('the gate: threshold, nothing passes, pins and attached notes, falloff, minScore, topK', async (t) => {
  const options = { ...GATE, minRelevance: 0.3, falloff: 0.5 }
  t.same(gateHits([hit('a', 0.29), hit('b', 0.1)], options), [], 'nothing passes: nothing is injected')
  t.same(gateHits([hit('a', 0.9), hit('b', 0.5), hit('c', 0.44), hit('d', 0.3)], options).map((h) => h.id), ['a', 'b'],
    'relevance falls off below half of the best: fewer than topK')
  t.same(gateHits([hit('p', 0, { exact: true, score: 1.001 }), hit('a', 0.1)], options).map((h) => h.id), ['p'], 'an exact pin always passes')
  t.same(gateHits([hit('s', 0.05), hit('a', 0.8)], { ...options, attached: new Set(['s']) }).map((h) => h.id), ['s', 'a'],
    'a note attached to the active scene passes like a pin (the seam for scenes)')
  t.same(gateHits([hit('a', 0.9, { score: 0.2 }), hit('b', 0.8)], { ...options, minScore: 0.3 }).map((h) => h.id), ['b'], 'minScore still filters')
  t.same(gateHits([hit('a', 0.9), hit('b', 0.9), hit('c', 0.9)], { ...options, topK: 2 }).map((h) => h.id), ['a', 'b'])
  t.same(gateHits([hit('a', 0.01), hit('b', 0)], { ...options, minRelevance: 0, falloff: 0 }).map((h) => h.id), ['a', 'b'], '0 and 0: the gate is off')
})
