/**
 * The note side of relevance reads a note's terms with a one-pass scanner (`note-terms.ts`) and
 * remembers them by block id; recall reads each count once per pass (`pass-source.ts`). Both
 * exist for speed only, so the tests hold them to the slower readings they replace: the scanner
 * finds exactly the terms `analyzeQuery` finds in the same text (on seeded random texts mixing
 * the characters every rule turns on), the stem is the regular expression's, a cached entry is
 * never used for another text (mutation check), and a pass answers what the store answers.
 */
import t from 'tap'
import { cachedNoteTerms, NOTE_TERMS_CACHE, noteTerms } from '../../lib/recall/note-terms.ts'
import { recallPass } from '../../lib/recall/pass-source.ts'
import { CJK_FUNCTION_WORDS, CJK_PARTICLES } from '../../lib/recall/stopwords.ts'
import { analyzeQuery, symbolVariants, wordStem } from '../../lib/recall/symbols.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

/** Seeded generator (mulberry32), so a failing text can be reproduced. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/** Pieces a random text is made of: words, stop words, inflections, symbols, glue, CJK with particles and function words, odd Unicode. */
const PIECES = [
  'port', 'Ports', 'painted', 'painting', 'uses', 'the', 'and', 'THE', 'Caroline', "don't", 'it’s', 'x', 'ab', 'abc',
  '8080', 'v2.3.1', '2.3.1', '10.3.7.9', '/etc/nginx/conf.d/app.conf', '~/notes', 'a_b', 'snake_case_name', 'f91b27a', 'e-mail', 'x.y',
  '.', ',', ':', '/', '~', '@', '+', '-', '_', '"', '(', ')', ' ', ' ', ' ', '\t', '!', '?', '。', '，',
  '服务', '端口', '的', '是', '什么', '多少', '格利泽', '舜天', '吗', '我们', 'カタカナ', '한국어', '好',
  'é', 'İstanbul', '\u212Aelvin', '😀', 'ß', 'Ǆ',
]

function randomText(r: () => number): string {
  let text = ''
  const n = 1 + Math.floor(r() * 30)
  for (let i = 0; i < n; i++) text += PIECES[Math.floor(r() * PIECES.length)]!
  return text
}

/** What the note side should read in one line of text, from the query analysis and the rules in relevance.ts. */
function expected(text: string) {
  const a = analyzeQuery(text)
  const artefact = (gram: string) => CJK_FUNCTION_WORDS.has(gram) || Array.from(gram).some((c) => CJK_PARTICLES.has(c))
  return { stems: a.words.map(wordStem), grams: a.cjkBigrams.filter((g) => !artefact(g)), exact: a.exact.map(symbolVariants) }
}

t.test('the one-pass scanner finds exactly what the query analysis finds', async (t) => {
  const r = rng(20261201)
  let checked = 0
  for (let i = 0; i < 5_000; i++) {
    const text = randomText(r)
    const want = expected(text)
    const got = noteTerms(text)
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.strictSame(got, want, `text ${JSON.stringify(text)}`)
      return
    }
    checked++
  }
  t.equal(checked, 5_000, 'every random text read the same')
  t.strictSame(noteTerms('billing 服务的端口是 8499，部署在 10.3.7.9 (painted walls)'), {
    stems: ['bill', 'paint', 'wall'], grams: ['服务', '端口', '部署'], exact: [['8499'], ['10.3.7.9', 'v10.3.7.9']],
  }, 'a hand-made note: bigrams touching a particle (的, 是, 在) are left out')
})

t.test('the stem is the one the inflection pattern gives', async (t) => {
  const r = rng(7)
  const letters = 'abdegimnorsx'
  for (let i = 0; i < 5_000; i++) {
    let word = ''
    const n = 3 + Math.floor(r() * 8)
    for (let k = 0; k < n; k++) word += letters[Math.floor(r() * letters.length)]
    const want = word.length > 4 ? word.replace(/(?:ing|ed|es|s)$/, '') : word
    if (wordStem(word) !== want) {
      t.equal(wordStem(word), want, word)
      return
    }
  }
  t.same(['painted', 'paints', 'painting', 'uses', 'buses', 'things', 'was'].map(wordStem), ['paint', 'paint', 'paint', 'uses', 'bus', 'thing', 'was'])
})

t.test('a remembered note is used only for its own text, and the least recently used goes first', async (t) => {
  const first = cachedNoteTerms('id-a', 'billing port 8499')
  t.equal(cachedNoteTerms('id-a', 'billing port 8499'), first, 'the same block: read once')
  t.strictSame(cachedNoteTerms('id-a', 'nginx 配置').stems, ['nginx'], 'the same id with other text: that text is read')
  const old = cachedNoteTerms('id-old', 'old note')
  const kept = cachedNoteTerms('id-keep', 'kept note')
  for (let i = 0; i < NOTE_TERMS_CACHE - 1; i++) {
    cachedNoteTerms(`id-fill-${i}`, `note ${i}`)
    cachedNoteTerms('id-keep', 'kept note')
  }
  t.equal(cachedNoteTerms('id-keep', 'kept note'), kept, 'a note used again stays')
  const again = cachedNoteTerms('id-old', 'old note')
  t.not(again, old, `${NOTE_TERMS_CACHE} notes later, a note not used since is read afresh`)
  t.strictSame(again, old, 'to the same terms')

  const unguarded = mutant({ file: 'recall/note-terms.ts', from: 'known !== undefined && known.text === text', to: 'known !== undefined' })
  t.teardown(() => unguarded.remove())
  const m = await unguarded.load<typeof import('../../lib/recall/note-terms.ts')>('recall/note-terms.ts')
  m.cachedNoteTerms('id-a', 'billing port 8499')
  t.strictSame(m.cachedNoteTerms('id-a', 'nginx 配置').stems, ['bill', 'port'], 'mutation check: without the text check, another text gets stale terms')
})

t.test('a recall pass answers what the store answers, reading each count once', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commitMany([{ text: 'billing 服务端口 8499' }, { text: 'billing 部署在 10.3.7.9' }, { text: 'nginx 服务' }])
  const reads = { count: 0, matchCount: 0, cjk: 0 }
  const counted = {
    ...Object.fromEntries((['ftsCandidates', 'ftsRowids', 'blocksByRowid', 'recordAccess'] as const).map((k) => [k, store[k].bind(store)])),
    scopes: store.scopes,
    count: () => { reads.count++; return store.count() },
    matchCount: (m: string) => { reads.matchCount++; return store.matchCount(m) },
    cjkDocumentFrequencies: (g: readonly string[]) => { reads.cjk += g.length; return store.cjkDocumentFrequencies(g) },
  } as unknown as Parameters<typeof recallPass>[0]
  const pass = recallPass(counted)
  const billing = 'latin : "billing"'
  t.equal(pass.count(), 3)
  t.equal(pass.count(), 3)
  t.equal(pass.matchCount(billing), store.matchCount(billing))
  t.equal(pass.matchCount(billing), 2)
  const df = pass.cjkDocumentFrequencies(['服务', '端口'])
  t.same([...df], [['服务', 2], ['端口', 1]])
  df.set('billing', 99) // a caller may add to the map it got (searchTerms does)
  t.same([...pass.cjkDocumentFrequencies(['端口', '服务', '部署', '没有'])], [['端口', 1], ['服务', 2], ['部署', 1], ['没有', 0]], 'each call gets its own map')
  t.same(reads, { count: 1, matchCount: 1, cjk: 4 }, 'each count read from the store once')
})
