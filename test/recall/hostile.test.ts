import t from 'tap'
import { matchAny, quoteTerm } from '../../lib/recall/fts-query.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { analyzeQuery } from '../../lib/recall/symbols.ts'
import { BlockStore } from '../../lib/store/store.ts'

/** Queries written to break an FTS5 MATCH string. Each must return hits or nothing, never throw. */
const HOSTILE = [
  '"', '""', '"billing', 'billing"', '" OR "', '\'', '*', 'billing*', '* OR *', '^billing', 'NEAR', 'NEAR(billing nginx)',
  'NEAR(billing nginx, 2)', 'billing AND nginx', 'billing OR', 'OR billing', 'NOT billing', 'AND', 'billing NOT nginx',
  '(', ')', '(billing', 'billing)', '((端口))', 'latin:billing', 'cjk:端口', 'blocks_fts:billing', '{latin cjk}:billing',
  '- billing', '+billing', 'billing:', ':', 'a\0b', '端口\0 8499', '\0', '\uD800', '\uDC00端口', 'x\uD83D', '\uD83D\uDE00 端口',
  '"端口" AND "8499"', 'col:8499', 'rowid:1', '8499" OR "1"="1', '\u202Ebilling', '   ', '', '..', '/', '-', '--', '8499:', '"8499"',
  'bm25(blocks_fts)', 'SELECT * FROM blocks', 'billing; DROP TABLE blocks;--',
]

function store(): BlockStore {
  const s = new BlockStore(':memory:')
  s.commitMany([
    { text: 'billing 服务端口 8499，部署在 10.3.7.9' },
    { text: 'nginx 配置文件在 /etc/nginx/conf.d/app.conf' },
    { text: 'NEAR AND OR NOT "quoted" (parens) col:value * stars' },
  ])
  return s
}

t.test('hostile queries return hits or nothing, never an SQLite error', async (t) => {
  const s = store()
  t.teardown(() => s.close())
  for (const query of HOSTILE) {
    let hits: unknown
    t.doesNotThrow(() => { hits = recallBlocks(s, query, { topK: 5 }) }, JSON.stringify(query))
    t.ok(Array.isArray(hits), `${JSON.stringify(query)} returns an array`)
  }
  t.equal(s.count(), 3, 'nothing was written or dropped')
})

t.test('a 1 MB query returns hits without error', async (t) => {
  const s = store()
  t.teardown(() => s.close())
  const huge = `${'端口 billing "x" NEAR( * OR '.repeat(40_000)}8499`
  t.ok(huge.length > 1_000_000)
  const hits = recallBlocks(s, huge, { topK: 3 })
  t.ok(hits.length > 0, 'still finds the billing note')
  const lines = Array.from({ length: 50_000 }, (_, i) => `用户${i % 2}: 端口 ${i}`).join('\n')
  t.doesNotThrow(() => recallBlocks(s, lines, { topK: 3 }), 'a huge transcript too')
})

t.test('hostile text stored in notes is found by its words, and is harmless', async (t) => {
  const s = store()
  t.teardown(() => s.close())
  const hits = recallBlocks(s, 'quoted parens stars', { topK: 1 })
  t.match(hits[0]?.text ?? '', /quoted/)
})

t.test('every MATCH term is a quoted FTS5 string (mutation check: unquoted terms break)', async (t) => {
  const s = store()
  t.teardown(() => s.close())
  const analysis = analyzeQuery('billing" OR NEAR( 端口')
  const match = matchAny(analysis)
  t.doesNotThrow(() => s.ftsCandidates(match, 10))
  t.equal(quoteTerm('a"b\0c'), '"a""bc"')
  // The same terms without quoting, as a broken builder would send them, are a syntax error:
  // the quoting is what keeps user text out of the query language.
  const unquoted = ['latin : billing"', 'latin : NEAR(', 'cjk : 端口'].join(' OR ')
  t.throws(() => s.ftsCandidates(unquoted, 10), 'unquoted user text is an FTS5 error')
})
