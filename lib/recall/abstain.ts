import type { Abstention, Hit, RecallHits } from './types.ts'

/**
 * Abstention (HologramAgent spec §4): when a query names a specific exact string — a port,
 * version, IP, path, id — that no stored block contains, the honest answer is "the memory store
 * has no record of it", not the nearest unrelated notes. The criterion is symbol existence, a
 * deterministic fact, never a score threshold. It is deliberately one-sided: a query without such
 * a string (vague, purely Chinese, purely descriptive) never abstains, because a wrong refusal
 * costs more than a weak hit.
 */

/** The abstention types live with the other recall types (`types.ts`); re-exported for the modules that import them from here. */
export type { Abstention, RecallHits }

/** Most query words an abstention lists as mentioned by the store (the notice names as many). */
export const MENTIONED_WORDS = 8

/**
 * Words that point back at something said earlier ("that one", "last time"). A query holding one
 * may name a string only loosely, so it never abstains (spec §4.2's vague-pointer list).
 */
export const VAGUE_POINTERS: readonly string[] = [
  '那个', '这个', '那些', '这些', '它们', '他们', '它', '之前', '以前', '当时', '刚才', '上次', '前面', '还有', '另外', '别的',
]

/** A four-digit year (1900–2099): times live in block metadata as often as in text, so a year alone proves nothing. */
const YEAR = /^(19|20)\d\d$/
/** An ordinal ("8th", "21st"): a date part or a rank, not an identifier. */
const ORDINAL = /^\d+(st|nd|rd|th)$/
/** A day of the month (1–31) … */
const DAY = /^(0?[1-9]|[12]\d|3[01])$/
/** … counts as a date part when the query names a month. */
const MONTH = /月|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b/i

/**
 * The exact strings of a query that can decide abstention: numeric (they contain a digit), two or
 * more characters, and not a date part (a year, an ordinal, or a day number beside a month name) —
 * dates are when a note was written as often as what it says. A query holding a vague pointer
 * has none. Empty means "never abstain".
 */
export function decisiveSymbols(query: string, exact: readonly string[]): string[] {
  if (VAGUE_POINTERS.some((p) => query.includes(p))) return []
  const hasMonth = MONTH.test(query)
  return exact.filter((s) => /\d/.test(s) && Array.from(s).length >= 2 && !YEAR.test(s) && !ORDINAL.test(s) && !(hasMonth && DAY.test(s)))
}

/** Most typo variants looked up for one missing string (a 12-digit string has 11 swaps and 108 digit changes). */
export const MAX_NEAR_VARIANTS = 64
/** Longest missing string given typo variants: past an IPv6 address or a commit hash a "typo" means nothing, and a pasted blob must cost nothing. */
export const MAX_NEAR_LENGTH = 48

/**
 * The strings one typo away from `symbol`: two neighbouring letters or digits swapped, or one
 * digit replaced by another — the slips people make typing numbers, ports and versions.
 * Punctuation stays where it is, so `10.3.7.9` never becomes `10.37..9`. Distinct, in a fixed
 * order (swaps first), at most `MAX_NEAR_VARIANTS`; none for a string over `MAX_NEAR_LENGTH`.
 */
export function typoVariants(symbol: string): string[] {
  const chars = Array.from(symbol)
  if (chars.length > MAX_NEAR_LENGTH) return []
  const out = new Set<string>()
  const alnum = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c)
  const edit = (changes: ReadonlyArray<readonly [number, string]>) => {
    const variant = [...chars]
    for (const [at, char] of changes) variant[at] = char
    out.add(variant.join(''))
  }
  for (let i = 0; i + 1 < chars.length; i++) {
    if (chars[i] !== chars[i + 1] && alnum(chars[i]) && alnum(chars[i + 1])) edit([[i, chars[i + 1]!], [i + 1, chars[i]!]])
  }
  for (let i = 0; i < chars.length; i++) {
    if (!/[0-9]/.test(chars[i]!)) continue
    for (let d = 0; d <= 9; d++) if (String(d) !== chars[i]) edit([[i, String(d)]])
  }
  return [...out].slice(0, MAX_NEAR_VARIANTS)
}

/** Marks an (empty) hit list as an abstention, non-enumerably, so JSON and deep equality still see `[]`. */
export function markAbstained(hits: Hit[], reason: Abstention): RecallHits {
  Object.defineProperty(hits, 'abstained', { value: reason, enumerable: false, configurable: true })
  return hits
}

/** The abstention reason of a recall result, if it abstained. */
export function abstentionOf(hits: readonly Hit[]): Abstention | undefined {
  return (hits as RecallHits).abstained
}

/** True when recall abstained rather than found nothing or something. */
export function isAbstention(hits: readonly Hit[]): boolean {
  return abstentionOf(hits) !== undefined
}
