import type { RecallSource } from './source.ts'

/**
 * One recall pass's view of a store: the note count and each document frequency are read once
 * and then answered from memory for the rest of the pass. Recall asks for the same counts several
 * times in one pass (choosing the search terms, bounding the postings, coverage, and relevance for
 * the injection gate), and a store answers each of them by first asking SQLite whether any
 * connection wrote since (`PRAGMA data_version`): a few microseconds each, a third of relevance's
 * query-side time before this. Within one synchronous pass the counts are the ones it first read,
 * so every stage of a pass ranks against the same snapshot. Everything else goes to the store.
 */
export function recallPass(source: RecallSource): RecallSource {
  let notes: number | undefined
  const counts = new Map<string, number>()
  const bigrams = new Map<string, number>()
  return {
    count: () => notes ??= source.count(),
    matchCount: (match) => {
      let n = counts.get(match)
      if (n === undefined) counts.set(match, n = source.matchCount(match))
      return n
    },
    cjkDocumentFrequencies: (grams) => {
      const missing = grams.filter((g) => !bigrams.has(g))
      if (missing.length > 0) for (const [gram, n] of source.cjkDocumentFrequencies(missing)) bigrams.set(gram, n)
      // A fresh map per call: callers add their own entries to it (`searchTerms`).
      return new Map(grams.map((g) => [g, bigrams.get(g) ?? 0]))
    },
    ftsCandidates: (...args) => source.ftsCandidates(...args),
    ftsRowids: (...args) => source.ftsRowids(...args),
    blocksByRowid: (...args) => source.blocksByRowid(...args),
    recordAccess: (...args) => source.recordAccess(...args),
    scopes: source.scopes,
  }
}
