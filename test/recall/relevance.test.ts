/**
 * The absolute relevance signal on hand-made stores, and the injection gate that reads it.
 * Values are pinned to three decimals: relevance is deterministic (store counts and string
 * matches only), so a change here is a change of the signal. Mutation checks: without the rule
 * on names the store has never seen, and without the note side, the cases they exist for fail.
 */
import t from 'tap'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, EVIDENCE_NOTES, OPEN_COSINE, SCENE_EVIDENCE, gateHits, sceneEvidenceOf, type GateOptions } from '../../lib/recall/gate.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { namesIn, queryContent, queryRelevance, relevanceSides } from '../../lib/recall/relevance.ts'
import { analyzeQuery } from '../../lib/recall/symbols.ts'
import type { Hit } from '../../lib/recall/types.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

function storeOf(texts: readonly string[]): BlockStore {
  const store = new BlockStore(':memory:')
  store.commitMany(texts.map((text) => ({ text })))
  return store
}

const GATE: GateOptions = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const fixed = (hits: readonly Hit[]) => hits.map((h) => [h.text, Number(h.relevance.toFixed(3))])

t.test('a name the store has never seen: notes that share the rest of the question are about someone else', async (t) => {
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
  t.same(hits.map((h) => h.relevance), [0, 0, 0], 'Caroline is in no note: nothing here is about her')
  t.same(gateHits(hits, GATE), [], 'nothing is injected')
  t.same(namesIn('What did Caroline say about the studio?'), ['caroline'], '"What" opens the sentence: grammar, not a name')
  t.same(namesIn('When did LGBTQ month start? I asked Nate\'s sister and Jon.'), ['lgbtq', 'nate', 'jon'], 'acronyms anywhere, possessives without their s')
  t.same(fixed(recallBlocks(store, 'How is the studio Jon opened doing?', { topK: 1 })),
    [['Jon: The dance studio finally opened, the first class was full.', 1]], 'a name the store knows keeps the rest of the question')
  const own = storeOf(['Caroline: My friend opened a studio downtown.', 'Caroline: I painted a sunrise.', 'Melanie: The kids loved the beach.'])
  t.teardown(() => own.close())
  t.same(fixed(recallBlocks(own, 'What did Caroline say about the studio?', { topK: 1 })),
    [['Caroline: My friend opened a studio downtown.', 1]], 'in the store that knows her, all of it')
})

t.test('a pasted chat is about its speakers: names inside it are the asker\'s life; a store that never heard of the speakers is someone else\'s', async (t) => {
  const memories = storeOf([
    'Bart and his new neighbor Honghong had a great time playing hide and seek on the lawn.',
    'Bart felt very happy playing hide and seek in the park with his classmates.',
    'Bart was flying a kite at the beach and felt very happy.',
    'Bart watched his favorite cartoon at home.',
  ])
  const others = storeOf([
    'Joanna: We played hide and seek in the park with the kids today, so much fun!',
    'Jon: My neighbor loves playing games in the park on weekends.',
    'Joanna: The kids found me first, I hid behind a tree.',
    'Jon: Sounds like fun! Did the kids win?',
  ])
  t.teardown(() => { memories.close(); others.close() })
  const chat = (found: string) => `Bart: "We played hide and seek in the park today!"\nAssistant: "Sounds like fun! Who found you first?"\nBart: "${found}, she loves playing hide and seek too."`
  const named = chat('My neighbor Xiaohong found me')
  const plain = chat('My neighbor found me')
  t.ok(gateHits(recallBlocks(memories, named, { topK: 5 }), GATE).some((h) => h.text.includes('Honghong')),
    'Bart is known: Xiaohong, a name the memories spell otherwise, does not close the chat')
  t.same(gateHits(recallBlocks(others, plain, { topK: 5 }), GATE), [], 'no note of this store has heard of Bart: its hide-and-seek lines are someone else\'s')
  t.ok(recallBlocks(others, plain, { topK: 5 }).length > 0, 'ranking alone finds them')
  const keys = 'Host: the billing box\nOwner: who runs the billing box?'
  t.same(queryContent(memories, analyzeQuery(keys), keys).unknownNames, [], 'labels opening one line each are keys, not speakers (and roles are not people)')
  const roles = 'User: "We played hide and seek today"\nAssistant: "Fun!"\nUser: "Did Xiaohong play too?"'
  t.same(queryContent(memories, analyzeQuery(roles), roles).unknownNames, ['xiaohong'], 'a chat of roles is read for the names its text mentions')
  const letters = 'Q: "We played hide and seek today"\nA: "Fun!"\nQ: "Did Xiaohong play too?"\nA: "Yes."'
  t.same(queryContent(memories, analyzeQuery(letters), letters).unknownNames, ['xiaohong'], 'and so is a Q: / A: paste: one letter names no one')
  const zh = '小明: 我今天去海边了！\n助手: 真好！\n小明: 我放了风筝。'
  t.same(queryContent(memories, analyzeQuery(zh), zh).unknownNames, ['小明'], 'a CJK speaker is looked up as its bigrams')

  const textNames = mutant({ file: 'recall/relevance.ts', from: 'const names = speakers.length > 0 ? speakers : namesOf(turns)', to: 'const names = namesOf(turns)' })
  t.teardown(() => textNames.remove())
  const m = await textNames.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.same(gateHits(m.recallBlocks(memories, named, { topK: 5 }), GATE), [], 'the mutant reading the text\'s names closes the chat on Xiaohong')
  t.ok(gateHits(m.recallBlocks(others, plain, { topK: 5 }), GATE).length > 0, 'and opens it on the store of other people')
})

