import { cjkIndexText, withoutCjk } from '../text/cjk.ts'

/**
 * The two columns of the full-text index (`blocks_fts`) for a note's text: `latin` (the text
 * with its CJK runs blanked) and `cjk` (their bigrams). The index is contentless, so deleting a
 * row must name exactly the text it was indexed with; commit, the migration that rebuilds the
 * index and `forget` all derive it from the stored text here. Changing either column's derivation
 * needs a migration that rebuilds the index.
 */
export function indexColumns(text: string): [latin: string, cjk: string] {
  return [withoutCjk(text), cjkIndexText(text)]
}
