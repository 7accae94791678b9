import type { RecallSource } from './source.ts'
import { matchCjkPhrase, matchPhrase } from './fts-query.ts'
import { cjkRuns } from '../text/cjk.ts'
import { scrubQuery } from '../text/normalize.ts'
import { cachedNoteTerms, noteTerms, type NoteTerms } from './note-terms.ts'
import { CJK_FUNCTION_WORDS, CJK_PARTICLES, ENGLISH_STOPWORDS } from './stopwords.ts'
import { analyzeQuery, boundedTurns, containsStem, containsWhole, queryTurns, symbolVariants, wordStem, type QueryAnalysis, type QueryTurn } from './symbols.ts'

/**
 * Absolute relevance: how much a note and the query have specifically in common. Recall's score
 * is relative (the best candidate's bm25 becomes 1), so the best of an unrelated lot still looks
 * like a match; this signal is not. It reads the note from both sides:
 *
 * - **query side**: the share of what is specific in the query that the note holds. Each Latin
 *   content word, CJK bigram and exact symbol of the query weighs its query weight (1, or the
 *   turn-weighted count in a pasted transcript) times its smoothed IDF in the store,
 *   `ln(1 + (N − df + ½)/(df + ½))`; a part no note holds weighs as much as the rarest part a note
 *   can hold (df 1): a name or a number the store has never seen is as specific as a query gets.
 *   CJK bigrams that are function words (什么, 多少) are not parts, nor are absent bigrams that
 *   hold a particle (的, 是, 哪 …: "的端", "口是" of "服务的端口是多少"): artefacts of cutting
 *   text into pairs. Other absent bigrams count, even where the segmenter found no word: it cuts
 *   names it does not know (舜|天, 硫|醚) into single characters.
 * - **note side**: the share of the note's own terms (its distinct Latin words, exact symbols and
 *   CJK bigrams, the same exclusions) that the query mentions, unweighted. A pasted chat holds
 *   hundreds of parts, so any one memory of it holds a few percent of them, as does a Wikipedia
 *   paragraph that shares the chat's everyday words; but a short memory of the same event is
 *   largely *in* the chat, and a paragraph full of names and dates is not. It does not shrink with
 *   the query's length, and it reads only the note's text and the query (no index counts: it
 *   runs on every hit of every turn). The note's terms are read in one pass and remembered by
 *   block id (`note-terms.ts`); the note's words are looked up among the query's words, sorted,
 *   rather than searched for in its text.
 *
 * On the query side a note's Latin words count only when it holds at least two of the query's
 * (`LATIN_COORDINATION`): one shared English word is as often an accident as a match.
 *
 * A note's relevance is the larger of the query-side share and `NOTE_SIDE_WEIGHT` × the note-side
 * share, capped at 1. When the query names someone or something (capitalised Latin words) and the
 * store holds none of those names, every note's relevance is 0: the store has never heard of what
 * is asked about, so the notes that share the rest of the question are about something else. In a
 * pasted transcript whose speakers are people (not roles such as "Assistant"), those speakers are
 * whom it is about, and the names inside it (a neighbour, a film hero) are not asked of the store.
 * The same rule serves every language and query shape; the query's document frequencies are
 * the ones recall already read (cached per store version), so it costs a few index counts per
 * query and string searches per returned hit.
 */

/** One specific part of the query, with the mass it carries. */
interface Part {
  kind: 'word' | 'bigram' | 'exact'
  term: string
  mass: number
  /** An exact symbol's spellings (`symbolVariants`), computed once per query. */
  variants?: string[]
  /** A word's stem (`wordStem`), computed once per query. */
  stem?: string
}

