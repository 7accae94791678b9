/**
 * A message read with the earlier messages of its live conversation (`lib/recall/conversation.ts`):
 * a follow-up question finds the note its conversation is about, and so does a remark; a message
 * that matches the store by itself is answered alone; an earlier message's numbers neither pin
 * nor abstain; a live chat is read as the same chat pasted. Mutation checks: without the
 * conversation the follow-up finds nothing; without the evidence rule an answered question pulls
 * in the earlier topic; with context symbols as exact symbols an old number pins its note.
 */
import t from 'tap'
import { ALONE_EVIDENCE, EARLIER_MESSAGE_CHARS, EARLIER_MESSAGES, conversationTurns } from '../../lib/recall/conversation.ts'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../../lib/recall/gate.ts'
import { isAbstention } from '../../lib/recall/abstain.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { analyzeQuery, analyzeTurns, LAST_TURN_WEIGHT } from '../../lib/recall/symbols.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

const NOTES = [
  '黄山团建定在十月第二周，住在山脚的温泉酒店。',
  '周会改到每周三下午三点。',
  '女儿的钢琴课在每周六上午，老师姓林。',
  'billing 服务端口 8499，部署在 10.3.7.9',
  '端口 13010 给内部网关用',
  '医院复查要带上次的化验单。',
  'The staging cluster runs Kubernetes 1.29',
  'Grafana dashboard for billing lives under ops/billing',
]
const GATE = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
type Recall = typeof recallBlocks

function storeOf(): BlockStore {
  const store = new BlockStore(':memory:')
  store.commitMany(NOTES.map((text) => ({ text })))
  return store
}

/** What the injection would show for a message after `earlier`. */
function shown(recall: Recall, store: BlockStore, message: string, earlier: string[]): string[] {
  return gateHits(recall(store, message, { topK: 5, earlier }), GATE).map((h) => h.text)
}

const FOLLOW_UP = { message: '那住哪里定了吗？', earlier: ['下周我们团队去黄山团建'] }
const ANSWERED = { message: '女儿钢琴课是哪天？', earlier: ['下周我们团队去黄山团建，住在山脚'] }
const REMARK = { message: '今天天气不错，团队心情都很好', earlier: ['黄山团建定了吗？'] }

t.test('a follow-up question finds what its conversation is about; alone it finds nothing', async (t) => {
  const store = storeOf()
  t.teardown(() => store.close())
  t.same(shown(recallBlocks, store, FOLLOW_UP.message, []), [], 'alone: nothing to inject')
  t.same(shown(recallBlocks, store, FOLLOW_UP.message, FOLLOW_UP.earlier), [NOTES[0]], 'with the earlier message: the trip note')
  t.same(shown(recallBlocks, store, 'and which version does it run?', ['I am looking at the staging cluster today']), [NOTES[6]], 'in English too')
  const m = mutant({ file: 'recall/recall.ts', from: 'if (!answeredAlone(alone, query, source)) return recallTurns(source, query, earlier, options)', to: '' })
  t.teardown(() => m.remove())
  const { recallBlocks: without } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.same(shown(without, store, FOLLOW_UP.message, FOLLOW_UP.earlier), [], 'the mutant that never reads the conversation finds nothing')
})

t.test('a question the store answers by itself is answered alone; a remark is read with its conversation', async (t) => {
  const store = storeOf()
  t.teardown(() => store.close())
  t.equal(ALONE_EVIDENCE, DEFAULT_MIN_RELEVANCE, 'alone means: it would open the gate by itself')
  const alone = recallBlocks(store, ANSWERED.message, { topK: 5 })
  t.same(recallBlocks(store, ANSWERED.message, { topK: 5, earlier: ANSWERED.earlier }), alone, 'the same hits, relevances and why as without the conversation')
  t.same(shown(recallBlocks, store, ANSWERED.message, ANSWERED.earlier), [NOTES[2]])
  t.same(shown(recallBlocks, store, REMARK.message, []), [], 'alone, the remark finds nothing')
  // The pre-step does not quote the trip note again while the conversation shows it (test/plugin/repeats.test.ts).
  t.same(shown(recallBlocks, store, REMARK.message, REMARK.earlier), [NOTES[0]], 'after the trip question, the remark is read with it')
  const evidence = mutant({ file: 'recall/conversation.ts', from: ' || evidenceOf(hits) >= ALONE_EVIDENCE', to: '' })
  t.teardown(() => evidence.remove())
  const e = await evidence.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(shown(e.recallBlocks, store, ANSWERED.message, ANSWERED.earlier).includes(NOTES[0]!), 'the mutant without the evidence rule pulls the earlier topic into an answered question')
})

