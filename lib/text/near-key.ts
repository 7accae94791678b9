/**
 * The near-duplicate key of a note: what is left of its text after the differences that never
 * change a fact are normalised away (punctuation between words, spacing, full-width forms, case),
 * while everything that can change a fact is kept exactly: every letter and digit in order, and
 * the punctuation inside or attached to a token (`8.5` is not `85`, `-5` is not `5`, `10.3.7.9`,
 * `/etc/nginx.conf`, `v1.2`, `100%` stay whole). Two notes with the same key say the same thing;
 * a changed number, word, path or version always changes the key. Measured on the eval corpora by
 * `npm run bench:duplicates` (docs/decisions.md D7).
 */
import { hash } from 'node:crypto'
import { CJK_CHAR } from './cjk.ts'

/*
 * The tokens, as a regular expression (the scanner below reads exactly these; the test
 * test/store/near-key.test.ts holds it to this expression on generated text):
 *
 *   CJK | [-+−$€£¥#@~/\\.]* WORD+ (?:[^\s\p{L}\p{N}\p{M}]+ WORD+)* [%‰°℃′″+#]*     (flags gu)
 *
 * where WORD is a letter, digit or mark that is not CJK. One token is optional attached prefix
 * signs (`-5`, `/etc`, `$HOME`, `.env`, `#12`), a run of letters/digits with any punctuation
 * *between* them kept (`8.5`, `a-b`, `10.3.7.9`), optional attached unit signs (`100%`, `5°`,
 * `C++`). Each CJK character is a token of its own, so spaces and punctuation between or around
 * CJK characters never matter. A scan over a table of character classes costs about half of that
 * expression's match, the array of tokens and their join, per note on the commit path.
 */

/** Character classes, as bits; `KNOWN` marks a table entry as filled. */
const KNOWN = 1
const CJK = 2
const WORD = 4
/** Neither white space nor a letter, digit or mark. */
const SIGN = 8
const PREFIX = 16
const SUFFIX = 32

const IS_WORD = /^[\p{L}\p{N}\p{M}]$/u
const IS_SPACE = /^\s$/u
const IS_PREFIX = /^[-+−$€£¥#@~/\\.]$/u
const IS_SUFFIX = /^[%‰°℃′″+#]$/u

/**
 * The class bits of one code point, from the expressions above. A code point of the CJK ranges
 * that is not a letter (`・`, an unassigned kana) is both a token of its own and a sign that
 * joins two words, as in the expression.
 */
function classify(codePoint: number): number {
  const char = String.fromCodePoint(codePoint)
  const cjk = CJK_CHAR.test(char) ? CJK : 0
  if (IS_WORD.test(char)) return KNOWN | (cjk === 0 ? WORD : CJK)
  if (IS_SPACE.test(char)) return KNOWN | cjk
  return KNOWN | cjk | SIGN | (IS_PREFIX.test(char) ? PREFIX : 0) | (IS_SUFFIX.test(char) ? SUFFIX : 0)
}

/** Classes of the Basic Multilingual Plane, filled as characters are met (others are rare: not kept). */
const bmp = new Uint8Array(0x10000)

function classOf(codePoint: number): number {
  if (codePoint >= 0x10000) return classify(codePoint)
  let bits = bmp[codePoint]!
  if (bits === 0) bmp[codePoint] = bits = classify(codePoint)
  return bits
}

/** Calls `emit(start, end)` for every token of `text`, left to right (see the expression above). */
function scanTokens(text: string, emit: (start: number, end: number) => void): void {
  const n = text.length
  let at = 0
  while (at < n) {
    let point = text.codePointAt(at)!
    let bits = classOf(point)
    if (bits & CJK) {
      emit(at, at + 1) // every CJK range lies in the BMP: one unit
      at++
      continue
    }
    // Prefix signs, then the first letter or digit; no token starts inside a run of prefix signs
    // that is not followed by one, so the scan goes on after the run.
    let word = at
    while (bits & PREFIX && ++word < n) bits = classOf(point = text.codePointAt(word)!)
    if (word >= n || !(bits & WORD)) {
      at = word > at ? word : at + (point > 0xffff ? 2 : 1)
      continue
    }
    // Letters and digits, joined by signs only where a letter or digit follows the signs.
    let end = word
    for (;;) {
      while (end < n && (bits = classOf(point = text.codePointAt(end)!)) & WORD) end += point > 0xffff ? 2 : 1
      if (end >= n || !(bits & SIGN)) break
      let next = end
      while (next < n && (bits = classOf(point = text.codePointAt(next)!)) & SIGN) next += point > 0xffff ? 2 : 1
      if (next >= n || !(bits & WORD)) break
      end = next
    }
    while (end < n && classOf(point = text.codePointAt(end)!) & SUFFIX) end += point > 0xffff ? 2 : 1
    emit(at, end)
    at = end
  }
}

/** Typographic quotes folded to ASCII, so `don’t` and `don't` are one token. */
const QUOTES: Record<string, string> = { '\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"' }

/** The text the tokens are read from: compatibility forms, case and quotes folded. */
function folded(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/[\u2018\u2019\u201c\u201d]/g, (q) => QUOTES[q]!)
}

/** The normalised token sequence of a text (exported for the benchmark and tests). */
export function nearTokens(text: string): string[] {
  const source = folded(text)
  const tokens: string[] = []
  scanTokens(source, (start, end) => { tokens.push(source.slice(start, end)) })
  return tokens
}

/** The UTF-8 bytes of the tokens joined by spaces, written here (reused: a note's key is hashed at once). */
let keyBytes = new Uint8Array(1024)

/**
 * The near-duplicate key: `nk_` + 96 bits of SHA-256 over the token sequence joined by spaces
 * (its UTF-8 bytes, written straight from the tokens), or '' when the text has no letter or digit
 * at all (such notes are never called duplicates).
 */
export function nearKey(text: string): string {
  const source = folded(text)
  if (keyBytes.length < source.length * 4 + 4) keyBytes = new Uint8Array(source.length * 4 + 4)
  const out = keyBytes
  let length = 0
  scanTokens(source, (start, end) => {
    if (length > 0) out[length++] = 0x20
    length = utf8(source, start, end, out, length)
  })
  if (length === 0) return ''
  return `nk_${hash('sha256', out.subarray(0, length), 'hex').slice(0, 24)}`
}

/**
 * Writes `text[start, end)` as UTF-8 into `out` at `at`, as Node encodes a string (an unpaired
 * surrogate as U+FFFD), and returns where it ended.
 */
function utf8(text: string, start: number, end: number, out: Uint8Array, at: number): number {
  for (let i = start; i < end; i++) {
    let unit = text.charCodeAt(i)
    if (unit < 0x80) {
      out[at++] = unit
    } else if (unit < 0x800) {
      out[at++] = 0xc0 | (unit >> 6)
      out[at++] = 0x80 | (unit & 0x3f)
    } else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < end && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      const point = 0x10000 + ((unit - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00)
      out[at++] = 0xf0 | (point >> 18)
      out[at++] = 0x80 | ((point >> 12) & 0x3f)
      out[at++] = 0x80 | ((point >> 6) & 0x3f)
      out[at++] = 0x80 | (point & 0x3f)
    } else {
      if (unit >= 0xd800 && unit <= 0xdfff) unit = 0xfffd
      out[at++] = 0xe0 | (unit >> 12)
      out[at++] = 0x80 | ((unit >> 6) & 0x3f)
      out[at++] = 0x80 | (unit & 0x3f)
    }
  }
  return at
}
