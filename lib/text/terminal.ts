/**
 * Stored text shown to a person. A note is data someone else may have written (another plugin,
 * an import, a model), and the CLI's human views (`get`, `recall`, `export --format md`) print
 * it: raw, an ESC or C1 sequence in it would clear the screen, retitle the terminal or rewrite
 * earlier lines, a bidi override would reorder what the reader sees, and hidden characters would
 * stay hidden from the one tool meant to inspect the store. These helpers make every such
 * character visible as `\u{1B}` and keep the rest of the text as it is.
 */
import { UNSAFE_FOR_DISPLAY } from './invisible.ts'

/**
 * `text` with every control, line break, bidi control and hidden character (see
 * `lib/text/invisible.ts`) written as a visible `\u{…}` escape. Callers that show text line by
 * line split on `LINE_BREAK` first, so only the breaks inside one field (a tag) are escaped.
 */
export function escapeForDisplay(text: string): string {
  return text.replace(UNSAFE_FOR_DISPLAY, (match: string, joiner: string | undefined) => joiner ?? escapeEach(match))
}

function escapeEach(chars: string): string {
  let out = ''
  for (const char of chars) out += `\\u{${char.codePointAt(0)!.toString(16).toUpperCase()}}`
  return out
}

/** Characters JSON.stringify leaves raw that a terminal or viewer acts on: DEL, C1, line and paragraph separators, and the hidden ones. */
const JSON_UNSAFE = new RegExp(`[\\u007f-\\u009f\\u2028\\u2029]|${UNSAFE_FOR_DISPLAY.source}`, 'gu')

/**
 * `JSON.stringify(value)` with the characters above written as `\uXXXX` escapes. The result
 * parses to exactly the same value (those characters can only occur inside JSON strings), so the
 * machine-readable outputs (`--json`, the JSON Lines export) stay lossless and are still safe to
 * print on a terminal.
 */
export function jsonForDisplay(value: unknown): string {
  return JSON.stringify(value).replace(JSON_UNSAFE, (match: string, joiner: string | undefined) => joiner ?? jsonEscape(match))
}

function jsonEscape(chars: string): string {
  let out = ''
  for (let i = 0; i < chars.length; i++) out += `\\u${chars.charCodeAt(i).toString(16).padStart(4, '0')}`
  return out
}
