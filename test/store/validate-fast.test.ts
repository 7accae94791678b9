/**
 * The commit path's fast paths (issue 30) answer what the full checks answer: the credential
 * detector's gates (a shape runs only where its fragment is, hidden characters are removed only
 * where one can be) never skip a credential of any class embedded anywhere in random text, hidden
 * characters included; a note with a letter of the CJK ranges is visible; `isWellFormed` finds
 * every lone surrogate the expression finds; the id of a text already canonical is its content
 * address; the last tag's check, kept, is the check. Each is mutation-checked against a copy of
 * lib/ with the gate broken.
 */
import fc from 'fast-check'
import t from 'tap'
import type { SecretsPolicy } from '../../lib/secrets.ts'
import { blockId } from '../../lib/store/block-id.ts'
import { checkTag } from '../../lib/store/tags.ts'
import { validateInput } from '../../lib/store/validate.ts'
import { hasLoneSurrogate, LONE_SURROGATE } from '../../lib/text/normalize.ts'
import { mutant, type Edit } from '../helpers/mutant.ts'
import { CLASSES } from '../reliability/fixtures/secret-samples.ts'

type Secrets = typeof import('../../lib/secrets.ts')
type Invisible = typeof import('../../lib/text/invisible.ts')

/** The detector with every gate removed: each shape runs on every text, and hidden characters are always looked for. */
const UNGATED: Edit[] = [
  { file: 'secrets.ts', from: '  if (!tokens && !labels) return []\n', to: '' },
  { file: 'secrets.ts', from: '    if (!(needs.ignoreCase ? labels : tokens)) continue\n', to: '' },
  { file: 'secrets.ts', from: '    if (!has) continue\n', to: '' },
  { file: 'text/invisible.ts', from: '  if (!MAY_HIDE.test(text)) return text\n', to: '' },
  { file: 'text/invisible.ts', from: '  if (SURELY_VISIBLE.test(text)) return false // nearly every note: no need to rewrite the whole text\n', to: '' },
]

/** Text around and inside the credentials: words, CJK, signs, labels, hidden characters. */
const FILLER = [' ', '\n', '，', '。', ':', '=', '"', '@', '/', '-', '_', '.', 'the', 'key', 'token', 'password', '密码', '服务', 'deploy', 'v1.2',
  '8499', 'sk-', 'eyJ', '\u200b', '\u2060', '\ufeff', '\ufe0f', '\u{e0041}', '\u00ad', '👩\u200d💻', 'é', 'x\u0301']

/** A note: filler and credential notes of every class, some split by a hidden character. */
const notes = fc.array(fc.oneof(
  fc.constantFrom(...FILLER),
  fc.constantFrom(...CLASSES.map((c) => c.note)),
  fc.tuple(fc.constantFrom(...CLASSES.map((c) => c.secret)), fc.nat(), fc.constantFrom('\u200b', '\u2060', '\u00ad'))
    .map(([secret, at, hidden]) => secret.slice(0, at % secret.length) + hidden + secret.slice(at % secret.length)),
), { maxLength: 12 }).map((parts) => parts.join(''))

/** Runs the property: the gated detector masks exactly what the ungated one masks, under every policy. */
function sameAsUngated(gated: Secrets, ungated: Secrets, seed: number) {
  return fc.check(fc.property(notes, (text) => {
    for (const policy of ['redact', 'refuse'] as SecretsPolicy[]) {
      const answer = (secrets: Secrets) => { try { return secrets.applySecretsPolicy(text, policy) } catch (error) { return String(error) } }
      if (JSON.stringify(answer(gated)) !== JSON.stringify(answer(ungated))) return false
    }
    return JSON.stringify(gated.findSecrets(text)) === JSON.stringify(ungated.findSecrets(text))
  }), { seed, numRuns: 3_000 })
}

t.test('the detector with its gates masks what every shape run on every text masks', async (t) => {
  const ungated = mutant(...UNGATED)
  t.teardown(() => ungated.remove())
  const reference = await ungated.load<Secrets>('secrets.ts')
  const gated = await import('../../lib/secrets.ts')
  const result = sameAsUngated(gated, reference, 20261207)
  t.notOk(result.failed, result.failed ? `differs on ${JSON.stringify(result.counterexample)}` : 'same on every note')
  for (const { name, note } of CLASSES) t.ok(gated.applySecretsPolicy(`服务 ${note} \u200b。`, 'redact').redacted.length > 0, name)
})

