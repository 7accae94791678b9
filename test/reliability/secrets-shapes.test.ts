/**
 * The credential classes of `lib/secrets/shapes.ts`, each with a positive example built to its
 * issuer's published shape (generated bodies, never a real key) and look-alikes that must stay
 * untouched; credentials in tags (scene, source, edge ids); notes that hide a key behind
 * zero-width characters; and hostile 1 MB inputs for every shape. `secrets.test.ts` covers the
 * policy and the commit/render paths.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import fc from 'fast-check'
import { StableMemError } from '../../lib/errors.ts'
import { findSecrets, redactSecrets } from '../../lib/secrets.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { HOSTILE_FRAGMENTS, hostileText } from '../../bench/secrets/hostile.ts'
import { boot, reply, requestTexts, tempStorePath, toolCall } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { CLASSES, gen } from './fixtures/secret-samples.ts'

/** Look-alikes of the classes above that hold no credential: stored untouched. */
const INNOCENT = [
  'hf_hub_download caches files under ~/.cache/huggingface',
  'npm_config_cache is set to /tmp/npm; pypi-mirror is down',
  'the token bucket allows 50 requests; the key decision was postgres 16',
  'password policy: 12 characters, rotated every 90 days',
  'the password is required and the password was incorrect',
  'API_KEY_FILE=/run/secrets/api_key and TOKEN_TTL=3600',
  'sort_key: created_at; primary key: id',
  'ssh deploy@10.3.7.9 -p 2222; mysql -u root -p (it prompts)',
  'http://10.0.0.5:8080/health?notify=ops@example.com',
  'docker login registry.example.com then docker push',
  '密码策略要求 12 位，密钥轮换每 90 天，令牌桶限速每秒 50 次',
  '公开密钥为加密算法的一部分，口令不能复用',
  'meeting at 10:30, room 12345678:north-wing',
  'Caroline: Hey Mel! Key: remember the cake',
  'use --token to pass it on the command line; --password is optional',
  'curl -u is how basic auth is passed',
  'sk-learn version 1.5; task-1234 closed',
  'Markdown: `password=`): `redact` stores it masked; `sshpass -p`, `docker login -p`), `--password …`',
  '标签：密码 / 口令 / 密钥 / 秘钥 / 令牌',
]

/** The secret part appears nowhere in `text`. */
function free(text: string, secret: string): boolean {
  return !text.includes(secret) && !text.includes(secret.replace(/^"|"$/g, ''))
}

t.test('every class: its example is found and masked, the placeholder names a kind, masking is idempotent', async (t) => {
  for (const { name, note, secret } of CLASSES) {
    const { text, kinds } = redactSecrets(note)
    t.ok(free(text, secret), `${name}: masked (${text})`)
    t.ok(kinds.length > 0, `${name}: a kind is reported`)
    t.match(text, /\[redacted [a-z-]+\]/, `${name}: placeholder`)
    t.equal(redactSecrets(text).text, text, `${name}: idempotent`)
  }
  for (const note of INNOCENT) t.same(findSecrets(note), [], `untouched: ${note}`)
})

t.test('docs/reliability.md lists every class', async (t) => {
  const docs = readFileSync(new URL('../../docs/reliability.md', import.meta.url), 'utf8').replaceAll('`', '')
  for (const { name } of CLASSES) t.ok(docs.includes(`| ${name} |`), `docs table row for ${name}`)
})

t.test('credentials in tags are masked (redact) or refused (refuse), never stored in the clear', async (t) => {
  const key = CLASSES[0]!.secret
  const redacting = new BlockStore(tempStorePath('tags'))
  const refusing = new BlockStore(tempStorePath('tags-refuse'), { secrets: 'refuse' })
  t.teardown(() => { redacting.close(); refusing.close() })
  const result = redacting.commit({ text: 'model hub settings', scene: `hub ${key}`, source: `token=${key}`, semanticType: key })
  const block = redacting.get(result.id)!
  t.ok(free(block.scene, key) && free(block.source, key) && free(block.semanticType, key), 'scene, source and type masked')
  t.match(block.scene, /^hub_redacted_huggingface-token$/, 'masked, then normalised as a scene key')
  t.same(result.redacted, ['huggingface-token'], 'the commit result says so')
  t.throws(() => refusing.commit({ text: 'model hub settings', scene: key }), { code: 'contains_secret', message: /^scene looks like it contains a credential/ })
  t.equal(refusing.count(), 0)

  const linked = redacting.link({ sourceKind: 'block', sourceId: result.id, targetKind: 'url', targetId: `https://hooks.slack.com/${CLASSES[9]!.secret}`, type: 'posts-to' })
  t.same(linked, { created: true, redacted: ['slack-webhook'] }, 'an edge id is masked too')
  t.ok(redacting.edgesOf('block', result.id).every((e) => free(e.targetId, CLASSES[9]!.secret)))
  const error = (() => { try { redacting.importEdge({ sourceKind: 'block', sourceId: result.id, targetKind: 'secret', targetId: key, type: 'uses', createdAt: 1 }); return undefined } catch (e) { return e } })()
  t.ok(error instanceof StableMemError && error.code === 'contains_secret' && free(error.message, key), 'import refuses an edge it would have to mask')
})

