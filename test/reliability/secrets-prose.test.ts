/**
 * Issue 31: a key written after a prose label, in Chinese or English ("aws 的 secret 是 …",
 * "the token: …", "api key = …", "私钥为：…"), is masked whatever class of key it is, not only
 * where the class's own prefix gives it away. Prose that merely follows such a label ("密钥为加密算法
 * 的参数", "the secret is to rest", a port, a path, a version, an id that is not random) stays.
 * `secrets-shapes.test.ts` covers the prefixed classes; this file crosses every label form with
 * every kind of value, and its mutation checks remove each new guard and watch the property fail.
 */
import t from 'tap'
import { findSecrets, redactSecrets } from '../../lib/secrets.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Deterministic pseudo-random characters from `chars`. */
function gen(n: number, seed: number, chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'): string {
  let out = ''
  let x = seed
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out += chars[(x >>> 12) % chars.length] }
  return out
}
const HEX = '0123456789abcdef'
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

/** Keys of every kind, none with a label of its own: the prose label is all that marks them. */
export const VALUES: ReadonlyArray<{ name: string, value: string }> = [
  { name: 'AWS secret access key (the documented example)', value: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
  { name: 'AWS secret access key (generated)', value: gen(40, 101, B64) },
  { name: 'GitHub classic token', value: `ghp_${gen(36, 102)}` },
  { name: 'random 32', value: gen(32, 103) },
  { name: 'random 64', value: gen(64, 104) },
  { name: 'base64 with padding', value: `${gen(42, 105, B64)}==` },
  { name: 'JWT', value: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${gen(43, 106)}` },
  { name: 'hex 32', value: gen(32, 107, HEX) },
  { name: 'hex 64', value: gen(64, 108, HEX) },
  { name: 'UUID', value: '3f2a9c1e-7b4d-4e8a-9c2f-1d6b8e0a5f47' },
]

/** Label forms, Chinese and English, with 的 / 是 / 为 / ： / : / = / is / was … */
export const LABELS: ReadonlyArray<(value: string) => string> = [
  (v) => `aws 的 secret 是 ${v} 别外传`,
  (v) => `生产库的密钥是 ${v}`,
  (v) => `对象存储的访问密钥为：${v}，每季度轮换`,
  (v) => `API 密钥：${v}`,
  (v) => `私钥为 ${v}`,
  (v) => `部署凭证：${v}`,
  (v) => `token 是 ${v}，明天过期`,
  (v) => `secret为${v}`,
  (v) => `access token 为：${v}`,
  (v) => `Key：${v}`,
  (v) => `my secret is ${v}`,
  (v) => `the key is ${v}.`,
  (v) => `the token: ${v}`,
  (v) => `api key = ${v}`,
  (v) => `the API key for billing is ${v} (rotated monthly)`,
  (v) => `Secret key was changed to "${v}"`,
  (v) => `the secret access key is now ${v}`,
  (v) => `client secret: \`${v}\``,
  (v) => `credentials are ${v}`,
]

/** Prose after the same labels that holds no key: stored untouched. */
export const INNOCENT: readonly string[] = [
  '密钥为加密算法的参数',
  '密钥是什么？token 是一种访问凭证，私钥为非对称加密的一半',
  'the secret is to rest, and the key is to keep it simple',
  'the secret is out; the key was lost; the token is valid for 3600 seconds',
  'the key is 8080 and the token: 42',
  'the token is /var/run/secrets/kubernetes.io/serviceaccount/token',
  'the key is ~/.ssh/id_ed25519 and key: /etc/ssl/private/server2024.key',
  'the key is v16.4.2-beta1 and the token: node-v22.19.0-linux-x64',
  'the key is order-20240101-00042; token: task-1234; key: user_12345678',
  'the secret key is Caroline_Melanie_2023',
  'the key is https://example.com/keys/abc123def456',
  'the key is 10.3.7.9 and the secret is fe80::1ff:fe23:4567:890a',
  'the key is 2024-06-01T10:30:00Z',
  'the secret is that she loves painting',
  'key: value pairs; Key: remember the cake',
  'the key is getUserByIdFromCache',
  'token 是 8499，密钥长度为 2048 位',
]

t.test('a key after a prose label is masked, whatever its class', async (t) => {
  for (const label of LABELS) {
    for (const { name, value } of VALUES) {
      const note = label(value)
      const { text, kinds } = redactSecrets(note)
      t.notOk(text.includes(value), `${name} in "${label('…')}": masked (${text})`)
      t.ok(kinds.length > 0, 'a kind is reported')
      t.equal(redactSecrets(text).text, text, 'idempotent')
    }
  }
})

/** Passwords after prose labels the password shapes missed: an English word with a Chinese verb, 是：, "is now". */
export const PASSWORDS: ReadonlyArray<{ note: string, secret: string }> = [
  { note: 'wifi password 是 Zx9!qwe，别外传', secret: 'Zx9!qwe' },
  { note: 'pwd 为：Tr0ub4dor&3', secret: 'Tr0ub4dor&3' },
  { note: '路由器密码是：Zx9!qwe', secret: 'Zx9!qwe' },
  { note: '堡垒机口令为: open-sesame-42', secret: 'open-sesame-42' },
  { note: 'the password is now S3cret!x', secret: 'S3cret!x' },
]

t.test('a password after an English word and a Chinese verb, after 是：, after "is now"', async (t) => {
  for (const { note, secret } of PASSWORDS) {
    const { text, kinds } = redactSecrets(note)
    t.notOk(text.includes(secret), `masked: ${text}`)
    t.same(kinds, ['password'])
  }
  t.same(findSecrets('password 是必填项，密码为空时报错'), [], 'Chinese prose after the password words stays')
})

t.test('prose after the same labels that holds no key is untouched', async (t) => {
  for (const note of INNOCENT) t.same(findSecrets(note), [], `untouched: ${note}`)
})

t.test('mutation: without the prose-label shapes, the keys are stored unmasked', async (t) => {
  const m = mutant({ file: 'secrets/shapes.ts', from: '  ...PROSE_LABELS,\n', to: '' })
  t.teardown(() => m.remove())
  const { redactSecrets: mutated } = await m.load<typeof import('../../lib/secrets.ts')>('secrets.ts')
  const { BlockStore: Mutated } = await m.load<typeof import('../../lib/store/store.ts')>('store/store.ts')
  const store = new Mutated(tempStorePath('prose-mutant'))
  t.teardown(() => store.close())
  const note = LABELS[0]!(VALUES[0]!.value)
  t.ok(store.get(store.commit({ text: note }).id)!.text.includes(VALUES[0]!.value), `stored in the clear: ${note}`)
  const leaked = LABELS.flatMap((label) => VALUES.map(({ value }) => ({ value, text: mutated(label(value)).text }))).filter((x) => x.text.includes(x.value))
  t.ok(leaked.length >= 100, `${leaked.length} of ${LABELS.length * VALUES.length} keys leak`)
  t.ok(PASSWORDS.slice(0, 1).every(({ note, secret }) => mutated(note).text.includes(secret)), 'password 是 … leaks')
})

t.test('mutation: without the key check, prose after a label is masked', async (t) => {
  const m = mutant({ file: 'secrets/shapes.ts', from: '    accept: (v) => looksKey(v),\n', to: '' })
  t.teardown(() => m.remove())
  const { findSecrets: mutated } = await m.load<typeof import('../../lib/secrets.ts')>('secrets.ts')
  t.not(mutated('the secret is to rest, and the key is to keep it simple').length, 0)
})

t.test('mutation: without the ordinary-value check, key: and token: take paths, versions and ids', async (t) => {
  const m = mutant({ file: 'secrets/shapes.ts', from: ' && !looksOrdinary(v)', to: '' })
  t.teardown(() => m.remove())
  const { findSecrets: mutated } = await m.load<typeof import('../../lib/secrets.ts')>('secrets.ts')
  for (const note of INNOCENT.filter((n) => /server2024|node-v22|user_12345678/.test(n))) t.not(mutated(note).length, 0, `masked: ${note}`)
})
