import t from 'tap'
import { computeGolden, readGolden } from './golden-recall.ts'

t.test('recall reproduces the golden fixture exactly (ids, order, scores, exact flags, why)', async (t) => {
  const expected = readGolden()
  const actual = computeGolden()
  t.equal(actual.length, expected.length, 'same number of cases')
  for (let i = 0; i < expected.length; i++) {
    t.strictSame(actual[i], expected[i], `case ${i}: ${JSON.stringify(expected[i]!.query)} top ${expected[i]!.topK}`)
  }
})

t.test('the golden comparison fails on any drift (mutation check)', async (t) => {
  const expected = readGolden()
  const drifted = structuredClone(expected)
  const victim = drifted.find((c) => c.hits.length > 0)!
  victim.hits[0]!.score += Number.EPSILON * 4
  t.notSame(drifted, expected, 'a one-ulp score change is a difference')
  const swapped = structuredClone(expected)
  const multi = swapped.find((c) => c.hits.length > 1)!
  multi.hits.reverse()
  t.notSame(swapped, expected, 'an order change is a difference')
})
