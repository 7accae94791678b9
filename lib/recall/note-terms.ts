import { CJK_FUNCTION_WORDS, CJK_PARTICLES, ENGLISH_STOPWORDS } from './stopwords.ts'
import { symbolVariants, wordStem } from './symbols.ts'

/**
 * A note's own terms as the relevance signal's note side reads them, in the form it probes the
 * query with: the stem of each distinct Latin content word, each distinct CJK bigram that is not an
 * artefact (a function word or one holding a particle), and the spellings of each distinct exact
 * symbol. They are the terms `analyzeQuery` finds in the same text (one turn, no segmenter, no
 * weights; test/recall/note-terms.test.ts holds the two readings equal), found in one pass over
 * the characters rather than by regular expressions: relevance reads them on every returned hit
 * of every turn (and on every candidate of the hybrid recall).
 *
 * A note's terms do not depend on the query, and the notes recalled on one turn tend to come back
 * on the next, so the last `NOTE_TERMS_CACHE` notes' terms are kept by block id. An entry is used
 * only for the same text (a block id names its content, so in practice it always is).
 */
export interface NoteTerms {
  /** The stem (`wordStem`) of each distinct Latin content word, in the order of the words. */
  stems: readonly string[]
  /** Distinct CJK bigrams (a one-character run as itself) that are neither function words nor hold a particle. */
  grams: readonly string[]
  /** The spellings (`symbolVariants`) of each distinct exact symbol. */
  exact: ReadonlyArray<readonly string[]>
}

/** How many notes' terms are remembered (a few turns of hybrid candidates; ≈ 1–2 KB each). */
export const NOTE_TERMS_CACHE = 2_048

const cache = new Map<string, { text: string, terms: NoteTerms }>()

/** The terms of a block's text, from the cache when this block was read before. */
export function cachedNoteTerms(id: string, text: string): NoteTerms {
  const known = cache.get(id)
  if (known !== undefined && known.text === text) {
    // Refresh: a Map iterates in insertion order, so the first key is the least recently used.
    cache.delete(id)
    cache.set(id, known)
    return known.terms
  }
  const terms = noteTerms(text)
  cache.delete(id)
  if (cache.size >= NOTE_TERMS_CACHE) cache.delete(cache.keys().next().value!)
  cache.set(id, { text, terms })
  return terms
}

/** The terms of one note's text (uncached; see `cachedNoteTerms`). */
export function noteTerms(text: string): NoteTerms {
  const words = new Set<string>()
  const exact = new Set<string>()
  const grams = new Set<string>()
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (isCjk(c)) {
      let end = i + 1
      while (end < n && isCjk(text.charCodeAt(end))) end++
      if (end - i === 1) {
        if (!PARTICLES.has(c) && !CJK_FUNCTION_WORDS.has(text[i]!)) grams.add(text[i]!)
      } else {
        // A pair holding a particle is an artefact: skip it without cutting it out.
        for (let k = i; k + 1 < end; k++) if (!PARTICLES.has(text.charCodeAt(k)) && !PARTICLES.has(text.charCodeAt(k + 1))) grams.add(text.slice(k, k + 2))
      }
      i = end
      continue
    }
    // A code token: an optional leading ~ or /, a word character, then word characters and the
    // punctuation that glues paths, IPs and versions (symbols.ts, CODE_TOKEN).
    let end: number
    if ((c === TILDE || c === SLASH) && i + 1 < n && isWordChar(text.charCodeAt(i + 1))) end = i + 2
    else if (isWordChar(c)) end = i + 1
    else { i++; continue }
    while (end < n && isTokenChar(text.charCodeAt(end))) end++
    token(text, i, end, words, exact)
    i = end
  }
  const stems: string[] = []
  for (const word of words) stems.push(wordStem(word))
  const kept: string[] = []
  for (const gram of grams) if (!CJK_FUNCTION_WORDS.has(gram)) kept.push(gram)
  return { stems, grams: kept, exact: [...exact].map(symbolVariants) }
}

/** One code token `text[from, to)`: an exact symbol, or the Latin content words it holds (symbols.ts, latinTerms). */
function token(text: string, from: number, to: number, words: Set<string>, exact: Set<string>): void {
  while (to > from && isTrailing(text.charCodeAt(to - 1))) to--
  if (to - from < 2) return
  const lower = text.slice(from, to).toLowerCase()
  let digit = false
  let glued = false
  for (let k = 0; k < lower.length; k++) {
    const c = lower.charCodeAt(k)
    if (c >= ZERO && c <= NINE) digit = true
    else if (k > 0 && (c === DOT || c === SLASH || c === UNDERSCORE)) glued = true
  }
  if (digit || (glued && lower.length >= 4)) {
    exact.add(lower)
    return
  }
  let start = -1
  for (let k = 0; k <= lower.length; k++) {
    const c = k < lower.length ? lower.charCodeAt(k) : 0
    const letter = c >= LOWER_A && c <= LOWER_Z
    if (letter && start < 0) start = k
    else if (!letter && start >= 0) {
      if (k - start >= 3) {
        const word = lower.slice(start, k)
        if (!ENGLISH_STOPWORDS.has(word)) words.add(word)
      }
      start = -1
    }
  }
}

/**
 * The particles (`CJK_PARTICLES`) by character code. A bigram holding one is left out, as is a
 * function word: the note's document frequencies are never read, so every such bigram counts as
 * an artefact of cutting text into pairs.
 */
const PARTICLES: ReadonlySet<number> = new Set([...CJK_PARTICLES].map((p) => p.charCodeAt(0)))

const TILDE = 0x7e
const SLASH = 0x2f
const DOT = 0x2e
const UNDERSCORE = 0x5f
const ZERO = 0x30
const NINE = 0x39
const LOWER_A = 0x61
const LOWER_Z = 0x7a

/** `[A-Za-z0-9_]`. */
function isWordChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= ZERO && c <= NINE) || c === UNDERSCORE
}

/** `[.:/@~+-]`: what may glue a token together and what is stripped from its end. */
function isTrailing(c: number): boolean {
  return c === DOT || c === 0x3a || c === SLASH || c === 0x40 || c === TILDE || c === 0x2b || c === 0x2d
}

/** `[A-Za-z0-9_.:/@~+-]`: the characters of a code token after its first. */
function isTokenChar(c: number): boolean {
  return isWordChar(c) || isTrailing(c)
}

/** The CJK characters of `text/cjk.ts` (all in the Basic Multilingual Plane, so one UTF-16 unit each). */
function isCjk(c: number): boolean {
  return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0x3040 && c <= 0x30ff) || (c >= 0xac00 && c <= 0xd7af)
}
