import t from 'tap'
import { abstentionOf, decisiveSymbols, MAX_NEAR_LENGTH, MAX_NEAR_VARIANTS, typoVariants } from '../../lib/recall/abstain.ts'
import { arbitrate, replacesValue } from '../../lib/recall/arbitration.ts'
import { charOverlap, MAX_QUERY_CJK_CHARS, queryChars } from '../../lib/recall/char-overlap.ts'
import { coverage } from '../../lib/recall/coverage.ts'
import { matchAny } from '../../lib/recall/fts-query.ts'
import { recallBlocks, SEARCH_POSTINGS, searchTerms, specificTerms } from '../../lib/recall/recall.ts'
import { applySceneContext } from '../../lib/recall/scene-context.ts'
import { analyzeQuery, LAST_TURN_WEIGHT, MAX_TERM_WEIGHT, queryTurns, symbolVariants } from '../../lib/recall/symbols.ts'
import { mutant } from '../helpers/mutant.ts'
import { BlockStore } from '../../lib/store/store.ts'

/**
 * One test per ranking mechanism kept in `lib/recall/`, each with a mutation check: the same
 * assertion against the mechanism switched off (or its input altered) must fail, so the test
 * really depends on the mechanism.
 */

function storeWith(notes: ReadonlyArray<string | { text: string, scene: string }>): BlockStore {
  let clock = 1_700_000_000_000
  const store = new BlockStore(':memory:', { now: () => (clock += 1000) })
  for (const note of notes) store.commit(typeof note === 'string' ? { text: note } : note)
  return store
}

t.test('transcript: speaker labels are dropped, a single key: value line keeps its key', async (t) => {
  const chat = 'Alice: 帮我记一下\nBob: 好的\nAlice: 周报什么时候交'
  t.same(queryTurns(chat).map((x) => x.text), [' 帮我记一下', ' 好的', ' 周报什么时候交'])
  t.notOk(analyzeQuery(chat).words.includes('alice'), 'the speaker is not a query word')
  // Mutation: the same chat on one line is no transcript, so the label stays a word.
  t.ok(analyzeQuery(chat.replace(/\n/g, ' / ')).words.includes('alice'))
  t.same(queryTurns('port: 8080'), [{ text: 'port: 8080', weight: 1 }])
  t.equal(analyzeQuery(chat).transcript, true)
  t.equal(analyzeQuery('port: 8080').transcript, false)
})

t.test('transcript: repeated terms and the last turn weigh more (listed repeatedly in MATCH)', async (t) => {
  const a = analyzeQuery('A: 我喜欢游泳\nB: 嗯\nA: 明天想去爬山')
  t.equal(a.weights.get('爬山'), LAST_TURN_WEIGHT + 1, 'last turn ×2, plus one as a whole two-character word')
  t.equal(a.weights.get('游泳'), 2)
  t.equal(matchAny(a).split('"爬山"').length - 1, 3, 'listed three times')
  t.equal(analyzeQuery('我喜欢游泳，明天想去爬山，爬山').weights.get('爬山'), 1, 'a one-line question weighs every term 1')

  const store = storeWith(['周末去游泳馆游泳', '周末去香山爬山'])
  t.teardown(() => store.close())
  t.equal(recallBlocks(store, 'A: 我喜欢游泳\nB: 嗯\nA: 明天想去爬山', { topK: 2 })[0]?.text, '周末去香山爬山')
  // Mutation: swap which turn is last and the other note wins, so the order is the weighting's doing.
  t.equal(recallBlocks(store, 'A: 明天想去爬山\nB: 嗯\nA: 我喜欢游泳', { topK: 2 })[0]?.text, '周末去游泳馆游泳')
})

