/**
 * Chinese, Japanese and Korean text has no spaces between words, so SQLite's `unicode61`
 * tokenizer keeps a whole CJK run as one token and nothing inside it can be found. Rather than
 * load a tokenizer extension, this module rewrites CJK runs into overlapping two-character
 * tokens ("bigrams") at index time and at query time; Latin text and numbers pass through.
 */

/** Ideographs (CJK Unified + Extension A + Compatibility), kana and hangul syllables. */
export const CJK_CHAR = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/u
const CJK_RUN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+/gu

/** Every maximal CJK run in the text, in order. */
export function cjkRuns(text: string): string[] {
  return text.match(CJK_RUN) ?? []
}

/**
 * Overlapping bigrams of one CJK run; a one-character run is kept as itself so that a lone
 * character can still be matched.
 */
export function bigrams(run: string): string[] {
  const chars = Array.from(run)
  if (chars.length < 2) return chars
  const out: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!)
  return out
}

/**
 * The text written into the FTS `cjk` column: the bigrams of every CJK run, space-separated.
 * Empty when the text has no CJK, so Latin-only blocks cost nothing extra in the index.
 */
export function cjkIndexText(text: string): string {
  const parts: string[] = []
  for (const run of cjkRuns(text)) parts.push(bigrams(run).join(' '))
  return parts.join(' ')
}

/** The text with every CJK run replaced by a space: what the FTS `latin` column indexes. */
export function withoutCjk(text: string): string {
  return text.replace(CJK_RUN, ' ')
}