/** The query's specific parts and their total mass, with what `relevance()` needs to read notes against it. */
export interface QueryContent {
  parts: readonly Part[]
  total: number
  /** The query without speaker labels, lower-cased: where a note's words and symbols are looked for. */
  lower: string
  /** Every CJK bigram of the query: where a note's bigrams are looked for. */
  bigrams: ReadonlySet<string>
  /**
   * The distinct words of `lower`, sorted: maximal runs of a–z not preceded by a letter, digit
   * or underscore. A note's word is in the query (`containsStem(lower, stem)`) exactly when its
   * stem begins one of them, which a binary search finds.
   */
  words: readonly string[]
  /**
   * Whom the query is about when the store has heard of none of them (then every note's relevance
   * is 0): a pasted transcript's people (`speakersOf`), or else the names its text mentions.
   */
  unknownNames: readonly string[]
  /** How many of `parts` are Latin content words (`LATIN_COORDINATION`). */
  latinWords: number
}

/**
 * How much the note-side share counts against the query-side one (relevance = max(query side,
 * this × note side)). Chosen on the dev sets with the gate's threshold (docs/benchmarks.md,
 * "Precision").
 */
export const NOTE_SIDE_WEIGHT = 2

/**
 * Smoothed IDF that stays positive (the same as coverage's), so common parts weigh little but
 * never nothing; a part no note holds counts as held by one.
 */
function idf(n: number, df: number): number {
  const held = Math.max(1, df)
  return Math.log(1 + (n - held + 0.5) / (held + 0.5))
}

/** A CJK bigram that says nothing by itself: a function word, or (when absent from the store) one holding a particle. */
function artefact(gram: string, absent: boolean): boolean {
  if (CJK_FUNCTION_WORDS.has(gram)) return true
  if (absent) for (const c of gram) if (CJK_PARTICLES.has(c)) return true
  return false
}

/** The weighted parts of an analysed query against this store (see the module comment for which bigrams count); `df` gets each word's document frequency. */
function partsIn(store: RecallSource, analysis: QueryAnalysis, df: Map<string, number>): Part[] {
  const n = store.count()
  const parts: Part[] = []
  for (const word of analysis.words) {
    const count = store.matchCount(matchPhrase(word))
    df.set(word, count)
    parts.push({ kind: 'word', term: word, mass: (analysis.weights.get(word) ?? 1) * idf(n, count), stem: wordStem(word) })
  }
  const bigramDf = store.cjkDocumentFrequencies(analysis.cjkBigrams)
  for (const gram of analysis.cjkBigrams) {
    const df = bigramDf.get(gram) ?? 0
    if (artefact(gram, df === 0)) continue
    parts.push({ kind: 'bigram', term: gram, mass: (analysis.weights.get(gram) ?? 1) * idf(n, df) })
  }
  for (const symbol of analysis.exact) {
    const variants = symbolVariants(symbol)
    const df = Math.max(...variants.map((v) => store.matchCount(matchPhrase(v))))
    parts.push({ kind: 'exact', term: symbol, mass: idf(n, df), variants })
  }
  return parts
}

/**
 * The specific parts of an analysed query, weighted against this store. Use the full analysis
 * (not the one cut to its rarest terms for the search): parts no note holds are exactly what
 * makes a store irrelevant to a query. `text` is the scrubbed query the analysis came from, or its turns.
 */
export function queryContent(store: RecallSource, analysis: QueryAnalysis, text: string | readonly QueryTurn[]): QueryContent {
  const df = new Map<string, number>()
  const parts = partsIn(store, analysis, df)
  // The same turns as the analysis (a string is bounded as it is: a 1 MB query costs no more than a long message).
  const weighted = typeof text === 'string' ? boundedTurns(text) : text
  const turns = weighted.map((turn) => turn.text)
  const lower = turns.join('\n').toLowerCase()
  // Whom the query is about: a transcript's people when it names them, else the names its text mentions.
  const speakers = speakersOf(weighted)
  const names = speakers.length > 0 ? speakers : namesOf(turns)
  // A name is usually one of the query's words, whose count was just read.
  const unknownNames = names.some((name) => (df.get(name) ?? store.matchCount(namePhrase(name))) > 0) ? [] : names
  return {
    parts, total: parts.reduce((sum, p) => sum + p.mass, 0), lower, bigrams: new Set(analysis.cjkBigrams), words: wordsOf(lower), unknownNames,
    latinWords: parts.filter((p) => p.kind === 'word').length,
  }
}