t.test('real loop: a key the model puts in a scene is masked, and the tool says so', async (t) => {
  const key = CLASSES[1]!.secret
  const path = tempStorePath('tags-tool')
  const h = await boot({ path }, [toolCall('c1', 'stablemem_commit', { text: 'npm publishing is automated', scene: `npm ${key}` }), reply('记住了。')])
  t.teardown(() => h.dispose())
  await h.turn('记住 npm 发布的设置')
  t.same(h.errors, [])
  t.ok(requestTexts(h.adapter.requests[1]!).some((x) => x.includes('Credentials were masked before saving (npm-token)')), 'the model is told')
  const block = [...(await h.ctx.stablemem.recall('npm publishing is automated', { topK: 1 }))][0]!
  const stored = (await h.ctx.stablemem.get(block.id))!
  t.equal(stored.scene, 'npm_redacted_npm-token')
})

t.test('mutation: without the policy on tags, the key is stored in the source', async (t) => {
  const m = mutant({ file: 'store/tags.ts', from: 'applySecretsPolicy(tag, secrets, field)', to: 'applySecretsPolicy(tag, \'allow\', field)' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath('tags-mutant'))
  t.teardown(() => store.close())
  const key = CLASSES[0]!.secret
  t.notOk(free(store.get(store.commit({ text: 'model hub settings', source: key }).id)!.source, key), 'the key reaches the file')
})

t.test('mutation: without the shape check on prose, "the password is required" loses a word', async (t) => {
  const m = mutant({ file: 'secrets/shapes.ts', from: "    accept: (v) => looksTyped(v),\n  },\n  {\n    // FOO_TOKEN", to: "  },\n  {\n    // FOO_TOKEN" })
  t.teardown(() => m.remove())
  const { findSecrets: mutated } = await m.load<typeof import('../../lib/secrets.ts')>('secrets.ts')
  t.not(mutated('the password is required and the password was incorrect').length, 0)
})

t.test('a key split by zero-width characters is still found; the stored note drops them', async (t) => {
  const key = `sk-proj-${gen(40, 40)}`
  const hidden = `billing key ${key.slice(0, 12)}\u200B${key.slice(12, 30)}\u2060${key.slice(30)}`
  const store = new BlockStore(tempStorePath('hidden'))
  t.teardown(() => store.close())
  const stored = store.get(store.commit({ text: hidden }).id)!
  t.equal(stored.text, 'billing key [redacted api-key]')
})

t.test('hostile input: every shape stays linear on 1 MB built to make it backtrack', async (t) => {
  for (const { name, fragment } of HOSTILE_FRAGMENTS) {
    const text = hostileText(fragment, 1 << 20)
    const masked = redactSecrets(text).text
    t.equal(redactSecrets(masked).text, masked, `${name}: done, and idempotent`)
  }
  // Mixtures of the same fragments with real credentials: masking is idempotent and never leaves one behind.
  const part = fc.oneof(
    fc.constantFrom(...HOSTILE_FRAGMENTS.map((h) => h.fragment), ' ', '\n', '，', '@', ':', '='),
    fc.constantFrom(...CLASSES.map((c) => ` ${c.note} `)),
  )
  fc.assert(fc.property(fc.array(part, { maxLength: 40 }), (parts) => {
    const text = parts.join('')
    const once = redactSecrets(text).text
    return redactSecrets(once).text === once && CLASSES.every((c) => !text.includes(` ${c.note} `) || free(once, c.secret))
  }), { numRuns: 300 })
})