t.test('an earlier message\'s numbers are searched but neither pin nor abstain', async (t) => {
  const store = storeOf()
  t.teardown(() => store.close())
  const hits = recallBlocks(store, '后来怎么样了？', { topK: 5, earlier: ['端口 13010 又挂了'] })
  t.equal(hits[0]?.text, NOTES[4], 'the note holding the earlier number ranks first')
  t.ok(hits.every((h) => !h.exact), 'but it is not an exact pin (pins always pass the gate)')
  const absent = recallBlocks(store, '后来怎么样了？', { topK: 5, earlier: ['端口 47999 又挂了'] })
  t.notOk(isAbstention(absent), 'a number the store lacks, said earlier, makes no abstention now')
  t.ok(isAbstention(recallBlocks(store, '端口 47999 是谁的？', { topK: 5 })), 'asked now, it does')
  const m = mutant({ file: 'recall/symbols.ts', from: 'latinTerms(text, context === true ? { add: word } : exact, word)', to: 'latinTerms(text, exact, word)' })
  t.teardown(() => m.remove())
  const { recallBlocks: pinning } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(pinning(store, '后来怎么样了？', { topK: 5, earlier: ['端口 13010 又挂了'] })[0]!.exact, 'the mutant that reads earlier symbols as asked pins the old number\'s note')
})

t.test('a live chat is read as the same chat pasted; the conversation is bounded', async (t) => {
  const lines = ['我今天在公园玩了一天滑梯', '你最喜欢什么游戏？', '我更喜欢捉迷藏']
  const pasted = lines.map((l, i) => `${i % 2 === 0 ? 'Bart' : 'Assistant'}: ${l}`).join('\n')
  t.same(analyzeTurns(conversationTurns(lines[2]!, lines.slice(0, 2))), analyzeQuery(pasted), 'the same terms and weights')
  t.same(conversationTurns('单独一句', []), [{ text: '单独一句', weight: 1 }], 'no earlier messages: the message as it is')
  const turns = conversationTurns('最后', ['第一', 'Alice: 你好\nBob: 在吗'])
  t.same(turns.map((x) => [x.text.trim(), x.weight, x.context === true]), [['第一', 1, true], ['你好', 1, true], ['在吗', 1, true], ['最后', LAST_TURN_WEIGHT, false]],
    'the message weighs the last turn\'s weight; an earlier pasted chat loses its labels')
  const many = Array.from({ length: 20 }, (_, i) => `消息 ${i}`)
  t.same(conversationTurns('最后', many).filter((x) => x.context).map((x) => x.text), many.slice(-EARLIER_MESSAGES), `the last ${EARLIER_MESSAGES} earlier messages`)
  const long = 'x'.repeat(5_000) + ' tail'
  t.equal(conversationTurns('最后', [long])[0]!.text.length, EARLIER_MESSAGE_CHARS, 'an earlier message is read from its end')
  t.ok(conversationTurns('最后', Array.from({ length: 8 }, () => 'y'.repeat(EARLIER_MESSAGE_CHARS))).reduce((n, x) => n + x.text.length, 0) <= 8_192, 'all of it within MAX_QUERY_CHARS')
})

t.test('a question about someone the store has never heard of is not rescued by the conversation', async (t) => {
  const store = new BlockStore(':memory:')
  store.commitMany([
    'Jon: The dance studio finally opened, the first class was full.',
    'Jon: The studio needs a new floor before the winter.',
    'Gina: My store had its best month since the launch.',
  ].map((text) => ({ text })))
  t.teardown(() => store.close())
  // The conversation names Jon, whom the store knows, so the relevance rule alone would not zero it.
  const earlier = ['How is the dance studio of Jon doing? Is the first class full?']
  const question = 'And what did Caroline think of it?'
  t.same(shown(recallBlocks, store, question, earlier), [], 'Caroline is in no note: nothing is injected')
  t.ok(shown(recallBlocks, store, 'And what did the teacher think of it?', earlier).length > 0, 'a question naming no one: the conversation is read')
  const m = mutant({ file: 'recall/conversation.ts', from: 'return names.length > 0 && names.every', to: 'return false && names.every' })
  t.teardown(() => m.remove())
  const { recallBlocks: without } = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  t.ok(shown(without, store, question, earlier).length > 0, 'the mutant without the name rule injects the studio notes for a question about someone else')
})
