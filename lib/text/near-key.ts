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

/**
 * One token: optional attached prefix signs (`-5`, `/etc`, `$HOME`, `.env`, `#12`), a run of
 * letters/digits (not CJK) with any punctuation *between* them kept (`8.5`, `a-b`, `10.3.7.9`),
 * optional attached unit signs (`100%`, `5°`, `C++`). Each CJK character is a token of its own,
 * so spaces and punctuation between or around CJK characters never matter.
 */
const WORD = String.raw`(?:(?!${CJK_CHAR.source})[\p{L}\p{N}\p{M}])`
const TOKEN = new RegExp(
  String.raw`${CJK_CHAR.source}|[-+−$€£¥#@~/\\.]*${WORD}+(?:[^\s\p{L}\p{N}\p{M}]+${WORD}+)*[%‰°℃′″+#]*`,
  'gu')

/** Typographic quotes folded to ASCII, so `don’t` and `don't` are one token. */
const QUOTES: Record<string, string> = { '\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"' }

/** The normalised token sequence of a text (exported for the benchmark and tests). */
export function nearTokens(text: string): string[] {
  const folded = text.normalize('NFKC').toLowerCase().replace(/[\u2018\u2019\u201c\u201d]/g, (q) => QUOTES[q]!)
  return folded.match(TOKEN) ?? []
}

/**
 * The near-duplicate key: `nk_` + 96 bits of SHA-256 over the token sequence, or '' when the
 * text has no letter or digit at all (such notes are never called duplicates).
 */
export function nearKey(text: string): string {
  const tokens = nearTokens(text)
  if (tokens.length === 0) return ''
  return `nk_${hash('sha256', tokens.join(' '), 'hex').slice(0, 24)}`
}
