/**
 * Text hygiene shared by the store and recall: one definition of "the same text" and
 * one definition of what is safe to keep.
 */

/** Lone UTF-16 surrogates (an unpaired high or low half). They cannot be encoded as UTF-8. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * The canonical form a block's text is stored and hashed in: NFC-normalised and trimmed.
 * Two commits that differ only in Unicode composition or surrounding white space are the same block.
 */
export function canonicalText(text: string): string {
  return text.normalize('NFC').trim()
}

/**
 * True when the string holds an unpaired surrogate, which SQLite would store as U+FFFD and lose.
 * `isWellFormed` says the same as a test of `LONE_SURROGATE` (test/store/validate-fast.test.ts)
 * without a regular expression's scan: every note and tag on the commit path is checked.
 */
export function hasLoneSurrogate(text: string): boolean {
  return !text.isWellFormed()
}

/**
 * Makes arbitrary caller text safe to analyse as a query: lone surrogates and NUL become spaces.
 * Queries are never stored, so replacing is fine here (blocks are refused instead, see the store).
 */
export function scrubQuery(text: string): string {
  return text.replace(new RegExp(LONE_SURROGATE.source, 'g'), ' ').replace(/\0/g, ' ')
}
