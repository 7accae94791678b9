/**
 * Distillation of a cold block into stable facts, `subject|dimension=value` (HologramAgent's
 * field blocks, spec §7.6). The deterministic distiller finds value-like strings (numbers, ports,
 * IPs, versions, dates, paths, identifiers with digits) and names each by the words before it:
 * the dimension is the nearest few words, the subject what comes before them. Every fact, from
 * any distiller, must pass the same gates: the value appears verbatim in the source, the
 * dimension is 1–12 characters, a subject was derived, and neither subject nor dimension equals
 * the value (no self-loops).
 */

/** One distilled fact. */
export interface Fact {
  subject: string
  dimension: string
  value: string
}

/** Something that turns a block's text into facts; may be asynchronous (an LLM) and may fail. */
export type Distiller = (text: string) => Fact[] | Promise<Fact[]>

/** Longest dimension, in characters (spec §7.6). */
export const MAX_DIMENSION_CHARS = 12
/** Longest subject kept, in characters. */
const MAX_SUBJECT_CHARS = 40
/** Most facts taken from one block, so one long text cannot flood L3. */
const MAX_FACTS = 16

/** Value-like tokens: a path, or a Latin/number token holding a digit (IPs, ports, versions, dates, ids). */
const VALUE = /(?:~?\/[\w.@+-]+(?:\/[\w.@+-]+)+)|(?<![\w.\-/])v?\d[\w.:/@+-]*/g
/** Punctuation a token may trail in prose and that is not part of it. */
const TRAILING = /[.:/@+-]+$/
/** Where a sentence ends. */
const SENTENCE = /[。！？!?；;\n]+|\.(?:\s+|$)/
/** A lead-in that is not the subject: "记一下：", "Note:", "记住：". */
const LEAD_IN = /^[^:：]{0,8}[:：]\s*/
/** Characters trimmed off both ends of a dimension or subject. */
const EDGE = /^[\s*·•\-—:：,，、的是为在于到=]+|[\s*·•\-—:：,，、的是为在于到=]+$/g
/** English words that end a subject (verbs and prepositions between it and the dimension). */
const SUBJECT_STOP = new Set(['is', 'are', 'was', 'were', 'be', 'on', 'at', 'in', 'to', 'of', 'for', 'from', 'by', 'with', 'listens', 'lives', 'runs', 'uses', 'use', 'pinned', 'set', 'moved', 'due', 'has', 'have', 'we', 'i', 'you', 'they', 'it', 'now', 'note'])
const ARTICLES = new Set(['the', 'a', 'an', 'this', 'that', 'our'])

/** Normalises a proposed dimension: trimmed of spaces and list/colon punctuation. */
export function normalizeDimension(name: string): string {
  return name.replace(EDGE, '').trim()
}

/**
 * The gates every fact passes (spec §7.6), with a fact's parts trimmed; the facts that pass,
 * deduplicated, at most `MAX_FACTS`.
 */
export function gateFacts(source: string, facts: readonly Fact[]): Fact[] {
  const out: Fact[] = []
  const seen = new Set<string>()
  for (const fact of facts) {
    if (fact === null || typeof fact !== 'object') continue
    const { subject, dimension, value } = fact as Partial<Fact>
    if (typeof subject !== 'string' || typeof dimension !== 'string' || typeof value !== 'string') continue
    const s = subject.replace(EDGE, '').trim()
    const d = normalizeDimension(dimension)
    const v = value.trim()
    if (v === '' || !source.includes(v)) continue // the only hallucination gate: the value is in the source
    if (d === '' || [...d].length > MAX_DIMENSION_CHARS) continue
    if (s === '' || [...s].length > MAX_SUBJECT_CHARS) continue // no dangling attributes
    if (s === v || d === v || s === d) continue // no self-loops
    if (/[|=\n]/.test(s + d)) continue // would break the `subject|dimension=value` shape
    const text = factText({ subject: s, dimension: d, value: v })
    if (seen.has(text)) continue
    seen.add(text)
    out.push({ subject: s, dimension: d, value: v })
    if (out.length >= MAX_FACTS) break
  }
  return out
}

/** A fact as a block text: `subject|dimension=value`. */
export function factText(fact: Fact): string {
  return `${fact.subject}|${fact.dimension}=${fact.value}`
}

/** The deterministic distiller: offline, no model, the same facts for the same text every time. */
export function distillDeterministic(text: string): Fact[] {
  const facts: Fact[] = []
  for (const raw of text.split(SENTENCE)) {
    const sentence = raw.replace(LEAD_IN, '').trim()
    if (sentence === '') continue
    let subject: string | undefined
    let from = 0
    for (const match of sentence.matchAll(VALUE)) {
      const value = match[0].replace(TRAILING, '')
      if (value.length < 2) continue
      // Each value is named by its own clause, since the previous value.
      const named = nameBefore(sentence.slice(from, match.index))
      from = match.index + match[0].length
      if (named === undefined) continue
      // A later clause without a subject keeps the sentence's first ("billing 端口 8499，部署在 10.3.7.9").
      subject = named.subject !== '' ? named.subject : subject
      if (subject === undefined) continue
      facts.push({ subject, dimension: named.dimension, value })
    }
  }
  return gateFacts(text, facts)
}

/** Splits the text before a value into subject and dimension. */
function nameBefore(before: string): { subject: string, dimension: string } | undefined {
  const trimmed = before.replace(EDGE, '')
  if (trimmed === '') return undefined
  const cjk = /([\u3400-\u4dbf\u4e00-\u9fff]+)$/u.exec(trimmed)
  return cjk ? nameBeforeCjk(trimmed, cjk[1]!) : nameBeforeLatin(trimmed)
}

/** Characters between a Chinese dimension and its value that belong to neither ("在", "是", "写到", "定在"). */
const CJK_LINK = /[的是为在于到定写设放]+$/u
/** Longest Chinese dimension taken, in characters (the rest of the run belongs to the subject). */
const CJK_DIMENSION = 4

/** Chinese: the dimension is the last few characters of the run before the value (never across 的), the subject what precedes it. */
function nameBeforeCjk(text: string, run: string): { subject: string, dimension: string } | undefined {
  const core = run.replace(CJK_LINK, '')
  if (core === '') return undefined
  const tail = core.slice(core.lastIndexOf('的') + 1)
  const chars = [...tail]
  const dimension = chars.slice(-CJK_DIMENSION).join('')
  const rest = text.slice(0, text.length - run.length) + core.slice(0, core.length - dimension.length)
  return { subject: rest.replace(EDGE, '').trim(), dimension: normalizeDimension(dimension) }
}

/** Latin: trailing verbs and prepositions dropped, the last word is the dimension, the last run of content words before it the subject. */
function nameBeforeLatin(text: string): { subject: string, dimension: string } | undefined {
  const words = text.split(/\s+/).filter((w) => w !== '')
  while (words.length > 0 && isStop(words.at(-1)!)) words.pop()
  if (words.length === 0) return undefined
  const dimension = normalizeDimension(words.pop()!)
  let end = words.length
  while (end > 0 && isStop(words[end - 1]!)) end--
  let start = end
  while (start > 0 && !isStop(words[start - 1]!)) start--
  return { subject: words.slice(start, end).join(' ').replace(EDGE, ''), dimension }
}

function isStop(word: string): boolean {
  const lower = word.toLowerCase()
  return SUBJECT_STOP.has(lower) || ARTICLES.has(lower)
}
