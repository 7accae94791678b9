/**
 * Hostile input, property-based: arbitrary Unicode (NUL, lone surrogates, RTL marks, emoji,
 * FTS syntax, 1 MB texts) into commit, recall, the service and the tool. Nothing throws past the
 * API boundary except a deliberate `StableMemError`; no SQL or FTS error ever surfaces; what is
 * stored comes back byte-identical after the documented NFC + trim; the size limit is enforced
 * with a clear error.
 */
import t from 'tap'
import fc from 'fast-check'
import { DatabaseSync } from 'node:sqlite'
import { CallId } from '@deepseek-ai/dsh-llm'
import { StableMemError } from '../../lib/errors.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { redactSecrets } from '../../lib/secrets.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { canonicalText } from '../../lib/text/normalize.ts'
import { isInvisibleOnly } from '../../lib/text/invisible.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'

const LONE = fc.constantFrom('\uD800', '\uDBFF', '\uDC00', '\uDFFF', 'a\uD83D', '\uDE00b')
const SPECIAL = fc.constantFrom('\u0000', '\u200F', '\u202E', '\u200B', '\uFEFF', '\u0301', '😀', '👩‍👩‍👧', '🇨🇳', '"', '""', "'", '*', ':', '(', ')',
  ' AND ', ' OR ', ' NOT ', ' NEAR(', '^', '-', '{', '}', 'latin:', 'cjk :', '\\', '%', '_', ';--', 'DROP TABLE blocks;', '端口8080', '１０.３')
/** Text as a user, a model or an attacker might send it: every Unicode plane, controls, FTS and SQL syntax. */
const hostileText = fc.array(fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme' }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary' }) },
  { weight: 3, arbitrary: SPECIAL },
  { weight: 1, arbitrary: LONE },
), { maxLength: 16 }).map((parts) => parts.join(''))

const hasLone = (s: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s)

/** The boundary contract: either a value, or a StableMemError with a code and a message. */
function outcome(fn: () => unknown): { ok: true, value: unknown } | { ok: false, error: StableMemError } {
  try {
    return { ok: true, value: fn() }
  } catch (error) {
    if (error instanceof StableMemError && error.message.length > 0) return { ok: false, error }
    throw error
  }
}

t.test('store and recall: any text is stored byte-identical or refused with a StableMemError', async (t) => {
  const store = new BlockStore(tempStorePath(), { secrets: 'allow' })
  t.teardown(() => store.close())
  fc.assert(fc.property(hostileText, (text) => {
    const result = outcome(() => store.commit({ text, source: 'fuzz' }))
    const canonical = canonicalText(text)
    if (!result.ok) {
      const code = result.error.code
      return (code === 'invalid_input' && (hasLone(text) || canonical === '' || isInvisibleOnly(canonical))) || code === 'too_large'
    }
    const { id } = result.value as { id: string }
    const block = store.get(id)
    if (!block || block.text !== canonical) return false
    const hits = recallBlocks(store, text, { topK: 5 })
    return Array.isArray(hits) && hits.every((h) => typeof h.text === 'string')
  }), { numRuns: 600 })
  fc.assert(fc.property(hostileText, fc.integer({ min: -5, max: 500 }), (query, topK) => {
    const hits = recallBlocks(store, query, { topK, recordAccess: true })
    return Array.isArray(hits)
  }), { numRuns: 600 })
  fc.assert(fc.property(hostileText, hostileText, (source, scene) => {
    const result = outcome(() => store.commit({ text: 'tagged note', source, scene }))
    return result.ok || result.error.code === 'invalid_input' || result.error.code === 'too_large'
  }), { numRuns: 300 })
  t.pass('1500 hostile commits, tags and recalls kept the contract')
  t.same(store.integrityCheck(), ['ok'])
})