t.test('mutation check: a gate that runs the token shapes on labels only is found', async (t) => {
  const ungated = mutant(...UNGATED)
  const broken = mutant({ file: 'secrets.ts', from: 'needs.ignoreCase ? labels : tokens', to: 'needs.ignoreCase ? tokens : labels' })
  t.teardown(() => { ungated.remove(); broken.remove() })
  t.ok(sameAsUngated(await broken.load<Secrets>('secrets.ts'), await ungated.load<Secrets>('secrets.ts'), 20261207).failed)
})

/** Every code point of the planes that hold characters, alone and in a few contexts. */
function* everyPoint(): Generator<string> {
  for (let c = 0; c <= 0x2ffff; c++) if (c < 0xd800 || c > 0xdfff) yield String.fromCodePoint(c)
  for (let c = 0xe0000; c <= 0xe01ff; c++) yield String.fromCodePoint(c)
}

function hiddenDiffers(invisible: Invisible, reference: Invisible): string[] {
  const out: string[] = []
  for (const ch of everyPoint()) {
    for (const text of [ch, `a${ch}b`, `👍${ch}\ufe0f${ch}`, `\ufe0f${ch}`, `\u200b${ch}\u3000`]) {
      if (invisible.withoutHidden(text) !== reference.withoutHidden(text)) out.push(JSON.stringify(text))
      if (invisible.isInvisibleOnly(text) !== reference.isInvisibleOnly(text)) out.push(`${JSON.stringify(text)} (visible)`)
    }
    if (out.length >= 5) break
  }
  return out
}

t.test('hidden characters: the text is left as it is only where no character could be removed; a note is visible when its letters are', async (t) => {
  const ungated = mutant(...UNGATED)
  t.teardown(() => ungated.remove())
  t.same(hiddenDiffers(await import('../../lib/text/invisible.ts'), await ungated.load<Invisible>('text/invisible.ts')), [])
})

t.test('mutation check: a gate that misses the format characters is found', async (t) => {
  const ungated = mutant(...UNGATED)
  const broken = mutant({ file: 'text/invisible.ts', from: 'const MAY_HIDE = /[\\p{Cf}', to: 'const MAY_HIDE = /[' })
  t.teardown(() => { ungated.remove(); broken.remove() })
  t.ok(hiddenDiffers(await broken.load<Invisible>('text/invisible.ts'), await ungated.load<Invisible>('text/invisible.ts')).length > 0)
})

t.test('mutation check: a blank character taken for a surely visible one is found', async (t) => {
  const ungated = mutant(...UNGATED)
  const broken = mutant({ file: 'text/invisible.ts', from: 'const SURELY_VISIBLE = /[0-9A-Za-z', to: 'const SURELY_VISIBLE = /[0-9A-Za-z\\u2800' })
  t.teardown(() => { ungated.remove(); broken.remove() })
  t.ok(hiddenDiffers(await broken.load<Invisible>('text/invisible.ts'), await ungated.load<Invisible>('text/invisible.ts')).length > 0)
})

function* surrogateTexts(): Generator<string> {
  for (let c = 0; c < 0x10000; c++) {
    const ch = String.fromCharCode(c)
    yield ch
    yield `a${ch}`
    yield `${ch}\udc00`
    yield `\ud800${ch}b`
  }
}

function surrogateDiffers(has: (text: string) => boolean): string[] {
  const out: string[] = []
  for (const text of surrogateTexts()) if (has(text) !== LONE_SURROGATE.test(text) && out.push(JSON.stringify(text)) >= 5) break
  return out
}

t.test('a lone surrogate is found wherever the expression finds one', async (t) => {
  t.same(surrogateDiffers(hasLoneSurrogate), [])
})

t.test('mutation check: a check that skips the first unit is found', async (t) => {
  const broken = mutant({ file: 'text/normalize.ts', from: 'return !text.isWellFormed()', to: 'return !text.slice(1).isWellFormed()' })
  t.teardown(() => broken.remove())
  const { hasLoneSurrogate: mutated } = await broken.load<{ hasLoneSurrogate: (text: string) => boolean }>('text/normalize.ts')
  t.ok(surrogateDiffers(mutated).length > 0)
})

type Validate = typeof validateInput