t.test('a rare CJK bigram the note holds carries the question; bigrams that touch a particle or are function words do not count', async (t) => {
  const store = storeOf([
    '格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。',
    '红矮星是主序星中质量最小的一类恒星。',
    'billing 服务端口 8499，部署在 10.3.7.9',
  ])
  t.teardown(() => store.close())
  const hits = recallBlocks(store, '格利泽的质量是多少？', { topK: 3 })
  t.same(fixed(hits), [
    ['格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。', 1],
    ['红矮星是主序星中质量最小的一类恒星。', 0.2],
  ])
  t.same(gateHits(hits, { ...GATE, falloff: 0.5 }).map((h) => h.text), ['格利泽581c是一颗环绕红矮星格利泽581运行的系外行星，质量约为地球的5倍。'],
    'a steeper falloff drops the note that holds only 质量')
  const ops = recallBlocks(store, 'billing 服务的端口是多少？', { topK: 1 })
  t.equal(ops[0]!.relevance, 1, '"务的", "的端", "口是" straddle words and 多少 is a function word: a small store lacks them and that says nothing')
  const name = queryContent(store, analyzeQuery('舜天的神号是什么？'), '舜天的神号是什么？')
  t.same(name.parts.map((p) => p.term), ['舜天', '神号'],
    'a name the segmenter cuts into single characters (舜|天) is still a part when no note holds it; 什么 is not one')
})

t.test('a transcript of small talk against a store of work notes: below the gate', async (t) => {
  const store = storeOf([
    'billing 服务端口 8499，部署在 10.3.7.9',
    '值班室分机号 4324，值班人 老周',
    '周会改到每周三下午三点，会议室 B302',
    'nginx 配置文件在 /etc/nginx/conf.d/app.conf',
  ])
  t.teardown(() => store.close())
  const chat = '用户: 今天好累啊，下午开了三个会\n助手: 辛苦了，要不要早点休息？\n用户: 晚上吃什么好呢，想吃点热的'
  const hits = recallBlocks(store, chat, { topK: 5 })
  t.ok(hits.length > 0, 'ranking alone finds something (下午 …)')
  t.same(fixed(hits), [['周会改到每周三下午三点，会议室 B302', 0.154]], 'the chat mentions 下午, 1 of the note\'s 13 terms, and the note holds little of the chat')
  t.same(gateHits(hits, GATE), [])
})

