/** Sentence ends and line breaks, Latin and CJK: where a long text is preferably cut. */
const SOFT_BREAK = /[\n。！？!?；;]|\.\s/g

/**
 * Splits a text into pieces of at most `max` UTF-16 code units, each trimmed and non-empty.
 * A cut falls on the last line break or sentence end in the second half of the window when
 * there is one, else on the last space, else hard (never inside a surrogate pair), so a value
 * such as a port or a path stays whole in all but pathological texts.
 */
export function chunkText(text: string, max: number): string[] {
  if (max < 2) throw new RangeError('chunkText: max must be at least 2')
  const out: string[] = []
  let rest = text.trim()
  while (rest.length > max) {
    let cut = softCut(rest, max)
    if (/[\uD800-\uDBFF]/.test(rest[cut - 1] ?? '')) cut--
    const piece = rest.slice(0, cut).trim()
    if (piece !== '') out.push(piece)
    rest = rest.slice(cut).trim()
  }
  if (rest !== '') out.push(rest)
  return out
}

function softCut(text: string, max: number): number {
  const window = text.slice(0, max)
  let best = -1
  for (const match of window.matchAll(SOFT_BREAK)) {
    const end = match.index + match[0].length
    if (end >= max / 2 && end <= max) best = end
  }
  if (best > 0) return best
  const space = window.lastIndexOf(' ')
  return space >= max / 2 ? space + 1 : max
}
