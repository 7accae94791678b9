import { hash } from 'node:crypto'
import { canonicalText } from '../text/normalize.ts'

/**
 * Hex characters kept from the SHA-256 digest: 24 hex = 96 bits. By the birthday bound the
 * chance of any collision among n blocks is about n² / 2⁹⁷; for a million blocks that is
 * about 6 × 10⁻¹⁸, so ids are unique in practice while staying short enough to read aloud.
 */
export const BLOCK_ID_HEX = 24

/**
 * The content address of a block: `blk_` + the first 96 bits of SHA-256 over the canonical
 * (NFC, trimmed) text. Content addressing makes every commit and retry idempotent.
 */
export function blockId(text: string): string {
  return canonicalBlockId(canonicalText(text))
}

/**
 * `blockId` of a text already canonical (`canonicalText(text) === text`): the commit path has
 * just made it so, and normalising it again cost a tenth of the id per note.
 */
export function canonicalBlockId(canonical: string): string {
  const digest = hash('sha256', canonical, 'hex') // one-shot: no Hash object per note
  return `blk_${digest.slice(0, BLOCK_ID_HEX)}`
}

/** True for strings shaped like ids this package mints (used to validate `supersedes` and `get`). */
export function isBlockId(value: string): boolean {
  return new RegExp(`^blk_[0-9a-f]{${BLOCK_ID_HEX}}$`).test(value)
}
