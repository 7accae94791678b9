/**
 * Credentials must not become memory. A note is recalled into every later prompt that looks
 * related, so a pasted API key or password would be re-sent to the model (and its provider) for
 * as long as the store lives. This module finds credentials in text by their well-known shapes
 * and masks them; the store applies it on its commit path (every entry point: service, tool,
 * CLI, other plugins) and the renderer applies it again before anything reaches a prompt.
 */
import { StableMemError } from './errors.ts'

/** What the store does with a note that contains a credential. */
export type SecretsPolicy = 'redact' | 'refuse' | 'allow'

/** One credential shape. `group` is the capture group holding the secret part (0 = whole match). */
interface SecretPattern {
  kind: string
  pattern: RegExp
  group: number
}

/**
 * Credential shapes. Each is linear-time (no nested quantifiers; a private key without its END
 * line is masked to the end of the text, so later BEGIN lines are never rescanned) so that
 * hostile 1 MB texts stay cheap. Where a label identifies the secret (`password=`, `Bearer `, `user:pass@`), only the
 * value is masked and the label stays, so the note still says what was there.
 */
const PATTERNS: readonly SecretPattern[] = [
  { kind: 'private-key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g, group: 0 },
  { kind: 'api-key', pattern: /(?<![A-Za-z0-9_-])sk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_]{20,}/g, group: 0 },
  { kind: 'api-key', pattern: /(?<![A-Za-z0-9])(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}/g, group: 0 },
  { kind: 'aws-key', pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}(?![A-Z0-9])/g, group: 0 },
  { kind: 'github-token', pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/g, group: 0 },
  { kind: 'slack-token', pattern: /(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { kind: 'google-api-key', pattern: /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { kind: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { kind: 'bearer-token', pattern: /\b(?:Bearer|Basic)\s+([A-Za-z0-9._~+/-]{16,}=*)/gi, group: 1 },
  { kind: 'url-password', pattern: /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@]{0,256}:([^\s/@]{1,256})@/gi, group: 1 },
  {
    kind: 'password',
    pattern: /(?:(?<![A-Za-z])(?:password|passwd|pwd|passphrase|client[_-]?secret|api[_-]?key|access[_-]?key|secret[_-]?key|auth[_-]?token|access[_-]?token)|密码|口令|密钥)["']?\s*(?:[:=：]|是|为)\s*("[^"\n]{1,512}"|'[^'\n]{1,512}'|[^\s"',;，；。]{1,512})/gi,
    group: 1,
  },
]

/** One credential found in a text: where its secret part is, and what kind it is. */
export interface SecretMatch {
  kind: string
  start: number
  end: number
}

/**
 * A fragment every pattern above needs, found in one pass. Most notes contain none, and for them
 * the eleven patterns never run: the commit path stays cheap (measured by `bench:perf`).
 */
const TRIGGER = /sk-|[spr]k_|A(?:KIA|SIA|GPA|IDA|ROA)|gh[pousr]_|github_pat_|xox|AIza|eyJ|bearer|basic|:\/\/|PRIVATE KEY|pass|pwd|secret|key|token|密码|口令|密钥/i

/** Every credential in `text`, left to right, overlaps merged into the earlier match. */
export function findSecrets(text: string): SecretMatch[] {
  if (!TRIGGER.test(text)) return []
  const found: SecretMatch[] = []
  for (const { kind, pattern, group } of PATTERNS) {
    pattern.lastIndex = 0
    for (const match of text.matchAll(pattern)) {
      const value = match[group]
      if (value === undefined || value === '' || isPlaceholder(value)) continue
      const start = match.index + (group === 0 ? 0 : match[0].lastIndexOf(value))
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
 * `contains_secret` error naming the kinds (never the secret), `allow` keeps the text.
 */
export function applySecretsPolicy(text: string, policy: SecretsPolicy, field = 'text'): { text: string, redacted: string[] } {
  if (policy === 'allow') return { text, redacted: [] }
  const { text: masked, kinds } = redactSecrets(text)
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
