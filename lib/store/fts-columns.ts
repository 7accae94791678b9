/**
 * The two columns of the full-text index (`blocks_fts`) for a note's text: `latin` (the text
 * with its CJK runs blanked) and `cjk` (their bigrams). The index is contentless, so deleting a
 * row must name exactly the text it was indexed with; commit, the migration that rebuilds the
 * index and `forget` all derive it from the stored text here. Changing either column's derivation
 * needs a migration that rebuilds the index.
 *
 * The result is exactly `[withoutCjk(text), cjkIndexText(text)]` (lib/text/cjk.ts; the test
 * test/store/fts-columns.test.ts holds them equal), derived in
 * one pass over the text's UTF-16 units instead of a regex replace, a run match and an array of
 * bigrams per run: every indexed or forgotten note goes through here. A text without CJK is
 * returned as it is.
 */
export function indexColumns(text: string): [latin: string, cjk: string] {
  const n = text.length
  let i = 0
  while (i < n && !isCjkUnit(text.charCodeAt(i))) i++
  if (i === n) return [text, '']
  if (bigramBuffer.length < n * 3) bigramBuffer = new Uint16Array(n * 3)
  const out = bigramBuffer
  let len = 0
  let latin = ''
  let plain = 0 // where the current stretch of non-CJK text began
  while (i < n) {
    const start = i
    if (len > 0) out[len++] = SPACE
    out[len++] = text.charCodeAt(i)
    // Each further unit of the run closes a bigram with the one before it: "abc" gives "ab bc".
    while (++i < n && isCjkUnit(text.charCodeAt(i))) {
      if (i > start + 1) {
        out[len++] = SPACE
        out[len++] = text.charCodeAt(i - 1)
      }
      out[len++] = text.charCodeAt(i)
    }
    latin += `${text.slice(plain, start)} `
    plain = i
    while (i < n && !isCjkUnit(text.charCodeAt(i))) i++
  }
  return [latin + text.slice(plain), UTF16.decode(out.subarray(0, len))]
}

/**
 * True for a UTF-16 unit in `CJK_CHAR` (lib/text/cjk.ts): ideographs, kana and hangul syllables.
 * Every range lies in the Basic Multilingual Plane below the surrogates, so a unit is a character.
 */
function isCjkUnit(c: number): boolean {
  return c >= 0x3040 && ((c >= 0x4e00 && c <= 0x9fff) || (c <= 0x30ff) || (c >= 0x3400 && c <= 0x4dbf)
    || (c >= 0xac00 && c <= 0xd7af) || (c >= 0xf900 && c <= 0xfaff))
}

const SPACE = 0x20
/** Decodes the bigram buffer's units in the platform's byte order. */
const UTF16 = new TextDecoder(new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 'utf-16le' : 'utf-16be')
/** Reused across calls (a note's bigrams take at most three units per unit of text). */
let bigramBuffer = new Uint16Array(1024)
