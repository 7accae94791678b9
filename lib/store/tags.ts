/**
 * Tags — a block's source, scene and semantic type, an edge's kinds, ids and type — are short
 * labels that the CLI prints on lines of their own (`scene:    …` in `get`, `- scene: …` in the
 * Markdown export) and that other plugins may show. A tag with a line break could forge such a
 * line or a whole Markdown section, and a credential pasted as a scene or an edge id would be
 * kept in the clear. So a tag is one line of visible text, at most `MAX_TAG_CHARS`, under the
 * same secrets policy as the note.
 */
import { StableMemError } from '../errors.ts'
import { applySecretsPolicy, type SecretsPolicy } from '../secrets.ts'
import { LINE_BREAK, isInvisibleOnly } from '../text/invisible.ts'
import { hasLoneSurrogate } from '../text/normalize.ts'

/** Longest accepted tag, in UTF-16 code units, before and after normalisation. */
export const MAX_TAG_CHARS = 256

/** Controls (tab included), bidi controls and Unicode tag characters: never part of a label. */
const UNSAFE = /[\p{Cc}\u202a-\u202e\u2066-\u2069\u{e0000}-\u{e007f}]/u

/**
 * The tag as stored: NFC-normalised and trimmed, with credentials masked (`redact`) or refused
 * (`refuse`); `redacted` names the kinds masked. Refuses a non-string, an empty required tag, one
 * over `MAX_TAG_CHARS`, and one holding a line break, a control, a bidi control, a Unicode tag
 * character, NUL or a lone surrogate, or only invisible characters — each with the field's name.
 */
export function checkTag(value: unknown, field: string, required: boolean, secrets: SecretsPolicy): { value: string, redacted: string[] } {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `${field} must be a string`)
  if (value === '' && !required) return { value, redacted: [] } // every commit passes a few unset tags: nothing to check
  if (last !== undefined && last.input === value && last.required === required && last.secrets === secrets) {
    return { value: last.value, redacted: [...last.redacted] }
  }
  const checked = checkNewTag(value, field, required, secrets)
  last = { input: value, required, secrets, value: checked.value, redacted: [...checked.redacted] }
  return checked
}

/**
 * The last tag accepted and what it was stored as. The notes of a batch mostly share their tags
 * (one `source`, one scene), and the check depends on nothing else, so each is checked once; the
 * field only names a refused tag, and a refused tag is never kept here.
 */
let last: { input: string, required: boolean, secrets: SecretsPolicy, value: string, redacted: readonly string[] } | undefined

/** `checkTag` for a tag not checked just before. */
function checkNewTag(value: string, field: string, required: boolean, secrets: SecretsPolicy): { value: string, redacted: string[] } {
  if (required && value.trim() === '') throw new StableMemError('invalid_input', `${field} is empty`)
  if (value.length > MAX_TAG_CHARS) throw new StableMemError('too_large', `${field} is longer than ${MAX_TAG_CHARS} characters`)
  if (hasLoneSurrogate(value) || value.includes('\0')) throw new StableMemError('invalid_input', `${field} contains NUL or an unpaired surrogate`)
  const tag = value.normalize('NFC').trim()
  if (LINE_BREAK.test(tag)) throw new StableMemError('invalid_input', `${field} contains a line break; a tag is one line`)
  if (UNSAFE.test(tag)) throw new StableMemError('invalid_input', `${field} contains a control, bidi or Unicode tag character`)
  if (tag !== '' && isInvisibleOnly(tag)) throw new StableMemError('invalid_input', `${field} has no visible characters`)
  if (tag.length > MAX_TAG_CHARS) throw new StableMemError('too_large', `${field} is longer than ${MAX_TAG_CHARS} characters after normalisation`)
  const { text, redacted } = applySecretsPolicy(tag, secrets, field)
  return { value: text, redacted }
}
