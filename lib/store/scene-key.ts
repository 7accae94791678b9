import { StableMemError } from '../errors.ts'
import { MAX_TAG_CHARS } from './tags.ts'

/**
 * Scene keys: hierarchical, `/`-separated, broad → narrow (`chan:qq`, `chan:qq/group:group_1`,
 * `auto:group:group_1_chan:qq`). Every path that creates, writes, reads or compares a key goes
 * through `normalizeSceneKey`, so two spellings of one situation (`chan:QQ`, `chan:qq`) are one
 * key and the table never holds twins (HologramAgent's R1).
 */

/** Longest key, in UTF-8 bytes (HologramAgent's `maxSceneKeyLen`). */
export const MAX_SCENE_KEY_BYTES = 96

/** Characters a key segment keeps: a-z, 0-9, CJK unified ideographs, `:`, `-` and `.`. */
const KEPT = /[a-z0-9\u4e00-\u9fff:.-]/
/** A key already in normal form: non-empty `/` segments of kept characters, single `_` only between them. */
const NORMAL = /^[a-z0-9\u4e00-\u9fff:.-]+(?:_[a-z0-9\u4e00-\u9fff:.-]+)*(?:\/[a-z0-9\u4e00-\u9fff:.-]+(?:_[a-z0-9\u4e00-\u9fff:.-]+)*)*$/

/**
 * The normal form of a scene key: NFC, lower-case; per `/` segment every character outside
 * a-z 0-9 CJK `:` `-` `.` (whitespace, `_`, punctuation, other scripts) becomes one `_`, runs
 * collapse and `_` is trimmed at both ends; empty segments are dropped. The result is cut to
 * `MAX_SCENE_KEY_BYTES` on a character boundary (HologramAgent cut bytes and could split a CJK
 * character into invalid UTF-8). '' when nothing is left.
 */
export function normalizeSceneKey(raw: string): string {
  // Already normal (every feature and key a turn builds): NFC and lower case leave these characters as they are, and nothing is replaced, collapsed or cut.
  if (NORMAL.test(raw) && Buffer.byteLength(raw, 'utf8') <= MAX_SCENE_KEY_BYTES) return raw
  const segments: string[] = []
  for (const part of raw.normalize('NFC').toLowerCase().split('/')) {
    let out = ''
    for (const ch of part) out += KEPT.test(ch) ? ch : '_'
    out = out.replace(/_+/g, '_').replace(/^_+|_+$/g, '')
    if (out !== '') segments.push(out)
  }
  return cutToBytes(segments.join('/'), MAX_SCENE_KEY_BYTES).replace(/[/_]+$/, '')
}

/** `text` cut to at most `max` UTF-8 bytes without splitting a character. */
function cutToBytes(text: string, max: number): string {
  let bytes = 0
  let end = 0
  for (const ch of text) {
    const size = Buffer.byteLength(ch, 'utf8')
    if (bytes + size > max) break
    bytes += size
    end += ch.length
  }
  return text.slice(0, end)
}

/**
 * A caller's scene key, checked and normalised. Refuses a non-string, text over `MAX_TAG_CHARS`
 * (a 10 kB key is a mistake, not a scene), a line break or control character, and a key that
 * normalises to nothing — each naming `field`. '' passes as "no scene" unless `required`.
 */
export function checkSceneKey(value: unknown, field: string, required: boolean): string {
  if (typeof value !== 'string') throw new StableMemError('invalid_input', `${field} must be a string`)
  if (value.trim() === '') {
    if (required) throw new StableMemError('invalid_input', `${field} is empty`)
    return ''
  }
  if (value.length > MAX_TAG_CHARS) throw new StableMemError('too_large', `${field} is longer than ${MAX_TAG_CHARS} characters`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value)) throw new StableMemError('invalid_input', `${field} contains a line break or control character; a scene key is one line`)
  const key = normalizeSceneKey(value)
  if (key === '') throw new StableMemError('invalid_input', `${field} ${JSON.stringify(value.slice(0, 40))} has no letter, digit or CJK character a scene key can keep`)
  return key
}

/** The key and every broader key above it: `a/b/c` → `a/b/c`, `a/b`, `a`. */
export function sceneLineage(key: string): string[] {
  const parts = key.split('/')
  return parts.map((_, i) => parts.slice(0, parts.length - i).join('/'))
}