t.test('character backoff: a note sharing a rare character of the query beats one that does not', async (t) => {
  const store = storeWith(['生日派对上收到一束花', '生日派对上吃了蛋糕', '明天去医院复查', '周会改到每周三下午'])
  t.teardown(() => store.close())
  // "小花" is no bigram of either note; only the character 花 ties the first note to the question.
  const query = '生日派对上的小花很好看'
  t.equal(recallBlocks(store, query, { topK: 2 })[0]?.text, '生日派对上收到一束花')
  // Mutation: without character overlap, bm25 prefers the shorter note.
  t.equal(recallBlocks(store, query, { topK: 2, charOverlap: false })[0]?.text, '生日派对上吃了蛋糕')
  t.same(queryChars('A: 花花\nB: 草\nA: 花', true), new Map([['花', 3], ['草', 1]]), 'transcript: turn-weighted, capped')
  t.same(queryChars('花花草', false), new Map([['花', 1], ['草', 1]]), 'one-line query: every character 1')
  t.equal(charOverlap(new Map(), ['花']), undefined, 'no CJK in the query: no blend')
  const many = Array.from({ length: MAX_QUERY_CJK_CHARS + 50 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('')
  const bounded = queryChars(`A: ${many}\nB: 好\nA: 丁`, true)
  t.equal(bounded.size, MAX_QUERY_CJK_CHARS, 'a huge paste keeps a bounded number of characters')
  t.equal(bounded.get('丁'), MAX_TERM_WEIGHT, 'the heaviest (here: repeated, in the last turn) are kept')
  t.same(charOverlap(new Map([['花', 1]]), ['一束花', '蛋糕']), [1, 0])
})

t.test('character backoff: the one-pass holdings equal a substring search of every text, call after call', async (t) => {
  // The definition the one-pass lookup must match: a text holds a character when it contains it.
  const reference = (chars: ReadonlyMap<string, number>, texts: readonly string[]) => {
    const scores = texts.map(() => 0)
    for (const [ch, weight] of chars) {
      const holders = texts.flatMap((text, i) => text.includes(ch) ? [i] : [])
      if (holders.length === 0) continue
      const idf = Math.log(1 + (texts.length - holders.length + 0.5) / (holders.length + 0.5))
      for (const i of holders) scores[i]! += weight * idf
    }
    const best = Math.max(...scores)
    return best > 0 ? scores.map((s) => s / best) : undefined
  }
  const texts = ['生日派对上收到一束花', '蛋糕和花', 'no cjk here', '𠀀 an astral one', '花园里的小花', '']
  const queries = [new Map([['花', 2], ['园', 1]]), new Map([['蛋', 1], ['𠀀', 1]]), new Map([['糕', 1]]), new Map([['花', 1]])]
  // In this order each call after the first asks for characters the one before it did not, so a lookup slot left set by one call would mark texts in the next.
  for (const chars of queries) t.same(charOverlap(chars, texts), reference(chars, texts), [...chars.keys()].join(''))
})

t.test('coverage: a note answering every asked word beats one repeating a single word', async (t) => {
  const notes = [
    'Caroline said she finally joined the support group last week after thinking about it for a long time with her friends',
    'support group support group: support group flyers',
    'Caroline painted a lake', 'Caroline plays guitar', 'Gina opened a store', 'Tim reads fantasy books',
  ]
  const store = storeWith(notes)
  t.teardown(() => store.close())
  const query = 'When did Caroline join the support group?'
  t.equal(recallBlocks(store, query, { topK: 2 })[0]?.text, notes[0])
  // Mutation: without coverage, bm25 prefers the repetitive flyer note.
  t.equal(recallBlocks(store, query, { topK: 2, coverage: false })[0]?.text, notes[1])
  t.equal(coverage([{ word: 'painted', weight: 2 }, { word: 'lake', weight: 1 }], 'she paints by the lake'), 1, 'stems match')
  t.equal(coverage([{ word: 'lake', weight: 1 }], 'a lakeside'), 1, 'prefix of a word counts')
  t.equal(coverage([{ word: 'lake', weight: 1 }], 'flake'), 0, 'inside a word does not')
  t.equal(coverage([], 'anything'), undefined)
})

t.test('scene context: a note whose scene-mates match the subject beats a look-alike elsewhere', async (t) => {
  const filler = ['周会改到周三', '妈妈喜欢普洱茶', '钢琴课在周六', '医院复查带化验单', '报销找财务签字', '机房空调找物业', '新人开通三个账号', 'OKR 月底评审']
  const notes = [
    ...filler.map((text) => ({ text, scene: `misc:${text}` })),
    { text: '河茂铁路是广东西部的一条铁路线', scene: 'doc:hemao' },
    { text: '本线起讫点为河唇站至茂名西站', scene: 'doc:hemao' },
    { text: '黎湛铁路起讫点为黎塘至湛江，是一条铁路干线', scene: 'doc:lizhan' },
    { text: '黎湛铁路于1955年通车', scene: 'doc:lizhan' },
  ]
  const store = storeWith(notes)
  t.teardown(() => store.close())
  const query = '河茂铁路的起讫点在哪'
  // Neighbours off: the two 河茂 notes were saved side by side, so the neighbour lift alone would also put 本线 first.
  const top = (sceneContext: boolean) => recallBlocks(store, query, { topK: 4, sceneContext, neighbours: false }).map((h) => h.text)
  t.ok(top(true).indexOf('本线起讫点为河唇站至茂名西站') < top(true).indexOf('黎湛铁路起讫点为黎塘至湛江，是一条铁路干线'), 'the 河茂 scene note first')
  // Mutation: without scene context the other railway's note (more shared bigrams) wins.
  t.ok(top(false).indexOf('本线起讫点为河唇站至茂名西站') > top(false).indexOf('黎湛铁路起讫点为黎塘至湛江，是一条铁路干线'))

  const cands = [
    { id: 'a', scene: 's', lexical: 0.4, exact: false, score: 0.4 },
    { id: 'b', scene: 's', lexical: 0.8, exact: false, score: 0.8 },
    { id: 'c', scene: '', lexical: 0.5, exact: false, score: 0.5 },
    { id: 'd', scene: 's', lexical: 0.1, exact: true, score: 1.01 },
  ]
  applySceneContext(cands)
  const blend = (own: number, first: number, second: number) => (own + 1 * (first + second) / 2) / (1 + 1)
  t.same(cands.map((c) => c.score), [blend(0.4, 0.8, 0.4), blend(0.8, 0.8, 0.4), blend(0.5, 0.5, 0), 1.01], 'mean of the two best, scene-less is its own scene, pins untouched')
})

t.test('pin: a note with the exact symbol outranks a note with a stronger lexical match', async (t) => {
  const store = storeWith(['网关端口 网关端口 网关配置 网关端口说明', '8443'])
  t.teardown(() => store.close())
  const hits = recallBlocks(store, '网关端口 8443', { topK: 2 })
  t.equal(hits[0]?.text, '8443')
  t.equal(hits[0]?.exact, true)
  t.ok(hits[0]!.score >= 1 && hits[1]!.score < 1)
  const lexical = (why: string) => Number(/lexical ([\d.]+)/.exec(why)![1])
  // Mutation argument: by lexical score alone the order would be reversed.
  t.ok(lexical(hits[0]!.why) < lexical(hits[1]!.why), 'the pin, not the lexical score, put it first')
})

t.test('pin: a dotted version pins with or without its v, in either direction', async (t) => {
  const notes = ['网关升级到 2.3.1，网关网关', 'sdk 发布 v4.0.2', '网关 网关 网关升级 网关升级说明 升级到 v2.3.0']
  const store = storeWith(notes)
  t.teardown(() => store.close())
  for (const [query, note] of [['网关升级 v2.3.1', notes[0]], ['4.0.2 发布了什么', notes[1]]] as const) {
    const hits = recallBlocks(store, query, { topK: 3 })
    t.equal(hits[0]?.text, note, query)
    t.equal(hits[0]?.exact, true, `${query}: pinned`)
    t.match(hits[0]?.why, /exact /)
  }
  t.same(symbolVariants('v2.3.1'), ['v2.3.1', '2.3.1'])
  t.same(symbolVariants('2.3.1'), ['2.3.1', 'v2.3.1'])
  t.same(symbolVariants('v2'), ['v2'], 'an undotted v-number is not a version: `2` alone would pin too much')
  t.same(symbolVariants('8080'), ['8080'])
  // Mutation: with only the spelling the query used, neither note is pinned.
  const m = mutant({ file: 'recall/symbols.ts', from: 'if (/^v\\d+(\\.\\d+)+$/.test(symbol)) return [symbol, symbol.slice(1)]\n  if (/^\\d+(\\.\\d+)+$/.test(symbol)) return [symbol, `v${symbol}`]\n', to: '' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  for (const query of ['网关升级 v2.3.1', '4.0.2 发布了什么']) t.notOk(mutated.recallBlocks(store, query, { topK: 3 }).some((h) => h.exact), `${query}: no pin without the variants`)
})

t.test('arbitration: a later note voids an earlier one only when it names the old value as changed', async (t) => {
  const old = { text: '值班室分机号 4324', createdAt: 1 }
  const changed = { text: '值班室分机号从 4324 改为 4379', createdAt: 2 }
  const mention = { text: '值班室 4324 晚上没人接', createdAt: 3 }
  const otherKey = { text: '会议室分机从 4324 改为 5000', createdAt: 4 }
  t.ok(replacesValue(old, changed))
  t.notOk(replacesValue(old, mention), 'a mention without a change word is not a replacement')
  t.notOk(replacesValue(old, otherKey), 'the same number for another key is not a replacement')
  t.notOk(replacesValue(old, { ...changed, createdAt: 0 }), 'an older note never replaces a newer one')
  t.notOk(replacesValue({ text: '端口 8080', createdAt: 1 }, { text: '端口改为 9090', createdAt: 2 }), 'not naming the old value: no replacement')
  t.same(arbitrate([changed, old, mention]), [changed, mention], 'order kept, replaced note dropped')

  const store = storeWith([old.text, changed.text])
  t.teardown(() => store.close())
  t.same(recallBlocks(store, '值班室分机号', { topK: 5 }).map((h) => h.text), [changed.text])
  // Mutation: with arbitration off the stale number comes back.
  t.same(recallBlocks(store, '值班室分机号', { topK: 5, arbitration: false }).map((h) => h.text).sort(), [old.text, changed.text].sort())
})

t.test('abstention: an absent exact string gives "no record", never unrelated hits', async (t) => {
  const store = storeWith(['本机 13010 端口给内部网关用', 'billing 服务端口 8499'])
  t.teardown(() => store.close())
  const hits = recallBlocks(store, '本机 19999 端口是干什么的', { topK: 5 })
  t.same(hits, [])
  t.same(abstentionOf(hits), { missing: ['19999'], mentioned: ['本机', '端口'], near: [] })
  t.same(Object.keys(hits), [], 'the reason is not enumerable')
  // Mutation: with abstention off the same query returns the unrelated port notes.
  t.ok(recallBlocks(store, '本机 19999 端口是干什么的', { topK: 5, abstain: false }).length > 0)
  // Never abstains when one asked string is present, on vague or pure-Chinese queries, or on empty stores' words.
  t.equal(abstentionOf(recallBlocks(store, '13010 和 19999 哪个是网关', { topK: 5 })), undefined)
  t.equal(abstentionOf(recallBlocks(store, '那个 19999 端口呢', { topK: 5 })), undefined, 'vague pointer')
  t.equal(abstentionOf(recallBlocks(store, '监控面板的端口', { topK: 5 })), undefined, 'pure Chinese')
  const versions = storeWith(['网关升级到 v2.3.1', 'agent 版本 1.4.0'])
  t.teardown(() => versions.close())
  t.equal(abstentionOf(recallBlocks(versions, '2.3.1 升级了什么', { topK: 5 })), undefined, 'a version is found without its v')
  t.equal(abstentionOf(recallBlocks(versions, 'v1.4.0 是哪个组件', { topK: 5 })), undefined, '… and with it')
  t.ok(abstentionOf(recallBlocks(versions, 'v1.5.0 是哪个组件', { topK: 5 })), 'another version still abstains')
})

t.test('abstention names a stored string one typo away, as a question for the user', async (t) => {
  const store = storeWith(['billing 服务端口 8499', '格利泽581b 的质量至少为地球的16倍', '网关在 10.3.7.9'])
  t.teardown(() => store.close())
  const near = (query: string) => abstentionOf(recallBlocks(store, query, { topK: 5 }))?.near
  t.same(near('8494 端口是谁的'), ['8499'], 'one digit changed')
  t.same(near('格利泽518b 有多重'), ['581b'], 'two neighbours swapped')
  t.same(near('10.3.7.8 是什么'), ['10.3.7.9'])
  t.same(near('8844 端口是谁的'), [], 'two typos away is not near')
  t.equal(recallBlocks(store, '8494 端口是谁的', { topK: 5 }).length, 0, 'still an abstention: the near note is not recalled as if it were the one asked about')
  t.same(typoVariants('518b').slice(0, 3), ['158b', '581b', '51b8'], 'swaps first')
  t.notOk(typoVariants('10.3.7.9').some((v) => /\.\.|^\.|\.$/.test(v)), 'punctuation never moves')
  t.notOk(typoVariants('8499').includes('8499'))
  t.equal(typoVariants('123456789012').length, MAX_NEAR_VARIANTS, 'a 12-digit string has 119 variants, capped')
  t.same(typoVariants('9'.repeat(MAX_NEAR_LENGTH + 1)), [], 'a pasted blob gets no variants (and costs nothing)')
  t.equal(abstentionOf(recallBlocks(store, `端口 ${'7'.repeat(8_000)}`, { topK: 5 }))?.near.length, 0, 'an 8,000-digit "port" abstains without a typo search')
  const guard = mutant({ file: 'recall/abstain.ts', from: 'if (chars.length > MAX_NEAR_LENGTH) return []', to: '' })
  t.teardown(() => guard.remove())
  t.ok((await guard.load<typeof import('../../lib/recall/abstain.ts')>('recall/abstain.ts')).typoVariants('9'.repeat(MAX_NEAR_LENGTH + 1)).length > 0, 'mutation: without the length guard a blob gets variants')
  const uncapped = mutant({ file: 'recall/abstain.ts', from: 'return [...out].slice(0, MAX_NEAR_VARIANTS)', to: 'return [...out]' })
  t.teardown(() => uncapped.remove())
  t.equal((await uncapped.load<typeof import('../../lib/recall/abstain.ts')>('recall/abstain.ts')).typoVariants('123456789012').length, 119, 'mutation: without the cap every variant is looked up')
  const many = '1111、2222、3333、4444 和 8494 端口是谁的'
  t.same(near(many), [], 'typo neighbours are looked up for the first four missing strings only')
  const wider = mutant({ file: 'recall/recall.ts', from: 'const NEAR_SYMBOLS = 4', to: 'const NEAR_SYMBOLS = 5' })
  t.teardown(() => wider.remove())
  const widerRecall = await wider.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const widerAbstain = await wider.load<typeof import('../../lib/recall/abstain.ts')>('recall/abstain.ts')
  t.same(widerAbstain.abstentionOf(widerRecall.recallBlocks(store, many, { topK: 5 }))?.near, ['8499'], 'mutation: a fifth string would be looked up')
  // Mutation: without the lookup the notice has nothing to offer.
  const m = mutant({ file: 'recall/recall.ts', from: 'return typos.filter((v) => inStore(store, v, scopes, present))', to: 'return [] as string[]' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')
  const abstain = await m.load<typeof import('../../lib/recall/abstain.ts')>('recall/abstain.ts')
  t.same(abstain.abstentionOf(mutated.recallBlocks(store, '8494 端口是谁的', { topK: 5 }))?.near, [])
})

t.test('abstention: only specific numeric strings decide; dates never do', async (t) => {
  t.same(decisiveSymbols('端口 19999', ['19999']), ['19999'])
  t.same(decisiveSymbols('nginx 80 端口', ['80']), ['80'], 'a two-digit port decides')
  t.same(decisiveSymbols('v2.3.9 发布了吗', ['v2.3.9']), ['v2.3.9'])
  t.same(decisiveSymbols('what happened in 2023', ['2023']), [], 'a year')
  t.same(decisiveSymbols('on October 13, 2023', ['13', '2023']), [], 'a day beside a month')
  t.same(decisiveSymbols('5月13日的会', ['13']), [], 'a day beside 月')
  t.same(decisiveSymbols('finished on 8th December', ['8th']), [], 'an ordinal')
  t.same(decisiveSymbols('artists/bands', ['artists/bands']), [], 'no digit')
  t.same(decisiveSymbols('之前那个 8080', ['8080']), [], 'vague pointer')
  t.same(decisiveSymbols('7 号', ['7']), [], 'one character')
})

t.test('long queries keep their rarest terms; absent terms are dropped', async (t) => {
  const common = '我们今天一起去公园散步聊天'
  const filler = Array.from({ length: 30 }, (_, i) => `${common}第${i}页 really good common words`)
  const store = storeWith([...filler, '元旦晚会表演魔术', 'grafana dashboard panel'])
  t.teardown(() => store.close())
  const prose = '春眠不觉晓处处闻啼鸟夜来风雨声花落知多少床前明月光疑是地上霜举头望明月低头思故乡白日依山尽黄河入海流欲穷千里目更上一层楼'
  const latin = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember fjord grove heath inlet jasper'
  const chat = `A: ${common}，${prose}\nB: ${latin} really good common words\nA: 元旦晚会要表演魔术\nB: grafana dashboard really good`
  const full = analyzeQuery(chat)
  t.ok(full.cjkBigrams.length > 64 && full.words.length > 32, 'a long query')
  const kept = specificTerms(store, full)
  t.ok(kept.cjkBigrams.length <= 64 && kept.words.length <= 32, 'bounded')
  t.ok(kept.cjkBigrams.includes('魔术') && kept.cjkBigrams.includes('元旦'), 'rare bigrams kept')
  t.notOk(kept.cjkBigrams.includes('明月'), 'a bigram no note holds is dropped')
  t.ok(kept.words.includes('grafana'), 'rare word kept')
  t.notOk(kept.words.includes('zulu'), 'a word no note holds is dropped')
  t.same(recallBlocks(store, chat, { topK: 2 }).map((h) => h.text).sort(), ['grafana dashboard panel', '元旦晚会表演魔术'].sort(), 'the two rare notes lead')
  const short = analyzeQuery('元旦晚会')
  t.equal(specificTerms(store, short), short, 'short queries pass through untouched')
})

t.test('the FTS search skips common terms when rarer ones fit its postings bound; coverage still sees them', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany(Array.from({ length: SEARCH_POSTINGS + 50 }, (_, i) => ({ text: `server 服务 note ${i}` })))
  store.commit({ text: 'kaulaith server 服务 runs the backups' })
  store.commit({ text: 'kaulaith was renamed last week' })
  const query = analyzeQuery('kaulaith server 服务 zorblax 明月')
  const searched = searchTerms(store, query)
  t.same([searched.words, searched.cjkBigrams], [['kaulaith'], []], 'only the rare term is searched; absent terms are dropped')
  t.same(searched.exact, query.exact)
  t.same(searchTerms(store, analyzeQuery('server 服务')).words, ['server'], 'the rarest term stays even above the bound')
  t.same(recallBlocks(store, 'kaulaith server 服务', { topK: 1 }).map((h) => h.text), ['kaulaith server 服务 runs the backups'],
    'the note holding the common words too still ranks first')
  // Mutation: without the bound the common terms are searched as well.
  t.same(searchTerms(store, query, Infinity).words, ['kaulaith', 'server'])
  // The cached bigram frequencies follow this connection's commits.
  t.equal(store.cjkDocumentFrequencies(['明月']).get('明月'), 0)
  store.commit({ text: '明月几时有' })
  t.equal(store.cjkDocumentFrequencies(['明月']).get('明月'), 1)
})