/** The distinct words of a lower-cased text, sorted (`QueryContent.words`). */
function wordsOf(lower: string): string[] {
  const words = new Set<string>()
  let start = -1
  for (let i = 0; i <= lower.length; i++) {
    const c = i < lower.length ? lower.charCodeAt(i) : 0
    const letter = c >= 0x61 && c <= 0x7a
    if (letter) {
      if (start < 0 && (i === 0 || !isWordCode(lower.charCodeAt(i - 1)))) start = i
    } else if (start >= 0) {
      words.add(lower.slice(start, i))
      start = -1
    }
  }
  return [...words].sort()
}

/** `[a-z0-9_]`: a character that glues to the word after it (`containsStem`). */
function isWordCode(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f
}

/** Whether one of the sorted `words` begins with `stem`: the first word not below it does, if any does. */
function beginsWord(words: readonly string[], stem: string): boolean {
  let lo = 0
  let hi = words.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (words[mid]! < stem) lo = mid + 1
    else hi = mid
  }
  return lo < words.length && words[lo]!.startsWith(stem)
}

/** Whether a lower-cased text holds one part: a word as in coverage (the stem as a word prefix), a bigram as a substring, a symbol as a whole token in any spelling. */
function holds(lowerText: string, part: Part): boolean {
  return part.kind === 'word' ? containsStem(lowerText, part.stem!)
    : part.kind === 'bigram' ? lowerText.includes(part.term)
      : (part.variants ?? [part.term]).some((v) => containsWhole(lowerText, v))
}

/**
 * How many of the query's Latin content words a note must hold before any of them counts on the
 * query side (fewer when the query has fewer). One shared English word is an accident as often
 * as a match: a Chinese Wikipedia paragraph that quotes "Paris" or "album" holds the rarest word
 * of an English question about something else, and in a store where Latin words are rare that
 * one word carries most of the question's mass. A note about the question usually holds two of
 * its words. CJK bigrams and exact symbols are not coordinated: a bigram is a fragment of a word,
 * and one exact symbol (a port, a path) is a match by itself.
 */
export const LATIN_COORDINATION = 2

/** The share (0…1) of the query's specific mass that a note (lower-cased) holds, Latin words coordinated (`LATIN_COORDINATION`). */
function queryShare(content: QueryContent, lowerNote: string): number {
  let held = 0
  let words = 0
  let wordMass = 0
  for (const part of content.parts) {
    if (!holds(lowerNote, part)) continue
    if (part.kind === 'word') {
      words++
      wordMass += part.mass
    } else held += part.mass
  }
  if (words >= Math.min(LATIN_COORDINATION, content.latinWords)) held += wordMass
  return Math.min(1, held / content.total)
}

/**
 * The share (0…1) of a note's own terms (`note-terms.ts`: bigrams holding a particle are left
 * out, as the note's df is not read) that the query mentions.
 */
function noteShare(content: QueryContent, terms: NoteTerms): number {
  let held = 0
  for (const stem of terms.stems) if (beginsWord(content.words, stem)) held++
  for (const gram of terms.grams) if (content.bigrams.has(gram)) held++
  for (const variants of terms.exact) if (variants.some((v) => containsWhole(content.lower, v))) held++
  const total = terms.stems.length + terms.grams.length + terms.exact.length
  return total === 0 ? 0 : held / total
}

/**
 * Both sides of one note's relevance: the share of the query it holds and the share of it the
 * query mentions. With the note's block `id` its terms are read once and remembered.
 */
export function relevanceSides(content: QueryContent, noteText: string, id?: string): { query: number, note: number } {
  if (content.unknownNames.length > 0 || content.total <= 0) return { query: 0, note: 0 }
  const terms = id === undefined ? noteTerms(noteText) : cachedNoteTerms(id, noteText)
  return { query: queryShare(content, noteText.toLowerCase()), note: noteShare(content, terms) }
}