t.test('1 MB texts: the size limit is enforced with a clear error; a 1 MB query is answered', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  store.commit({ text: 'billing 服务端口 8499' })
  const big = '端口 8499 billing '.repeat(70_000).slice(0, 1_048_576)
  t.throws(() => store.commit({ text: big }), { name: 'StableMemError', code: 'too_large', message: /has 10485\d\d characters; the limit is 32768 \(config maxBlockChars\)/ })
  t.throws(() => store.commitMany([{ text: 'fine' }, { text: big }]), { code: 'too_large', message: /^inputs\[1\]\.text/ })
  t.equal(store.count(), 1, 'a refused batch stores nothing')
  const atLimit = 'x'.repeat(store.maxBlockChars)
  t.equal(store.get(store.commit({ text: atLimit }).id)!.text, atLimit, 'exactly the limit is accepted')
  const hits = recallBlocks(store, big, { topK: 5 })
  t.ok(hits.some((h) => h.text.includes('8499')), 'a 1 MB query still recalls')
  const emojiQuery = '😀'.repeat(300_000) + '\uD800'
  t.same(recallBlocks(store, emojiQuery), [], 'emoji-only query with a lone surrogate: no hits, no error')
})

t.test('service and tool in a mounted plugin keep the contract', async (t) => {
  const h = await boot({ path: tempStorePath(), maxBlockChars: 4096 }, [])
  t.teardown(() => h.dispose())
  const { ctx } = h
  let call = 0
  await fc.assert(fc.asyncProperty(hostileText, async (text) => {
    let refused: StableMemError | undefined
    try {
      const { id } = await ctx.stablemem.commit({ text })
      const block = await ctx.stablemem.get(id)
      if (block?.text !== redactSecrets(canonicalText(text)).text) return false // the default policy masks credentials
    } catch (error) {
      if (!(error instanceof StableMemError)) throw error
      refused = error
    }
    await ctx.stablemem.recall(text, { topK: 3 })
    const result = await ctx.tools.execute({ callId: CallId(`c${++call}`), name: 'stablemem_commit', arguments: { text }, signal: new AbortController().signal })
    // The tool reports a refusal as a tool error the model can read, never as a crash of the turn.
    return refused ? result.isError : !result.isError
  }), { numRuns: 200 })
  const big = await ctx.tools.execute({ callId: CallId('big'), name: 'stablemem_commit', arguments: { text: 'y'.repeat(1_048_576) }, signal: new AbortController().signal })
  t.ok(big.isError, '1 MB through the tool is a tool error')
  t.match(JSON.stringify(big.content), /limit is 4096/)
  const stats = await ctx.stablemem.stats()
  t.equal(stats.available, true, 'memory is still available')
  t.equal(stats.recallFailures, 0)
})

t.test('credential scanning of adversarial 1 MB texts finishes and masks', async (t) => {
  const begins = '-----BEGIN RSA PRIVATE KEY-----\nabc\n'.repeat(30_000)
  t.match(redactSecrets(begins).text, /^\[redacted private-key\]$/, 'an unterminated key is masked to the end')
  const labels = 'password= password: 密码是 token '.repeat(30_000)
  t.ok(redactSecrets(labels).text.length > 0)
  const urls = 'https://user:'.repeat(80_000)
  t.equal(redactSecrets(urls).text, urls, 'no @, no URL password')
})

t.test('mutation checks: without the guards the same properties fail', async (t) => {
  // Without the lone-surrogate refusal, SQLite stores U+FFFD: the text does not come back.
  const db = new DatabaseSync(':memory:')
  db.exec('CREATE TABLE b (text TEXT)')
  db.prepare('INSERT INTO b VALUES (?)').run('port\uD8008080')
  t.not((db.prepare('SELECT text FROM b').get() as { text: string }).text, 'port\uD8008080', 'an unguarded write loses the text')
  db.close()
  // Without quoting, user text in MATCH is an FTS syntax error that would cross the boundary.
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  store.commit({ text: 'billing AND (port' })
  t.throws(() => store.ftsCandidates('latin : billing AND (port', 10), 'unquoted MATCH fails')
  t.doesNotThrow(() => recallBlocks(store, 'billing AND (port'), 'quoted MATCH (the guard) answers')
})
