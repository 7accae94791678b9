/**
 * `indexColumns` derives the full-text columns in one pass; a contentless index can only delete a
 * row given exactly the text it was indexed with, so it must equal the reference derivation of
 * lib/text/cjk.ts for every input: every UTF-16 unit alone and between other text, runs of each
 * length, surrogate pairs and lone surrogates, and mixed notes.
 */
import t from 'tap'
import { indexColumns } from '../../lib/store/fts-columns.ts'
import { cjkIndexText, withoutCjk } from '../../lib/text/cjk.ts'
import { mutant } from '../helpers/mutant.ts'

const reference = (text: string): [string, string] => [withoutCjk(text), cjkIndexText(text)]

/** Inputs that differ from the reference, at most `limit` of them. */
function differing(columns: (text: string) => [string, string], texts: Iterable<string>, limit = 5): string[] {
  const out: string[] = []
  for (const text of texts) {
    const [a, b] = [columns(text), reference(text)]
    if (a[0] !== b[0] || a[1] !== b[1]) out.push(JSON.stringify(text))
    if (out.length >= limit) break
  }
  return out
}

function* everyUnit(): Generator<string> {
  for (let c = 0; c < 0x10000; c++) {
    const ch = String.fromCharCode(c)
    yield ch
    yield `a${ch}中${ch}${ch}b`
  }
}

function* mixed(): Generator<string> {
  let seed = 20261201
  const next = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 2 ** 32 }
  const pieces = ['服务', '端口', '8499', ' ', '，', 'billing', 'ＡＢＣ', 'かな', '한국어', '\u4dbf', '\u3400', '\u9fff', '\uf900', '\ufaff',
    '\u3040', '\u30ff', '\uac00', '\ud7af', '\ud7b0', '😀', '\ud800', '\udc00', '𠀀', '\u3000', 'é', '\n', '中', '']
  for (let i = 0; i < 20_000; i++) {
    let text = ''
    const length = Math.floor(next() * 12)
    for (let k = 0; k < length; k++) text += pieces[Math.floor(next() * pieces.length)]
    yield text
  }
  yield '中'.repeat(5000)
  yield 'x'.repeat(5000)
}

t.test('the one-pass columns equal the reference for every UTF-16 unit and for mixed text', async (t) => {
  t.same(differing(indexColumns, everyUnit()), [])
  t.same(differing(indexColumns, mixed()), [])
  t.same(indexColumns('billing 服务端口 8499'), ['billing   8499', '服务 务端 端口'])
  t.same(indexColumns('中'), [' ', '中'])
  const latin = 'no CJK at all'
  t.equal(indexColumns(latin)[0], latin)
})

t.test('mutation check: a range left out of the unit test is found', async (t) => {
  const m = mutant({ file: 'store/fts-columns.ts', from: '|| (c >= 0xac00 && c <= 0xd7af) ', to: '' })
  t.teardown(() => m.remove())
  const { indexColumns: mutated } = await m.load<{ indexColumns: typeof indexColumns }>('store/fts-columns.ts')
  t.ok(differing(mutated, everyUnit()).length > 0)
})

t.test('mutation check: bigrams that do not overlap are found', async (t) => {
  const m = mutant({ file: 'store/fts-columns.ts', from: 'if (i > start + 1) {', to: 'if (i > start + 1 && (i - start) % 2 === 1) {' })
  t.teardown(() => m.remove())
  const { indexColumns: mutated } = await m.load<{ indexColumns: typeof indexColumns }>('store/fts-columns.ts')
  t.ok(differing(mutated, mixed()).length > 0)
})
