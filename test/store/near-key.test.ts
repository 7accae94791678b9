/**
 * The near-duplicate key is read by a scanner over a table of character classes (issue 30: the
 * commit path's cost per note); stored keys were written by the regular expression it replaces,
 * and a key that changed would stop finding every earlier duplicate. So the tokens and the key
 * must equal that expression's (kept here as the reference) for every UTF-16 unit alone and
 * between other text, for generated notes mixing every class of character, and for the
 * benchmark corpus. Mutation-checked: a scanner that reads one class wrong is found.
 */
import { hash } from 'node:crypto'
import t from 'tap'
import { corpus } from '../../bench/corpus.ts'
import { CJK_CHAR } from '../../lib/text/cjk.ts'
import { nearKey, nearTokens } from '../../lib/text/near-key.ts'
import { mutant } from '../helpers/mutant.ts'

const WORD = String.raw`(?:(?!${CJK_CHAR.source})[\p{L}\p{N}\p{M}])`
const TOKEN = new RegExp(String.raw`${CJK_CHAR.source}|[-+−$€£¥#@~/\\.]*${WORD}+(?:[^\s\p{L}\p{N}\p{M}]+${WORD}+)*[%‰°℃′″+#]*`, 'gu')
const QUOTES: Record<string, string> = { '\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"' }

/** The tokens as the key was first defined: one match of the expression over the folded text. */
function referenceTokens(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().replace(/[\u2018\u2019\u201c\u201d]/g, (q) => QUOTES[q]!).match(TOKEN) ?? []
}

function referenceKey(text: string): string {
  const tokens = referenceTokens(text)
  return tokens.length === 0 ? '' : `nk_${hash('sha256', tokens.join(' '), 'hex').slice(0, 24)}`
}

type Near = { nearKey: (text: string) => string, nearTokens: (text: string) => string[] }

/** Inputs whose tokens or key differ from the reference, at most `limit` of them. */
function differing(near: Near, texts: Iterable<string>, limit = 5): string[] {
  const out: string[] = []
  for (const text of texts) {
    if (near.nearKey(text) !== referenceKey(text) || JSON.stringify(near.nearTokens(text)) !== JSON.stringify(referenceTokens(text))) out.push(JSON.stringify(text))
    if (out.length >= limit) break
  }
  return out
}

function* everyUnit(): Generator<string> {
  for (let c = 0; c < 0x10000; c++) {
    const ch = String.fromCharCode(c)
    yield ch
    yield `a${ch}5${ch}${ch}b ${ch}-x.${ch}`
  }
}

/** Notes built from pieces of every class: words, CJK, prefix and unit signs, other signs, spaces, quotes, astral characters, marks, surrogates. */
function* mixed(): Generator<string> {
  let seed = 20261207
  const next = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 2 ** 32 }
  const pieces = ['billing', '8499', '8.5', 'v1.2', '服务', '端口', 'かな', '한국어', 'ＡＢＣ', '８４９９', 'É', 'e\u0301', '\u0301', ' ', '\u3000', '\u00a0',
    '\ufeff', '\t', '\n', '，', '。', ',', '.', '-', '+', '−', '$', '€', '#', '@', '~', '/', '\\', '%', '‰', '°', '℃', '′', '″', '!', '…', '"', "'",
    '\u2018', '\u2019', '\u201c', '\u201d', '😀', '👩\u200d💻', '𠀀', '𝐀', '\ud800', '\udc00', '\u200b', '\u00ad', 'ß', 'İ', 'ﬁ', '①', '²', '']
  for (let i = 0; i < 30_000; i++) {
    let text = ''
    const length = Math.floor(next() * 14)
    for (let k = 0; k < length; k++) text += pieces[Math.floor(next() * pieces.length)]
    yield text
  }
  yield '中'.repeat(5000)
  yield 'x.'.repeat(5000)
}

function* bench(): Generator<string> {
  const gen = corpus(20261130)
  for (let i = 0; i < 5_000; i++) yield gen.block(i).text
}

t.test('the scanner reads the tokens and the key the expression reads, for every unit and for mixed text', async (t) => {
  const near = { nearKey, nearTokens }
  t.same(differing(near, everyUnit()), [])
  t.same(differing(near, mixed()), [])
  t.same(differing(near, bench()), [])
  t.same(nearTokens('Billing 服务端口 8499, v1.2 at /etc/x.conf -5 100% C++ a.'), ['billing', '服', '务', '端', '口', '8499', 'v1.2', 'at', '/etc/x.conf', '-5', '100%', 'c++', 'a'])
  t.equal(nearKey('!!! …'), '')
})

t.test('mutation check: a scanner that lets unit signs take any sign is found', async (t) => {
  const m = mutant({ file: 'text/near-key.ts', from: 'classOf(point = text.codePointAt(end)!) & SUFFIX)', to: 'classOf(point = text.codePointAt(end)!) & SIGN)' })
  t.teardown(() => m.remove())
  t.ok(differing(await m.load<Near>('text/near-key.ts'), mixed()).length > 0)
})

t.test('mutation check: a scanner that joins words across signs followed by CJK is found', async (t) => {
  const m = mutant({ file: 'text/near-key.ts', from: 'if (next >= n || !(bits & WORD)) break', to: 'if (next >= n || !(bits & (WORD | CJK))) break' })
  t.teardown(() => m.remove())
  t.ok(differing(await m.load<Near>('text/near-key.ts'), mixed()).length > 0)
})

t.test('mutation check: a key over UTF-16 instead of UTF-8 is found', async (t) => {
  const m = mutant({ file: 'text/near-key.ts', from: 'if (unit < 0x80) {', to: 'if (unit < 0x10000) {' })
  t.teardown(() => m.remove())
  t.ok(differing(await m.load<Near>('text/near-key.ts'), bench()).length > 0)
})
