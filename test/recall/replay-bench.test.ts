/**
 * `bench:recall`'s turn-by-turn replay of pasted chats (`bench/recall/replay.ts`): the asker's
 * lines in order, each turn's injection less the notes an earlier turn showed, characters with and
 * without that memory, false injections over turns and chats.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE } from '../../lib/recall/gate.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import { readEvalSet } from '../../bench/recall/eval-set.ts'
import { askerLines } from '../../bench/recall/live.ts'
import { replayChats, replayTable } from '../../bench/recall/replay.ts'
import { tempDir } from '../helpers/temp.ts'

function tinySet(corpus: unknown[], queries: unknown[]): string {
  const dir = tempDir('stablemem-replay')
  writeFileSync(join(dir, 'corpus.jsonl'), corpus.map((r) => JSON.stringify(r)).join('\n'))
  writeFileSync(join(dir, 'queries.jsonl'), queries.map((r) => JSON.stringify(r)).join('\n'))
  return dir
}

const CHAT = 'Bart: I flew my red kite in the park today\nAssistant: Nice!\nBart: the kite string broke near the lake\nAssistant: Oh no\nBart: I flew the red kite in the park again'
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }

t.test('a chat is replayed line by line; a note shown on an earlier turn is not counted again', async (t) => {
  t.same(askerLines(CHAT), ['I flew my red kite in the park today', 'the kite string broke near the lake', 'I flew the red kite in the park again'], 'the asker\'s lines, labels dropped')
  t.equal(askerLines('what colour was the kite?'), undefined, 'a single question is no chat')
  const set = readEvalSet(tinySet([
    { id: 'k1', text: 'Bart flew a red kite in the park with his dad', session: 'm1', scope: 'u' },
    { id: 'k2', text: 'The kite string broke near the lake and Bart cried', session: 'm2', scope: 'u' },
    { id: 'x1', text: 'Bart likes mango ice cream', session: 'm3', scope: 'u' },
  ], [{ qid: 'c', query: CHAT, gold: ['k1', 'k2'], scope: 'u' }, { qid: 'q', query: 'what colour was the kite?', gold: ['k1'], scope: 'u' }]))
  const other = readEvalSet(tinySet([{ id: 'z1', text: 'Alice moved to Lisbon in March', session: 'z' }], [{ qid: 'z', query: 'Lisbon', gold: ['z1'] }]))
  const replay = (await replayChats(set, [other], { gate, recall: (store, query, { topK, earlier }) => recallBlocksHybrid(store, null, query, { topK, earlier }) }))!
  t.match(replay, { chats: 1, turns: 3, shown_recall: 1 }, 'one chat of three lines; both gold notes shown on some turn')
  const { with: kept, without } = replay.chars_per_chat
  t.ok(kept.injected > 0 && kept.injected < without.injected, `the last line's notes were shown before: fewer characters with the memory (${kept.injected} < ${without.injected})`)
  t.ok(kept.resent < without.resent && kept.resent >= kept.injected, 're-sent: each message at least once')
  t.equal(replay.chars_per_chat.resent_saved, Math.round((1 - kept.resent / without.resent) * 10_000) / 10_000)
  t.match(replay.negatives, [{ against: other.name, turns: 3, rate: 0, chats_rate: 0, chars_per_turn: 0 }], 'the Lisbon store opens no turn')
  t.match(replayTable('chat', replay), /3 turns · gold shown on some turn 1\.000/)
  t.equal(await replayChats(other, [set], { gate, recall: (store, query, o) => recallBlocksHybrid(store, null, query, o) }), undefined, 'a set without chats is not replayed')
})
