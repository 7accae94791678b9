/**
 * What the embedder reads for a note: the note preceded by the note saved just before it in the
 * same scene. A turn of a conversation often leaves its subject implicit ("Yes, twice a week!"
 * answers the previous turn); embedded alone it carries little of what it is about. With its
 * predecessor the vector carries the exchange. Lexical recall is unaffected (it indexes the note
 * alone and has its own scene context, `lib/recall/scene-context.ts`); the stored text and the
 * vector's language tag are the note's own. Measured in docs/embeddings.md ("Fusion").
 */

/** Longest part of the predecessor that is kept (its end, nearest the note). */
export const PREDECESSOR_CHARS = 512

/** The text embedded for a note, given the text of its scene predecessor (null: none). */
export function embeddingText(text: string, predecessor: string | null): string {
  if (predecessor === null || predecessor.trim() === '') return text
  let tail = predecessor.slice(-PREDECESSOR_CHARS)
  // The cut may land inside a surrogate pair; an unpaired half is not valid text for the embedder.
  if (/^[\uDC00-\uDFFF]/.test(tail)) tail = tail.slice(1)
  return `${tail}\n${text}`
}
