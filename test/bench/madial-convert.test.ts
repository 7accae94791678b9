/**
 * `npm run eval:madial`'s rule on a miniature MADial-Bench checkout: user 1 only, memories in file
 * order, the chat before the first test turn, gold kept to the corpus, a dialogue without gold
 * left out, an English line that lost its label given to the speaker whose turn it is, and the
 * files written as the shared sets were (Python's `json.dumps` spacing). The real check against
 * the shared madial-zh-dev needs the source, so it is run by hand (bench/README.md).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { convertMadial, firstDifference, sourceReader } from '../../bench/recall/madial-convert.ts'

const checkout = mkdtempSync(join(tmpdir(), 'madial-'))
t.teardown(() => rmSync(checkout, { recursive: true, force: true }))
const write = (path: string, lines: readonly unknown[]) => {
  mkdirSync(join(checkout, path, '..'), { recursive: true })
  writeFileSync(join(checkout, path), lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
}
write('data/ch/MADial-Bench-zh-memory.json', [
  { 1: { time: '2023-12-25', scene: '活动类', emotion: '开心', event: 'Bart在圣诞节晚会上跳舞。', 'user-id': 1, id: '1' } },
  { 2: { time: '2023-01-02', scene: '其他类', emotion: '难过', event: 'Lisa的猫走丢了。', 'user-id': 2, id: '2' } },
  { 3: { time: '2023-03-07', scene: '喜好类', emotion: '开心', event: 'Bart喜欢芒果冰淇淋。', 'user-id': 1, id: '3' } },
])
write('data/en/MADial-Bench-en-memory.json', [
  { 1: { time: '2023-12-25', scene: 'Activity', emotion: 'Happy', event: 'Bart danced at the Christmas party.' } },
  { 2: { time: '2023-01-02', scene: 'Other', emotion: 'Sad', event: 'Lisa lost her cat.' } },
])
const dialogue = (lines: string[], turn: number, gold: number[], user: number) => ({ dialogue: ['<BOD>\n', ...lines, '<EOD>\n'], 'test-turn': [turn], 'relevant-id': gold, 'user-id': user, id: 0 })
write('data/ch/MADial-Bench-zh-dialogue.json', [
  dialogue(['<Bart>:"我要表演魔术！"\n', '<Assistant>:"太棒了！"\n', '<Bart>:"我有点紧张。"\n', '<Assistant>:"深呼吸。"\n'], 3, [3, 1], 1),
  dialogue(['<Lisa>:"我的猫不见了。"\n', '<Assistant>:"别急。"\n'], 2, [2], 2),
])
write('data/en/MADial-Bench-en-dialogue.json', [
  dialogue(['<Bart>: "I will do a magic trick!"\n', 'That\'s great!\n', '<Bart>: "I am a bit nervous."\n', '<Assistant>: "Breathe."\n'], 3, [3, 1], 1),
  dialogue(['<Lisa>: "My cat is gone."\n', '<Assistant>: "Don\'t worry."\n'], 2, [2], 2),
  dialogue(['<Bart>: "Ice cream!"\n', '<Assistant>: "Yum."\n'], 2, [3], 1),
])

t.test('Chinese: user 1\'s memories and chats, gold in order, category from the first gold memory', async (t) => {
  const set = convertMadial(sourceReader(checkout), 'zh')
  t.equal(set.corpus,
    '{"id": "m1", "text": "Bart在圣诞节晚会上跳舞。", "session": "user1", "time": "2023-12-25", "scope": "user1", "scene": "活动类", "emotion": "开心"}\n' +
    '{"id": "m3", "text": "Bart喜欢芒果冰淇淋。", "session": "user1", "time": "2023-03-07", "scope": "user1", "scene": "喜好类", "emotion": "开心"}\n')
  t.equal(set.queries, '{"qid": "madial-zh-0", "query": "Bart: \\"我要表演魔术！\\"\\nAssistant: \\"太棒了！\\"", "gold": ["m3", "m1"], "category": "喜好类", "scope": "user1"}\n',
    'the lines before the test turn; user 2\'s dialogue is not written')
  t.same([set.meta.n_corpus, set.meta.n_queries], [2, 1])
})

t.test('English: a memory without English text is left out, and so is a chat whose gold it was; an unlabelled line is the assistant\'s', async (t) => {
  const set = convertMadial(sourceReader(checkout), 'en')
  t.equal(set.corpus, '{"id": "m1", "text": "Bart danced at the Christmas party.", "session": "user1", "time": "2023-12-25", "scope": "user1", "scene": "Activity", "emotion": "Happy"}\n')
  t.equal(set.queries, '{"qid": "madial-en-0", "query": "Bart: \\"I will do a magic trick!\\"\\nAssistant: \\"That\'s great!\\"", "gold": ["m1"], "category": "Activity", "scope": "user1"}\n')
})

t.test('the check: the same bytes, or the first line that differs', async (t) => {
  const set = convertMadial(sourceReader(checkout), 'zh')
  const dir = join(checkout, 'out')
  mkdirSync(dir)
  writeFileSync(join(dir, 'queries.jsonl'), set.queries)
  t.equal(firstDifference(set.queries, join(dir, 'queries.jsonl')), undefined)
  writeFileSync(join(dir, 'queries.jsonl'), set.queries.replace('m3', 'm9'))
  t.match(firstDifference(set.queries, join(dir, 'queries.jsonl')), /line 1 differs/)
  t.match(firstDifference(set.corpus, join(dir, 'corpus.jsonl')), /missing/)
  t.throws(() => sourceReader(join(checkout, 'nowhere')), /not a directory/)
  t.throws(() => sourceReader(dir)('data/ch/MADial-Bench-zh-memory.json'), /neither a MADial-Bench checkout nor its git directory/)
})