/** Inputs whose id is not the content address of the text stored (masked texts included). */
function idDiffers(validate: Validate): string[] {
  const out: string[] = []
  const texts = [
    'api_key=Ab3dEf9hIj2kLmN0 \u200b', // masked, the hidden character gone: the stored text ends in a space
    'e\u200b\u0301 password: hunter2!x',
    ...CLASSES.map((c) => `${c.note}\u200b`),
  ]
  for (let c = 0; c < 0x10000; c++) texts.push(`a${String.fromCharCode(c)}\u0301 x`, `${String.fromCharCode(c)} token=Zq8mW2pL5vN7 \u2060`)
  for (const text of texts) {
    let row
    try { row = validate({ text }, '', 'redact', 20_000) } catch { continue }
    if (row.id !== blockId(row.text) && out.push(JSON.stringify(text)) >= 5) break
  }
  return out
}

t.test('the id of every note is the content address of the text stored, masked or not', async (t) => {
  t.same(idDiffers(validateInput), [])
  t.match(validateInput({ text: 'api_key=Ab3dEf9hIj2kLmN0 \u200b' }, '', 'redact', 20_000).text, /\[redacted [a-z-]+\] $/, 'the masked text is not canonical')
})

t.test('mutation check: an id taken over a masked text as if it were canonical is found', async (t) => {
  const broken = mutant({ file: 'store/validate.ts', from: 'text === canonical ? canonicalBlockId(text) : blockId(text)', to: 'canonicalBlockId(text)' })
  t.teardown(() => broken.remove())
  t.ok(idDiffers((await broken.load<{ validateInput: Validate }>('store/validate.ts')).validateInput).length > 0)
})

/** What `checkTag` answers, or the message it throws. */
function answer(check: typeof checkTag, value: unknown, field: string, required: boolean, secrets: SecretsPolicy): unknown {
  try { return check(value, field, required, secrets) } catch (error) { return (error as Error).message }
}

/** A sequence of tag checks where a kept answer could be taken for another's: the same value under other fields, flags and policies. */
function tagAnswers(check: typeof checkTag): unknown[] {
  const key = `ghp_${'a1B2'.repeat(9)}`
  const calls: Array<[unknown, string, boolean, SecretsPolicy]> = [
    ['bench', 'inputs[0].source', false, 'redact'], ['bench', 'inputs[1].source', false, 'redact'],
    ['a\nb', 'inputs[0].scene', false, 'redact'], ['a\nb', 'inputs[1].scene', false, 'redact'],
    [key, 'inputs[0].source', false, 'redact'], [key, 'inputs[1].source', false, 'redact'],
    [key, 'inputs[2].source', false, 'refuse'], [key, 'inputs[3].source', false, 'allow'], [key, 'inputs[4].source', false, 'redact'],
    [' ', 'supersededBy', false, 'allow'], [' ', 'supersededBy', true, 'allow'], ['', 'scene', true, 'allow'],
  ]
  const out = calls.map(([value, field, required, secrets]) => answer(check, value, field, required, secrets))
  const first = check(key, 'source', false, 'redact')
  first.redacted.push('changed by the caller')
  out.push(check(key, 'source', false, 'redact'))
  return out
}

t.test('a tag checked just before answers as if checked again: its field in errors, its policy, its own array', async (t) => {
  const answers = tagAnswers(checkTag)
  t.same(answers[1], { value: 'bench', redacted: [] })
  t.match(answers[3], /^inputs\[1\]\.scene contains a line break/)
  t.same(answers[5], { value: '[redacted github-token]', redacted: ['github-token'] })
  t.match(answers[6], /^inputs\[2\]\.source looks like it contains a credential/)
  t.same(answers[7], { value: `ghp_${'a1B2'.repeat(9)}`, redacted: [] })
  t.same(answers[8], answers[5])
  t.same(answers[10], 'supersededBy is empty')
  t.same(answers[12], { value: '[redacted github-token]', redacted: ['github-token'] })
})

t.test('mutation check: a kept answer reused under another policy is found', async (t) => {
  const broken = mutant({ file: 'store/tags.ts', from: ' && last.secrets === secrets', to: '' })
  t.teardown(() => broken.remove())
  const mutated = (await broken.load<{ checkTag: typeof checkTag }>('store/tags.ts')).checkTag
  t.not(JSON.stringify(tagAnswers(mutated)), JSON.stringify(tagAnswers(checkTag)))
})
