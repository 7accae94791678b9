/**
 * Credentials never become memory and never reach a prompt through recall: the store masks or
 * refuses them on its commit path (config `secrets`), and the renderer masks again.
 */
import t from 'tap'
import { resolveConfig } from '../../lib/config.ts'
import { StableMemError } from '../../lib/errors.ts'
import { renderRecall } from '../../lib/plugin/render.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { findSecrets, redactSecrets } from '../../lib/secrets.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, injected, reply, requestTexts, tempStorePath, toolCall } from '../helpers/harness.ts'

const alnum = (n: number, seed: number) => {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let out = ''
  let x = seed
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out += chars[x % chars.length] }
  return out
}

/** Realistic notes with a credential; `secret` is the part that must never be stored or shown. */
const SAMPLES: Array<{ name: string, note: string, secret: string }> = [
  { name: 'OpenAI project key', secret: `sk-proj-${alnum(48, 1)}`, note: '' },
  { name: 'DeepSeek key', secret: `sk-${alnum(32, 2).toLowerCase()}`, note: '' },
  { name: 'Stripe live key', secret: `sk_live_${alnum(24, 3)}`, note: '' },
  { name: 'AWS access key id', secret: 'AKIAIOSFODNN7EXAMPLE', note: '' },
  { name: 'AWS secret access key', secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', note: '' },
  { name: 'GitHub classic token', secret: `ghp_${alnum(36, 4)}`, note: '' },
  { name: 'GitHub fine-grained token', secret: `github_pat_${alnum(22, 5)}_${alnum(59, 6)}`, note: '' },
  { name: 'Slack bot token', secret: `xoxb-123456789012-1234567890123-${alnum(24, 7)}`, note: '' },
  { name: 'Google API key', secret: `AIza${alnum(35, 8)}`, note: '' },
  { name: 'Bearer token', secret: `${alnum(40, 9)}`, note: '' },
  { name: 'JWT', secret: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${alnum(43, 10)}`, note: '' },
  { name: 'PEM private key', secret: `MIIEowIBAAKCAQEA${alnum(64, 11)}\n${alnum(64, 12)}`, note: '' },
  { name: 'OpenSSH private key', secret: `b3BlbnNzaC1rZXktdjEAAAAA${alnum(40, 13)}`, note: '' },
  { name: 'password in a postgres URL', secret: 'S3cr3t-Pa55', note: '' },
  { name: 'password in a redis URL', secret: 'hunter2hunter2', note: '' },
  { name: 'password=', secret: 'Tr0ub4dor&3', note: '' },
  { name: 'quoted DB_PASSWORD', secret: '"correct horse battery"', note: '' },
  { name: 'Chinese 密码', secret: 'Zx9!qwe', note: '' },
]
const notes: Record<string, (secret: string) => string> = {
  'OpenAI project key': (s) => `billing 服务用的 OpenAI key 是 ${s}，别外传`,
  'DeepSeek key': (s) => `export DEEPSEEK_API_KEY ${s} # staging`,
  'Stripe live key': (s) => `Stripe account for shop: ${s}`,
  'AWS access key id': (s) => `aws backup user access key id ${s} in region eu-west-1`,
  'AWS secret access key': (s) => `[default]\naws_secret_access_key = ${s}`,
  'GitHub classic token': (s) => `CI 用的 GitHub token：${s}`,
  'GitHub fine-grained token': (s) => `deploy bot token ${s} expires 2027-01-01`,
  'Slack bot token': (s) => `alerts bot posts with ${s} to #ops`,
  'Google API key': (s) => `maps key=${s}`,
  'Bearer token': (s) => `curl -H "Authorization: Bearer ${s}" https://api.internal/v1/jobs`,
  JWT: (s) => `session cookie was ${s}`,
  'PEM private key': (s) => `server key:\n-----BEGIN RSA PRIVATE KEY-----\n${s}\n-----END RSA PRIVATE KEY-----\nkeep on 10.3.7.9`,
  'OpenSSH private key': (s) => `-----BEGIN OPENSSH PRIVATE KEY-----\n${s}\n-----END OPENSSH PRIVATE KEY-----`,
  'password in a postgres URL': (s) => `prod DB: postgres://admin:${s}@10.0.0.5:5432/app`,
  'password in a redis URL': (s) => `cache at redis://:${s}@cache.internal:6379/0`,
  'password=': (s) => `wifi ssid=office password=${s}`,
  'quoted DB_PASSWORD': (s) => `.env has DB_PASSWORD: ${s} for the reporting db`,
  'Chinese 密码': (s) => `路由器管理员密码是 ${s}，端口 8443`,
}
for (const sample of SAMPLES) sample.note = notes[sample.name]!(sample.secret)

/** Notes that look technical but hold no credential: they must be stored untouched. */
const INNOCENT = [
  'billing 服务端口 8499，部署在 10.3.7.9',
  'docs are at https://example.com/docs/install and http://10.0.0.5:8080/health',
  'the key decision was to move search to postgres 16',
  'password policy requires 12 characters and rotation every 90 days',
  'token bucket rate limiter allows 50 requests per second',
  'scikit-learn sk-learn version 1.5; task-1234 closed',
  'ssh deploy@10.3.7.9 -p 2222, key file ~/.ssh/id_ed25519',
]

function caught(fn: () => unknown): unknown {
  try { fn() } catch (error) { return error }
  return undefined
}

/** The property under test: the secret part appears nowhere in `text`. */
function free(text: string, secret: string): boolean {
  return !text.includes(secret) && !secret.split('\n').some((line) => line.length >= 8 && text.includes(line))
}

t.test('every realistic credential is found and masked; innocent notes are untouched', async (t) => {
  for (const { name, note, secret } of SAMPLES) {
    t.ok(findSecrets(note).length > 0, `${name}: found`)
    const { text, kinds } = redactSecrets(note)
    t.ok(free(text, secret), `${name}: masked`)
    t.match(text, /\[redacted [a-z-]+\]/, `${name}: placeholder names the kind`)
    t.ok(kinds.length > 0)
    t.equal(redactSecrets(text).text, text, `${name}: masking is idempotent`)
  }
  for (const note of INNOCENT) t.same(findSecrets(note), [], `untouched: ${note}`)
})

t.test('commit path: redact (default), refuse, allow — and the guard is what keeps secrets out', async (t) => {
  const redacting = new BlockStore(tempStorePath('redact'))
  const refusing = new BlockStore(tempStorePath('refuse'), { secrets: 'refuse' })
  const allowing = new BlockStore(tempStorePath('allow'), { secrets: 'allow' })
  t.teardown(() => { redacting.close(); refusing.close(); allowing.close() })
  t.equal(resolveConfig({}).secrets, 'redact', 'config default')
  t.throws(() => resolveConfig({ secrets: 'sometimes' as never }), /secrets expected "redact" \| "refuse" \| "allow"/, 'a bad policy fails at load, naming the field')
  for (const { name, note, secret } of SAMPLES) {
    const result = redacting.commit({ text: note })
    const stored = redacting.get(result.id)!
    t.ok(free(stored.text, secret), `${name}: stored masked`)
    t.ok(result.redacted && result.redacted.length > 0, `${name}: commit result says what was masked`)
    t.ok(redacting.get(result.id), 'the id addresses the masked text')

    const before = refusing.count()
    const error = caught(() => refusing.commit({ text: note }))
    t.ok(error instanceof StableMemError && error.code === 'contains_secret' && free(error.message, secret), `${name}: refused without echoing it`)
    t.equal(refusing.count(), before, 'nothing stored on refusal')

    // Mutation check: with the guard off the same assertion goes red.
    const raw = allowing.get(allowing.commit({ text: note }).id)!
    t.notOk(free(raw.text, secret), `${name}: without the guard the secret would be stored`)
  }
  for (const note of INNOCENT) {
    const result = redacting.commit({ text: note })
    t.equal(redacting.get(result.id)!.text, note, 'innocent note stored byte-identical')
    t.equal(result.redacted, undefined)
  }
  t.throws(() => refusing.commitMany([{ text: 'fine note' }, { text: SAMPLES[0]!.note }]), { code: 'contains_secret', message: /inputs\[1\]\.text/ },
    'a batch with one credential is refused whole, naming the item')
})

t.test('render-time check: a secret stored before the guard (or allowed) never reaches the rendered notes', async (t) => {
  const store = new BlockStore(tempStorePath(), { secrets: 'allow' })
  t.teardown(() => store.close())
  for (const { note } of SAMPLES) store.commit({ text: note })
  for (const { name, note, secret } of SAMPLES) {
    const hits = recallBlocks(store, note, { topK: 3 })
    t.ok(hits.some((h) => h.text.includes(secret.split('\n')[0]!)), `${name}: recalled`)
    t.ok(free(renderRecall(hits, 50_000).text, secret), `${name}: masked in the rendered notes`)
    t.notOk(free(renderRecall(hits, 50_000, (text) => text).text, secret), `${name}: mutation — without the mask it would be shown`)
  }
})

t.test('real loop: nothing secret reaches the prompt through recall, whatever entered the store', async (t) => {
  const path = tempStorePath()
  const key = SAMPLES[0]!.secret
  const pem = SAMPLES[11]!.secret
  // Session 1 saves through the tool (redacted on commit); a note written with `allow` by another
  // program is added directly; session 2 asks about both.
  const h = await boot({ path }, [
    toolCall('c1', 'stablemem_commit', { text: SAMPLES[0]!.note }),
    reply('记住了。'),
    reply('好的。'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('记住 billing 的 OpenAI key')
  const other = new BlockStore(path, { secrets: 'allow' })
  other.commit({ text: SAMPLES[11]!.note })
  other.close()
  await h.turn('billing 服务的 OpenAI key 和 server key 是什么？10.3.7.9')
  t.same(h.errors, [])
  t.ok(requestTexts(h.adapter.requests[1]!).some((x) => x.endsWith('Credentials were masked before saving (api-key); they are not in memory.')),
    'the tool tells the model the key was not saved')
  const ours = injected(h.adapter.requests[2]!)
  t.equal(ours.length, 1)
  const text = ours[0]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  t.match(text, /billing 服务用的 OpenAI key 是 \[redacted api-key\]/)
  t.match(text, /\[redacted private-key\]/)
  t.ok(free(text, key) && free(text, pem), 'no credential in the injected notes')
})