/**
 * The relevance (0…1) of one note to the query: the larger of the query-side share and
 * `NOTE_SIDE_WEIGHT` × the note-side share, capped at 1. 0 for a query with nothing specific,
 * and for every note when the query names only names the store has never seen. Pass the note's
 * block `id` when there is one, so its terms are read once across turns.
 */
export function relevance(content: QueryContent, noteText: string, id?: string): number {
  const sides = relevanceSides(content, noteText, id)
  return Math.min(1, Math.max(sides.query, NOTE_SIDE_WEIGHT * sides.note))
}

/** Relevance of any note text to a raw query (for notes found by other means than the lexical recall, e.g. vectors). */
export function queryRelevance(store: RecallSource, query: string): (text: string) => number {
  const text = scrubQuery(query)
  const content = queryContent(store, analyzeQuery(text), text)
  return (note) => relevance(content, note)
}

/** A Latin word as written, with an apostrophe inside (possessive, contraction). */
const LATIN_WORD = /[A-Za-z][A-Za-z'’]*/g
/** What ends a sentence, so that the capital of the next word is grammar, not a name. */
const SENTENCE_END = /[.!?。！？:：;；]/
/** Space and opening quotes or brackets, skipped when looking for what precedes a word. */
const OPENING = /[\s"“'‘(（[「]/u

/**
 * The names a query mentions, lower-cased: capitalised Latin words of 3+ letters that do not open
 * a sentence ("Caroline", "Disneyland"; "When" of "When did…" is grammar), and all-capital
 * acronyms anywhere ("LGBTQ"), minus stop words. A transcript's speaker labels are not read.
 * Scripts without capitals (Chinese) name nothing here; their names are bigrams on the query side.
 */
export function namesIn(text: string): string[] {
  return namesOf(queryTurns(text).map((turn) => turn.text))
}

/**
 * Labels that name a role in a chat, not a person: a store need not have heard of them. Lower-cased;
 * a pasted transcript whose only speakers are roles is read for the names its text mentions.
 */
const ROLE_LABELS: ReadonlySet<string> = new Set(['user', 'assistant', 'human', 'ai', 'bot', 'system', 'me', 'you', 'model', 'agent', 'question', 'answer', '用户', '助手', '客服', '机器人', '问题', '回答'])

/**
 * The people of a pasted transcript: the speaker labels of two or more characters (`Q:` and `A:`
 * are not people) that open two or more of its lines (a "key: value" list names each key once)
 * and are not roles (`ROLE_LABELS`), lower-cased.
 */
function speakersOf(turns: readonly QueryTurn[]): string[] {
  const lines = new Map<string, number>()
  for (const turn of turns) {
    if (turn.speaker === undefined) continue
    const label = turn.speaker.toLowerCase()
    if (Array.from(label).length >= 2 && !ROLE_LABELS.has(label)) lines.set(label, (lines.get(label) ?? 0) + 1)
  }
  return [...lines].filter(([, n]) => n >= 2).map(([label]) => label)
}

/** The FTS phrase a name is looked up with: a CJK name as its bigrams, any other as a Latin phrase. */
function namePhrase(name: string): string {
  return cjkRuns(name).join('') === name ? matchCjkPhrase(name) : matchPhrase(name)
}

/** `namesIn` over a query already split into turns (their labels removed). */
function namesOf(turns: readonly string[]): string[] {
  const names = new Set<string>()
  for (const turn of turns) {
    for (const match of turn.matchAll(LATIN_WORD)) {
      const word = match[0].replace(/['’]s$/, '').replace(/['’]+$/, '')
      if (!/^[A-Z]/.test(word) || word.length < 3) continue
      let at = match.index - 1 // the last character before the word that is not space or an opening quote
      while (at >= 0 && OPENING.test(turn[at]!)) at--
      const opensSentence = at < 0 || SENTENCE_END.test(turn[at]!)
      if (opensSentence && !/^[A-Z]+$/.test(word)) continue
      const lower = word.toLowerCase()
      if (!ENGLISH_STOPWORDS.has(lower) && !lower.includes("'") && !lower.includes('’')) names.add(lower)
    }
  }
  return [...names]
}
