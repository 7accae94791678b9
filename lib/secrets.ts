/**
 * Credentials must not become memory. A note is recalled into every later prompt that looks
 * related, so a pasted API key or password would be re-sent to the model (and its provider) for
 * as long as the store lives. This module finds credentials in text by their well-known shapes
 * and masks them; the store applies it on its commit path (every entry point: service, tool,
 * CLI, other plugins) and the renderer applies it again before anything reaches a prompt.
 */
import { StableMemError } from './errors.ts'
import { SHAPES, TRIGGERS } from './secrets/shapes.ts'
import { withoutHidden } from './text/invisible.ts'

/** What the store does with a note that contains a credential. */
export type SecretsPolicy = 'redact' | 'refuse' | 'allow'

/** One credential found in a text: where its secret part is, and what kind it is. */
export interface SecretMatch {
  kind: string
  start: number
  end: number
}

/** Every credential in `text`, left to right, overlaps merged into the earlier match. */
export function findSecrets(text: string): SecretMatch[] {
  const [tokens, labels] = TRIGGERS.map((trigger) => trigger.test(text))
  if (!tokens && !labels) return []
  const found: SecretMatch[] = []
  // Several shapes share one fragment (the password labels): it is looked for once.
  const present = new Map<RegExp, boolean>()
  for (const { kind, pattern, group, accept, needs } of SHAPES) {
    if (!(needs.ignoreCase ? labels : tokens)) continue
    let has = present.get(needs)
    if (has === undefined) present.set(needs, has = needs.test(text))
    if (!has) continue
    pattern.lastIndex = 0
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      const whole = match[group]
      if (whole === undefined) continue
      // A sentence's full stop after an unquoted value is the sentence's, not the secret's.
      const value = group === 0 ? whole : whole.replace(/(?<=[^.。])[.。]+$/, '')
      const start = match.index + (group === 0 ? 0 : match[0].lastIndexOf(whole))
      // A value without a letter or digit ("密码 / 口令", "password: …") is punctuation, not a password.
      if (value === '' || isPlaceholder(value) || !/[\p{L}\p{N}]/u.test(value)) continue
      if (accept && !accept(value, match)) {
        // A rejected value may begin the next credential ("x_key = API_SECRET: …"): look again from it.
        pattern.lastIndex = group === 0 ? match.index + 1 : start
        continue
      }
      found.push({ kind, start, end: start + value.length })
    }
  }
  found.sort((a, b) => a.start - b.start || b.end - a.end)
  const merged: SecretMatch[] = []
  for (const m of found) {
    const last = merged[merged.length - 1]
    if (last && m.start < last.end) { last.end = Math.max(last.end, m.end); continue }
    merged.push({ ...m })
  }
  return merged
}

/** The text with every credential replaced by `[redacted <kind>]`, and the kinds replaced. */
export function redactSecrets(text: string): { text: string, kinds: string[] } {
  const matches = findSecrets(text)
  if (matches.length === 0) return { text, kinds: [] }
  let out = ''
  let at = 0
  for (const m of matches) {
    out += text.slice(at, m.start) + `[redacted ${m.kind}]`
    at = m.end
  }
  return { text: out + text.slice(at), kinds: [...new Set(matches.map((m) => m.kind))] }
}

/**
 * Applies the policy to a note about to be stored: `redact` masks, `refuse` throws a
 * `contains_secret` error naming the kinds (never the secret), `allow` keeps the text. The
 * detector reads the text without its invisible characters (`withoutHidden`), so a credential
 * split by a zero-width space is found too; a note masked that way is stored without them.
 */
export function applySecretsPolicy(text: string, policy: SecretsPolicy, field = 'text'): { text: string, redacted: string[] } {
  if (policy === 'allow') return { text, redacted: [] }
  const { text: masked, kinds } = redactSecrets(withoutHidden(text))
  if (kinds.length === 0) return { text, redacted: [] }
  if (policy === 'refuse') {
    throw new StableMemError('contains_secret',
      `${field} looks like it contains a credential (${kinds.join(', ')}); not saved (config secrets: 'refuse'). Remove it and save the rest.`)
  }
  return { text: masked, redacted: kinds }
}

/** Values that only stand in for a secret (already masked, or an obvious placeholder). */
function isPlaceholder(value: string): boolean {
  return /^(?:\[redacted[^\]]*\]?|\*+|x+|<[^>]*>|\$\{[^}]*\}|\.\.\.|…)$/i.test(value)
}
