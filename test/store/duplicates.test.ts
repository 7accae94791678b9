/**
 * Near-duplicates at commit: the key treats punctuation, spacing, full-width forms and case as
 * noise and every letter, digit and in-token sign as content (a changed number is never a
 * duplicate; mutation-checked), and the three policies do what they say.
 */
import { DatabaseSync } from 'node:sqlite'
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { nearKey } from '../../lib/text/near-key.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Pairs that say the same thing. */
const SAME: Array<[string, string]> = [
  ['billing 服务端口 8499，部署在 10.3.7.9。', 'Billing服务端口8499, 部署在 10.3.7.9'],
  ['ｂｉｌｌｉｎｇ　服务端口　８４９９', 'billing 服务端口 8499'],
  ['The VPN password is hunter2.', 'the vpn password is hunter2'],
  ['I don’t like cats!', "i don't like cats"],
  ['周末 去 爬山。', '周末去爬山'],
  ['Deploy: /etc/nginx/nginx.conf', 'deploy /etc/nginx/nginx.conf.'],
]

/** Pairs that differ in a fact, however little. */
const DIFFERENT: Array<[string, string]> = [
  ['billing 服务端口 8499', 'billing 服务端口 8500'],
  ['price 8.5 yuan', 'price 85 yuan'],
  ['temperature -5 C', 'temperature 5 C'],
  ['gateway 10.3.7.9', 'gateway 10.3.7.19'],
  ['release v1.2.3', 'release v1.2.4'],
  ['config at /etc/nginx/nginx.conf', 'config at /etc/nginx.nginx/conf'],
  ['100% done', '100 done'],
  ['I like cats', 'I don\'t like cats'],
  ['Caroline likes hiking', 'Melanie likes hiking'],
  ['王小明住在三栋', '王小明住在七栋'],
  ['api.example.com', 'api-example.com'],
]

t.test('the key: the same fact in other punctuation, spacing, width or case; never another number or word', async (t) => {
  for (const [a, b] of SAME) t.equal(nearKey(a), nearKey(b), `same: ${a} | ${b}`)
  for (const [a, b] of DIFFERENT) t.not(nearKey(a), nearKey(b), `different: ${a} | ${b}`)
  t.equal(nearKey('!!! …'), '', 'no letter or digit: no key, never a duplicate')
})

t.test('mutation check: a key without digits would merge a changed port', async (t) => {
  const m = mutant({ file: 'text/near-key.ts', from: String.raw`[\p{L}\p{N}\p{M}]$/u`, to: String.raw`[\p{L}\p{M}]$/u` })
  t.teardown(() => m.remove())
  const { nearKey: mutated } = await m.load<{ nearKey: (text: string) => string }>('text/near-key.ts')
  t.equal(mutated('billing 服务端口 8499'), mutated('billing 服务端口 8500'), 'the mutant merges them')
})

function open(t: Test, duplicates?: 'keep' | 'link' | 'skip'): BlockStore {
  const store = new BlockStore(tempStorePath('dup'), duplicates === undefined ? {} : { duplicates })
  t.teardown(() => store.close())
  return store
}

t.test('link (default): stored, reported, and linked by a duplicates edge', async (t) => {
  const store = open(t)
  const first = store.commit({ text: 'redis 端口 6380。' })
  const second = store.commit({ text: 'Redis端口 6380' })
  t.same({ created: second.created, duplicateOf: second.duplicateOf }, { created: true, duplicateOf: first.id })
  t.same(store.edgesOf('block', second.id).map((e) => [e.sourceId, e.type, e.targetId]), [[second.id, 'duplicates', first.id]])
  t.equal(store.commit({ text: 'Redis端口 6380' }).duplicateOf, undefined, 'an exact re-commit is "already stored", not a duplicate')
  t.equal(store.commit({ text: 'redis 端口 6381' }).duplicateOf, undefined, 'a changed number is another note')
  t.equal(first.duplicateOf, undefined)
})

t.test('keep stores without an edge; skip stores nothing and answers with the existing id', async (t) => {
  const keep = open(t, 'keep')
  const a = keep.commit({ text: 'Coffee with Mel on Friday.' })
  const b = keep.commit({ text: 'coffee with mel on friday' })
  t.equal(b.duplicateOf, a.id)
  t.ok(keep.get(b.id))
  t.same(keep.edgesOf('block', b.id), [])

  const skip = open(t, 'skip')
  const c = skip.commit({ text: 'Coffee with Mel on Friday.' })
  const d = skip.commit({ text: 'coffee with mel on friday' })
  t.same(d, { id: c.id, created: false, duplicateOf: c.id })
  t.equal(skip.count(), 1)
  const batch = skip.commitMany([{ text: 'tea at 5' }, { text: 'Tea at 5!' }])
  t.same(batch.map((r) => r.duplicateOf), [undefined, batch[0]!.id], 'a duplicate within one batch is caught too')
  t.equal(skip.count(), 2)
})

t.test('a retired note is not a duplicate target, and replacing a note is not duplicating it', async (t) => {
  const store = open(t, 'skip')
  const old = store.commit({ text: 'gateway port 8001' })
  const replaced = store.commit({ text: 'Gateway port 8001.', supersedes: old.id })
  t.equal(replaced.created, true, 'supersedes its own near-duplicate: stored')
  t.equal(replaced.duplicateOf, undefined)
  const again = store.commit({ text: 'GATEWAY PORT 8001' })
  t.equal(again.duplicateOf, replaced.id, 'only the current note is matched')
})

t.test('notes written without a key (by an older release, another writer) are keyed before the next lookup', async (t) => {
  const path = tempStorePath('dup-unkeyed')
  const text = 'Imported note: backup runs at 02:00.'
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  store.commit({ text })
  const raw = new DatabaseSync(path)
  raw.exec('UPDATE blocks SET near_key = NULL') // what a file from before the key looks like
  raw.close()
  t.equal(store.commit({ text: 'imported note backup runs at 02:00' }).duplicateOf, blockId(text))
})

t.test('an unknown policy is refused when the store opens', async (t) => {
  t.throws(() => new BlockStore(tempStorePath('dup-bad'), { duplicates: 'merge' as never }), { code: 'invalid_input', message: /duplicates must be one of keep, link, skip/ })
})
