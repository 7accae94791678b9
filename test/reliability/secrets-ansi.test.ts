/**
 * Issue 31: a key right behind a terminal colour code. Coloured output of `env`, `gh auth
 * status` or a test runner, pasted into a note or captured at compaction, puts `ESC[31m` before
 * the key, and the renderer turns ESC into a space, leaving `[31m` glued to it. The token shapes'
 * left edge ("no letter before") took the `m` for part of the token, so the key was stored and
 * shown unmasked. Checked at commit (stored text and the file's bytes) and at render (what the
 * model reads), with look-alikes that must stay, and a mutation check: the old edge lets the
 * keys through.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { findSecrets, redactSecrets } from '../../lib/secrets.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { visibleForModel } from '../../lib/text/invisible.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Deterministic pseudo-random characters from `chars`. */
function gen(n: number, seed: number, chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'): string {
  let out = ''
  let x = seed
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out += chars[(x >>> 12) % chars.length] }
  return out
}
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'

/** Prefixed keys of several classes (generated). */
const KEYS: ReadonlyArray<{ name: string, key: string }> = [
  { name: 'GitHub classic', key: `ghp_${gen(36, 31)}` },
  { name: 'GitHub fine-grained', key: `github_pat_${gen(22, 32)}_${gen(59, 33)}` },
  { name: 'Anthropic', key: `sk-ant-api03-${gen(93, 34, B64URL)}` },
  { name: 'OpenAI project', key: `sk-proj-${gen(48, 35)}` },
  { name: 'Hugging Face', key: `hf_${gen(34, 36)}` },
  { name: 'npm', key: `npm_${gen(36, 37)}` },
  { name: 'GitLab', key: `glpat-${gen(20, 38, B64URL)}` },
  { name: 'Stripe live', key: `sk_live_${gen(24, 39)}` },
  { name: 'Slack bot', key: `xoxb-${gen(11, 40, '0123456789')}-${gen(24, 41)}` },
  { name: 'JWT', key: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${gen(43, 42, B64URL)}` },
  { name: 'AWS access key id', key: `AKIA${gen(16, 43, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}` },
]

/** Ways a colour code sits before a value in real output. */
const COLOURED: ReadonlyArray<(key: string) => string> = [
  (k) => `GITHUB_TOKEN=\u001b[31m${k}\u001b[0m`,
  (k) => `  - Token: \u001b[1;32m${k}\u001b[m`,
  (k) => `\u001b[33mwarning\u001b[0m: leaked \u001b[7m${k}\u001b[27m in the log`,
  (k) => `\u001b[38;5;208m${k}`,
]

t.test('a key behind a colour code is masked at commit: stored text and file bytes', async (t) => {
  const path = tempStorePath('ansi')
  const store = new BlockStore(path)
  for (const { name, key } of KEYS) {
    for (const [i, form] of COLOURED.entries()) {
      const result = store.commit({ text: form(key) })
      t.ok(result.redacted && result.redacted.length > 0, `${name}, form ${i + 1}: reported as masked`)
      t.notOk(store.get(result.id)!.text.includes(key), `${name}, form ${i + 1}: stored without the key`)
    }
  }
  store.close()
  const bytes = readFileSync(path).toString('latin1')
  t.same(KEYS.filter(({ key }) => bytes.includes(key)).map((k) => k.name), [], 'no key in the file')
})

t.test('a key behind a colour code whose ESC the renderer made a space is masked in what the model reads', async (t) => {
  for (const { name, key } of KEYS) {
    for (const [i, form] of COLOURED.entries()) {
      t.notOk(redactSecrets(visibleForModel(form(key))).text.includes(key), `${name}, form ${i + 1}`)
    }
  }
})

t.test('look-alikes stay: a token glued to a letter, digit or other bracket is part of a longer word', async (t) => {
  const key = KEYS[0]!.key
  for (const text of [`x${key}`, `[2x${key}`, `foo_${key}`, `[31${key}`, `m${key}`, '\u001b[31mERROR\u001b[0m: exit 1', '[31mred[0m text', 'sk-learn version 1.5']) {
    t.same(findSecrets(text), [], JSON.stringify(text))
  }
})

t.test('mutation: the old left edge takes the colour code\'s m for part of the token, and the keys are stored', async (t) => {
  const m = mutant({ file: 'secrets/shapes.ts', from: "const L = '(?<![A-Za-z0-9_-](?<!\\\\[[0-9;]{0,16}m))'", to: "const L = '(?<![A-Za-z0-9_-])'" })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  const store = new Mutated(tempStorePath('ansi-mutant'))
  t.teardown(() => store.close())
  const leaked = KEYS.filter(({ key }) => store.get(store.commit({ text: COLOURED[0]!(key) }).id)!.text.includes(key))
  t.ok(leaked.length >= KEYS.length - 1, `the guard is what masks them (${leaked.length} of ${KEYS.length} stored unmasked)`)
})
