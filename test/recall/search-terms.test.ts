/**
 * The FTS search of a long query runs on at most `MAX_SEARCH_TERMS` distinct terms, its rarest
 * (docs/benchmarks.md, "Recall at 100k: the last two kinds"): FTS5's cost past the postings is
 * per phrase. The note holding the query's rarest terms still ranks first, and coverage, the
 * character backoff and relevance still see every term.
 */
import t from 'tap'
import { matchAny } from '../../lib/recall/fts-query.ts'
import { MAX_SEARCH_TERMS, recallBlocks, searchTerms } from '../../lib/recall/recall.ts'
import { analyzeQuery } from '../../lib/recall/symbols.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

/** `count` distinct made-up words (letters only), the i-th held by i + 1 filler notes. */
function words(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `zq${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}x`)
}

t.test('a long query searches its MAX_SEARCH_TERMS rarest terms', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  const vocabulary = words(MAX_SEARCH_TERMS + 12)
  store.commitMany(vocabulary.flatMap((w, i) => Array.from({ length: i + 1 }, (_, k) => ({ text: `${w} filler note ${k}` }))))
  const target = 'the one note holding the three rarest words together'
  store.commit({ text: `${vocabulary.slice(0, 3).join(' ')} ${target}` })
  const query = [...vocabulary].reverse().join(' ')
  const analysis = analyzeQuery(query)
  const searched = searchTerms(store, analysis)
  t.same(searched.words, [...vocabulary.slice(0, MAX_SEARCH_TERMS)].reverse(), 'the rarest, in query order')
  const withSymbol = searchTerms(store, analyzeQuery(`${query} 8080`))
  t.same(withSymbol.exact, ['8080'], 'exact symbols are always searched')
  t.equal(matchAny(withSymbol).split(' OR ').length, MAX_SEARCH_TERMS + 1)
  t.match(recallBlocks(store, query, { topK: 1 })[0]?.text ?? '', target, 'the note holding the rarest words ranks first')
  t.equal(searchTerms(store, analyzeQuery(vocabulary.slice(0, 3).join(' '))).words.length, 3, 'a short query keeps every term')

  const m = mutant({ file: 'recall/recall.ts', from: '    if (kept.size === MAX_SEARCH_TERMS) break\n', to: '' })
  t.teardown(() => m.remove())
  const uncapped = (await m.load<typeof import('../../lib/recall/recall.ts')>('recall/recall.ts')).searchTerms
  t.equal(uncapped(store, analysis).words.length, vocabulary.length, 'mutation: without the cap every held term is searched')
})
