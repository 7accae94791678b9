/**
 * Abstention is decided before any candidate is searched for or read (docs/benchmarks.md,
 * "Recall at 100k: the last two kinds"): an abstaining query runs no ranked search and reads no
 * note, its notice lists the query words some visible note holds (within scopes only the union's,
 * at most `MENTIONED_WORDS`), and a query whose asked string is held anywhere in the union is
 * still answered with that note.
 */
import t from 'tap'
import { abstentionOf, MENTIONED_WORDS } from '../../lib/recall/abstain.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

/** How often `ftsCandidates` and `blocksByRowid` are called while `fn` runs. */
function reads(store: BlockStore, fn: () => void): { searches: number, rows: number } {
  const counts = { searches: 0, rows: 0 }
  const candidates = store.ftsCandidates
  const byRowid = store.blocksByRowid
  store.ftsCandidates = (...args) => { counts.searches++; return candidates.apply(store, args) }
  store.blocksByRowid = (...args) => { counts.rows++; return byRowid.apply(store, args) }
  try { fn() } finally { store.ftsCandidates = candidates; store.blocksByRowid = byRowid }
  return counts
}

t.test('an abstaining query runs no ranked search and reads no candidate note', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany(['本机 13010 端口给内部网关用', 'billing 服务端口 8499', 'the gateway port is 8080'].map((text) => ({ text })))
  let hits = recallBlocks(store, '本机 19999 端口是干什么的', { topK: 5 })
  t.same(reads(store, () => { hits = recallBlocks(store, '本机 19999 端口是干什么的', { topK: 5 }) }), { searches: 0, rows: 0 })
  t.same(abstentionOf(hits), { missing: ['19999'], mentioned: ['本机', '端口'], near: [] }, 'the notice still names the words the store holds')
  t.same(abstentionOf(recallBlocks(store, 'what is the gateway port 9090 for', { topK: 5 }))?.mentioned, ['gateway', 'port'], 'Latin words too')
  // A held string is answered, not abstained on: the shortcut hides no hit.
  t.equal(recallBlocks(store, '本机 13010 端口是干什么的', { topK: 5 })[0]?.text, '本机 13010 端口给内部网关用')
  t.ok(reads(store, () => recallBlocks(store, '本机 13010 端口是干什么的', { topK: 5 })).searches > 0)
})

t.test('a string held in the union is answered, also when the union is not the whole store', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务的端口是 8443', scope: 'workspace:/a' })
  store.commit({ text: 'gateway 服务的端口是 8444', scope: 'workspace:/b' })
  const union = ['global', 'workspace:/a']
  t.equal(recallBlocks(store, '8443 是哪个服务的？', { topK: 5, scopes: union })[0]?.text, 'billing 服务的端口是 8443')
  // Mutation: an early abstention that asks the whole store, not the union, whether the string
  // is held would answer for the other workspace; one that skips the check hides this hit.
  const blind = mutant({ file: 'recall/recall.ts', from: "const held = (s: string) => inStore(store, s, scopes)\n", to: 'const held = (_s: string) => false\n' })
  t.teardown(() => blind.remove())
  const mutated = (await blind.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).recallBlocks
  t.same(mutated(store, '8443 是哪个服务的？', { topK: 5, scopes: union }), [], 'mutation: deciding without the held check hides the real hit')
})

t.test('the notice lists only words a note of the union holds, and at most MENTIONED_WORDS', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务的端口是 8443', scope: 'workspace:/a' })
  store.commit({ text: 'the secret project zephyr listens on 7001', scope: 'workspace:/b' })
  const inA = abstentionOf(recallBlocks(store, 'is zephyr billing on 9999', { topK: 5, scopes: ['global', 'workspace:/a'] }))
  t.same(inA?.mentioned, ['billing'], 'a word held only in another workspace is not named')
  t.same(abstentionOf(recallBlocks(store, 'is zephyr billing on 9999', { topK: 5 }))?.mentioned, ['zephyr', 'billing'], 'unscoped, both are')
  const leaky = mutant({ file: 'recall/recall.ts', from: ' && (scopes === undefined || store.scopes.anyMatch(match, scopes))', to: '' })
  t.teardown(() => leaky.remove())
  const mutated = (await leaky.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).recallBlocks
  t.same(abstentionOf(mutated(store, 'is zephyr billing on 9999', { topK: 5, scopes: ['global', 'workspace:/a'] }))?.mentioned, ['zephyr', 'billing'],
    'mutation: without the union check the notice names another workspace\'s word')

  const words = Array.from({ length: MENTIONED_WORDS + 4 }, (_, i) => `word${String.fromCharCode(97 + i)}x`)
  store.commit({ text: `notes about ${words.join(' ')}` })
  const many = abstentionOf(recallBlocks(store, `${words.join(' ')} 9999`, { topK: 5 }))
  t.same(many?.mentioned, words.slice(0, MENTIONED_WORDS), 'the first MENTIONED_WORDS, in query order')
  const uncapped = mutant({ file: 'recall/recall.ts', from: '    if (out.length >= MENTIONED_WORDS) break\n', to: '' })
  t.teardown(() => uncapped.remove())
  const all = (await uncapped.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).recallBlocks
  t.equal(abstentionOf(all(store, `${words.join(' ')} 9999`, { topK: 5 }))?.mentioned.length, words.length, 'mutation: without the cap every held word is looked up')
})