t.test('a pasted chat and the short memory it is about: the note side does not shrink with the chat', async (t) => {
  const store = storeOf([
    '小明在海边放风筝，感到非常开心。',
    '小明在生日派对上收到花束，感到非常开心。',
    '小明的数学考试得了满分，感到非常骄傲。',
    '小明和朋友吵架了，感到很难过。',
    '小明周末去爷爷家摘苹果。',
  ])
  t.teardown(() => store.close())
  const chat = '小明: 你知道吗？我今天去海边了！\n助手: 真好，海边玩了什么？\n小明: 我放了风筝，风特别大，风筝飞得好高！\n' +
    '助手: 听起来真开心！\n小明: 可惜后来下雨了，我们只好回家，不过还是很开心。'
  const hits = recallBlocks(store, chat, { topK: 5 })
  const content = queryContent(store, analyzeQuery(chat), chat)
  t.same(fixed(hits), [['小明在海边放风筝，感到非常开心。', 0.6], ['小明在生日派对上收到花束，感到非常开心。', 0.143]])
  t.same(Object.values(relevanceSides(content, hits[0]!.text)).map((v) => Number(v.toFixed(3))), [0.149, 0.3],
    'the memory holds 15 % of the chat, the chat 3 of the memory\'s 10 terms (海边, 风筝, 开心)')
  t.same(gateHits(hits, GATE).map((h) => h.text), ['小明在海边放风筝，感到非常开心。', '小明在生日派对上收到花束，感到非常开心。'],
    'the turn opens on the kite; the other memory ranked with it stays (above the falloff)')
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

t.test('the gate: the turn opens on its evidence, falloff, nothing passes, pins and attached notes, minScore, topK', async (t) => {
  const options = { ...GATE, minRelevance: 0.3, falloff: 0.5 }
  t.same(gateHits([hit('a', 0.19), hit('b', 0.1)], options), [], 'the notes\' relevances sum below the threshold: nothing is injected')
  t.same(gateHits([hit('a', 0.9), hit('b', 0.5), hit('c', 0.44), hit('d', 0.3)], options).map((h) => h.id), ['a', 'b'],
    'relevance falls off below half of the best: fewer than topK')
  t.same(gateHits([hit('a', 0.4), hit('b', 0.25), hit('c', 0.19)], options).map((h) => h.id), ['a', 'b'],
    'a note below the threshold ranked with one above it is injected unless it falls off')
  t.same(gateHits([hit('a', 0.1), hit('b', 0.6)], options).map((h) => h.id), ['b'], 'the best note need not rank first')
  t.same(gateHits([hit('p', 0, { exact: true, score: 1.001 }), hit('a', 0.1)], options).map((h) => h.id), ['p'], 'an exact pin always passes, alone')
  t.same(gateHits([hit('s', 0.05), hit('a', 0.8)], { ...options, attached: new Set(['s']) }).map((h) => h.id), ['s', 'a'],
    'a note attached to the active scene passes like a pin (the seam for scenes)')
  t.same(gateHits([hit('a', 0.9, { score: 0.2 }), hit('b', 0.8)], { ...options, minScore: 0.3 }).map((h) => h.id), ['b'], 'minScore still filters')
  t.same(gateHits([hit('a', 0.9, { score: 0.2 }), hit('b', 0.2)], { ...options, minScore: 0.3 }), [],
    'a note minScore removes does not open the turn for the others')
  t.same(gateHits([hit('a', 0.9), hit('b', 0.9), hit('c', 0.9)], { ...options, topK: 2 }).map((h) => h.id), ['a', 'b'])
  t.same(gateHits([hit('a', 0.01), hit('b', 0)], { ...options, minRelevance: 0, falloff: 0 }).map((h) => h.id), ['a', 'b'], '0 and 0: the gate is off')
})

t.test('the turn\'s evidence: several notes that each share a little open it; one accidental match or a long tail does not', async (t) => {
  const options = { ...GATE, minRelevance: 0.3, falloff: 0.5 }
  const evoked = [hit('a', 0.15), hit('b', 0.12), hit('c', 0.1)]
  t.same(gateHits(evoked, options).map((h) => h.id), ['a', 'b', 'c'], 'none reaches 0.3 alone; together they do (a chat evoking three memories)')
  t.same(gateHits([hit('a', 0.25), hit('b', 0.01)], options), [], 'one note that shares a little, and nothing else: closed')
  const tail = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => hit(id, 0.055))
  t.same(gateHits(tail, { ...options, topK: 7 }), [], `only the best ${EVIDENCE_NOTES} count (5 × 0.055 < 0.3), whatever topK is`)
  t.equal(DEFAULT_MIN_RELEVANCE, 0.5)

  const bestOnly = mutant({ file: 'recall/gate.ts', from: 'const evidence = evidenceOf(hits, options.minScore) >= options.minRelevance', to: 'const evidence = best >= options.minRelevance' })
  t.teardown(() => bestOnly.remove())
  const m = await bestOnly.load<typeof import('../../lib/recall/gate.ts')>('recall/gate.ts')
  t.same(m.gateHits(evoked, options), [], 'the mutant that opens on the best note alone drops the evoked memories')
  const unbounded = mutant({ file: 'recall/gate.ts', from: 'counted++ < EVIDENCE_NOTES', to: 'counted++ < Infinity' })
  t.teardown(() => unbounded.remove())
  const u = await unbounded.load<typeof import('../../lib/recall/gate.ts')>('recall/gate.ts')
  t.ok(u.gateHits(tail, { ...options, topK: 7 }).length > 0, 'the mutant that sums every hit opens on a long tail of weak matches')
})

t.test('one scene carries the evidence: single words scattered over unrelated scenes do not open the turn', async (t) => {
  // A short everyday line against a store of articles: each of the five best paragraphs, each of
  // another article, holds one of its words (.13 each, .65 together).
  const scattered = ['a', 'b', 'c', 'd', 'e'].map((id) => hit(id, 0.13, { scene: `article-${id}` }))
  t.equal(sceneEvidenceOf(scattered), 0.13)
  t.same(gateHits(scattered, GATE), [], `no scene carries ${SCENE_EVIDENCE} × ${DEFAULT_MIN_RELEVANCE}: closed`)
  const together = scattered.map((h, i) => ({ ...h, scene: i < 3 ? 'article-a' : h.scene }))
  t.same(gateHits(together, GATE).map((h) => h.id), ['a', 'b', 'c', 'd', 'e'], 'three paragraphs of one article carry .39 of it: open, all five injected')
  t.same(gateHits(scattered.map(({ scene: _, ...h }) => h), GATE).length, 5, 'notes without a scene count together: a store without scenes is gated as before')
  t.same(gateHits([hit('p', 0, { exact: true, score: 1.001, scene: 'x' }), ...scattered], GATE).map((h) => h.id), ['p'], 'a pin still passes alone')
  t.same(gateHits(scattered, { ...GATE, minRelevance: 0, falloff: 0 }).length, 5, 'minRelevance 0 turns it off with the gate')
  // Mutation: without the scene rule the scattered line opens the turn.
  const m = mutant({ file: 'recall/gate.ts', from: ' && sceneEvidenceOf(hits, options.minScore) >= SCENE_EVIDENCE * options.minRelevance', to: '' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/recall/gate.ts')>('recall/gate.ts')
  t.equal(mutated.gateHits(scattered, GATE).length, 5, 'the mutant injects the five paragraphs')
})

t.test('recall marks each hit with its scene, which the gate reads', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany([{ text: '值班室分机号 4324', scene: 'team' }, { text: '值班人 老周，周末轮换' }])
  const hits = recallBlocks(store, '值班', { topK: 5 })
  t.same(new Map(hits.map((h) => [h.text, h.scene])), new Map([['值班室分机号 4324', 'team'], ['值班人 老周，周末轮换', undefined]]))
  const unmarked = mutant({ file: 'recall/recall.ts', from: "if (c.scene !== '') hit.scene = c.scene", to: '' })
  t.teardown(() => unmarked.remove())
  const { recallBlocks: mutated } = await unmarked.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const { BlockStore: MutatedStore } = await unmarked.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store2 = new MutatedStore(':memory:')
  t.teardown(() => store2.close())
  store2.commitMany([{ text: '值班室分机号 4324', scene: 'team' }, { text: '值班人 老周，周末轮换' }])
  t.equal(mutated(store2, '值班', { topK: 5 }).find((h) => h.text === '值班室分机号 4324')?.scene, undefined, 'the mutant loses the scene')
})

t.test('with vectors: one note that matches by meaning opens the turn; a middling cosine does not', async (t) => {
  const paraphrase = [hit('bike', 0.47, { cosine: 0.47 }), hit('pet', 0.02, { cosine: 0.02 })]
  t.same(gateHits(paraphrase, GATE).map((h) => h.id), ['bike'], `a cosine of .47 (≥ ${OPEN_COSINE}) opens the turn though the evidence is below ${DEFAULT_MIN_RELEVANCE}`)
  t.same(gateHits([hit('a', 0.35, { cosine: 0.35 })], GATE), [], 'a cosine below the bar and no other evidence: closed')
  t.same(gateHits([hit('a', 0.47)], GATE), [], 'the same relevance without a cosine (lexical recall): closed')
  t.same(gateHits([hit('p', 0, { exact: true, score: 1.001, cosine: 0.9 }), hit('a', 0.1)], GATE).map((h) => h.id), ['p'], 'a pin\'s cosine does not open the turn for the others')

  const noCosine = mutant({ file: 'recall/gate.ts', from: ' || cosine >= OPEN_COSINE', to: '' })
  t.teardown(() => noCosine.remove())
  const m = await noCosine.load<typeof import('../../lib/recall/gate.ts')>('recall/gate.ts')
  t.same(m.gateHits(paraphrase, GATE), [], 'the mutant without the cosine rule drops the paraphrased note')
})

t.test('mutations: without the name rule the question about someone else injects; without the note side the chat gets nothing', async (t) => {
  const names = mutant({ file: 'recall/relevance.ts', from: '> 0) ? [] : names', to: '> 0) ? [] : []' })
  t.teardown(() => names.remove())
  const store = storeOf([
    'Jon: The dance studio finally opened, the first class was full.',
    'Gina: How is the studio doing? Are the classes full?',
    'Jon: The studio needs a new floor before the winter.',
    'Gina: I ordered new shelves for the store.',
  ])
  t.teardown(() => store.close())
  const question = 'What did Caroline say about the studio?'
  t.same(gateHits(recallBlocks(store, question, { topK: 3 }), GATE), [], 'the real signal: nothing')
  const withoutNames = await names.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(gateHits(withoutNames.recallBlocks(store, question, { topK: 3 }), GATE).length > 0, 'the mutant injects notes about someone else')

  const noteSide = mutant({ file: 'recall/relevance.ts', from: 'Math.max(sides.query, NOTE_SIDE_WEIGHT * sides.note)', to: 'sides.query' })
  t.teardown(() => noteSide.remove())
  const memories = storeOf(['小明在海边放风筝，感到非常开心。', '小明的数学考试得了满分，感到非常骄傲。', '小明和朋友吵架了，感到很难过。', '小明周末去爷爷家摘苹果。'])
  t.teardown(() => memories.close())
  const chat = '小明: 你知道吗？我今天去海边了！\n助手: 真好，海边玩了什么？\n小明: 我放了风筝，风特别大，风筝飞得好高！\n' +
    '助手: 听起来真开心！\n小明: 可惜后来下雨了，我们只好回家，不过还是很开心。'
  t.same(gateHits(recallBlocks(memories, chat, { topK: 5 }), GATE).map((h) => h.text)[0], '小明在海边放风筝，感到非常开心。', 'the real signal: the kite memory')
  const withoutNote = await noteSide.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.same(gateHits(withoutNote.recallBlocks(memories, chat, { topK: 5 }), GATE), [], 'the query side alone leaves the chat without notes')
})

t.test('Latin coordination: one shared English word is an accident; two are a match', async (t) => {
  const wiki = storeOf([
    '该专辑收录了单曲《Paint the Sky》，于2009年在台北发行，销量突破十万张。',
    '《Weekend》是该乐队的第三张录音室专辑，由环球唱片发行。',
    '儿童剧《Kids》在上海首演，此后巡演至北京、广州等十二座城市。',
    '长江是中国第一长河，全长约6300公里，流经十一个省级行政区。',
    '故宫位于北京中轴线的中心，是明清两代的皇家宫殿。',
  ])
  t.teardown(() => wiki.close())
  const question = 'What did the kids paint last weekend?'
  const hits = recallBlocks(wiki, question, { topK: 5 })
  t.ok(hits.length >= 3, 'ranking finds the paragraphs that quote one of its words')
  const content = queryContent(wiki, analyzeQuery(question), question)
  t.same(hits.map((h) => relevanceSides(content, h.text).query), hits.map(() => 0), 'each paragraph holds one of the question\'s words: none counts on the query side')
  t.ok(hits.every((h) => h.relevance < 0.2), `what is left is the note side's few percent (${hits.map((h) => h.relevance.toFixed(3)).join(', ')})`)
  t.same(gateHits(hits, GATE), [], 'nothing is injected')

  const chat = storeOf(['The kids paint the fence every weekend.', 'I bought new paint for the kitchen.', '故宫位于北京中轴线的中心。'])
  t.teardown(() => chat.close())
  const own = recallBlocks(chat, question, { topK: 3 })
  t.equal(own[0]!.text, 'The kids paint the fence every weekend.', 'the note holding three of its words ranks first')
  t.ok(own[0]!.relevance >= 0.5, 'and keeps its query-side share')
  t.equal(gateHits(own, GATE)[0]?.text, 'The kids paint the fence every weekend.', 'and is injected first')
  t.ok(recallBlocks(chat, 'which paint?', { topK: 1 })[0]!.relevance > 0, 'a question with one Latin word: that word is enough')

  const ports = storeOf(['nginx 端口 8080，部署在 10.3.7.9', 'redis 端口 6379，只监听本机', '值班室分机号 4324，值班人 老周'])
  t.teardown(() => ports.close())
  t.same(gateHits(recallBlocks(ports, 'nginx 和 redis 的端口分别是多少？', { topK: 3 }), GATE).map((h) => h.text).sort(),
    ['nginx 端口 8080，部署在 10.3.7.9', 'redis 端口 6379，只监听本机'], 'a Chinese question naming two services: each service\'s note is injected')

  const uncoordinated = mutant({ file: 'recall/relevance.ts', from: 'if (words >= Math.min(LATIN_COORDINATION, content.latinWords)) held += wordMass', to: 'held += wordMass' })
  t.teardown(() => uncoordinated.remove())
  const m = await uncoordinated.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(gateHits(m.recallBlocks(wiki, question, { topK: 5 }), GATE).length > 0, 'the mutant without coordination injects the paragraphs')
})
