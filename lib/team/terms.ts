import { stemmer } from 'stemmer'
import { cjkIndexText, withoutCjk } from '../text/cjk.ts'

/**
 * The shared layer's tokens, the same as the local FTS5 index's (`porter unicode61
 * remove_diacritics 2` over the `latin` and `cjk` columns, `lib/store/schema.ts`): letters,
 * numbers and private-use characters form tokens, everything else separates; case and Latin
 * diacritics are folded; Latin tokens of 3…64 characters are Porter-stemmed; CJK runs become our
 * bigrams (`lib/text/cjk.ts`). A term key carries its column (`l:port`, `c:服务`), so the
 * postings and the document frequencies kept in PostgreSQL never mix the two.
 */

const SEPARATOR = /[^\p{L}\p{N}\p{Co}]+/u
const MARKS = /\p{M}+/gu
/** Latin letters with diacritics (Latin-1 Supplement, Extended-A/B, Extended Additional). */
const ACCENTED = /[\u00c0-\u024f\u1e00-\u1eff]/gu

/** FTS5's porter tokenizer leaves tokens outside these lengths as they are. */
const STEM_MIN = 3
const STEM_MAX = 64

/** Tokens of one column's text, in order, as FTS5 would index them. */
export function tokens(text: string): string[] {
  const out: string[] = []
  for (const raw of text.replace(ACCENTED, (c) => c.normalize('NFD').replace(MARKS, '')).toLowerCase().split(SEPARATOR)) {
    if (raw === '') continue
    out.push(raw.length >= STEM_MIN && raw.length <= STEM_MAX && /[a-z]/.test(raw) ? stemmer(raw) : raw)
  }
  return out
}

/** The two columns of one note, tokenised. */
export interface NoteTokens {
  latin: string[]
  cjk: string[]
}

/** A note's tokens per column (what FTS5 stores for it). */
export function noteTokens(text: string): NoteTokens {
  return { latin: tokens(withoutCjk(text)), cjk: tokens(cjkIndexText(text)) }
}

/** The column a term key belongs to. */
export type Column = 'latin' | 'cjk'

/** The term key of one token in one column. */
export function termKey(column: Column, token: string): string {
  return `${column === 'latin' ? 'l' : 'c'}:${token}`
}

/** Longest term key stored (a B-tree entry must fit in a third of a page). */
const MAX_KEY_BYTES = 2_000

/** How often each term key occurs in a note (its postings rows), keys past `MAX_KEY_BYTES` left out. */
export function termFrequencies(tokens: NoteTokens): Map<string, number> {
  const tf = new Map<string, number>()
  for (const t of tokens.latin) tf.set(termKey('latin', t), (tf.get(termKey('latin', t)) ?? 0) + 1)
  for (const t of tokens.cjk) tf.set(termKey('cjk', t), (tf.get(termKey('cjk', t)) ?? 0) + 1)
  for (const k of tf.keys()) if (Buffer.byteLength(k) > MAX_KEY_BYTES) tf.delete(k)
  return tf
}

/** The distinct term keys of a note, sorted: the keys whose document frequency it adds to. */
export function noteTerms(tokens: NoteTokens): string[] {
  return [...termFrequencies(tokens).keys()].sort()
}

/** Times `phrase` (a token sequence) occurs in `seq`. */
export function phraseHits(seq: readonly string[], phrase: readonly string[]): number {
  if (phrase.length === 0 || phrase.length > seq.length) return 0
  let hits = 0
  outer: for (let i = 0; i + phrase.length <= seq.length; i++) {
    for (let j = 0; j < phrase.length; j++) if (seq[i + j] !== phrase[j]) continue outer
    hits++
  }
  return hits
}

/** Separates the two columns in `packTokens` (a control character: never inside a token). */
const COLUMN_BREAK = '\u0001'

/** A note's tokens as one string (the `toks` column), so a recall never tokenises a candidate again. */
export function packTokens(t: NoteTokens): string {
  return `${t.latin.join(' ')}${COLUMN_BREAK}${t.cjk.join(' ')}`
}

/** The inverse of `packTokens`. */
export function unpackTokens(packed: string): NoteTokens {
  const at = packed.indexOf(COLUMN_BREAK)
  const split = (part: string) => part === '' ? [] : part.split(' ')
  return { latin: split(packed.slice(0, at)), cjk: split(packed.slice(at + 1)) }
}
