/**
 * Characters a reader cannot see. A stored note can carry text the user never saw: Unicode tag
 * characters (U+E0000–E007F) spell ASCII invisibly and are a known way to hide instructions for
 * a model, bidi overrides and isolates reorder what is shown (the "Trojan Source" trick), zero-
 * width characters and runs of variation selectors hide data between visible letters, and C1
 * controls are terminal commands. This module names them once; the renderer (what the model
 * reads), the terminal escaper (what a person reads) and the store (what it refuses) all use it.
 */

/** Every character a tokenizer, terminal or Markdown renderer may treat as a line break. */
export const LINE_BREAK = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/

/** C0 and C1 controls and DEL, except tab and the line breaks (which callers split on). */
const CONTROL = /[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g

/** Bidi embeddings, overrides and isolates (LRE…RLO, LRI…PDI): they reorder what is displayed. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g

/**
 * Characters that render as nothing: format characters (zero-width space and joiners, word
 * joiner, BOM, LRM/RLM, invisible operators, Unicode tag characters, bidi controls, …), the
 * Hangul fillers and the combining grapheme joiner; and every variation selector after the first
 * in a run (one selects an emoji or ideograph form; more carry hidden data). The first group
 * matches a zero-width joiner between two pictographs, which builds one emoji (👩‍💻) and is kept.
 */
const HIDDEN = /((?<=\p{Extended_Pictographic}[\uFE0E\uFE0F]?)\u200D(?=\p{Extended_Pictographic}))|[\p{Cf}\u034f\u115f\u1160\u3164\uffa0]|(?<=[\uFE00-\uFE0F\u{E0100}-\u{E01EF}])[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]+/gu
/** The variation-selector runs alone: a second pass, since removing a hidden character can join two runs. */
const SELECTOR_RUN = /(?<=[\uFE00-\uFE0F\u{E0100}-\u{E01EF}])[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]+/gu

/** `U+202E`-style name of a character, as the model sees a bidi control. */
function codePointName(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`
}

/**
 * Text as the model should read it: controls become spaces (as C0 controls always did), bidi
 * controls become a visible `[U+202E]` (a reordering attempt in a note is worth seeing), and the
 * hidden characters above are removed. Line breaks are left to the caller, which splits on
 * `LINE_BREAK`.
 */
export function visibleForModel(text: string): string {
  return withoutHidden(text.replace(CONTROL, ' ').replace(BIDI_CONTROLS, (char) => `[${codePointName(char)}]`))
}

/**
 * Every character `HIDDEN` and `SELECTOR_RUN` can match or need: a text without one is left as it
 * is, without the two replaces (nearly every note; test/store/validate-fast.test.ts holds the
 * two equal for every character).
 */
export const MAY_HIDE = /[\p{Cf}\u034f\u115f\u1160\u3164\uffa0\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/u

/**
 * `text` without the hidden characters above (nothing else changes). The credential detector
 * reads this, so a key split by a zero-width space is still found.
 */
export function withoutHidden(text: string): string {
  if (!MAY_HIDE.test(text)) return text
  return text.replace(HIDDEN, (_, joiner: string | undefined) => joiner ?? '').replace(SELECTOR_RUN, '')
}

/**
 * Every character a person or a terminal must not receive raw, one at a time: controls (a
 * terminal runs ESC and C1 sequences: it can clear the screen or retitle the window), line
 * breaks, bidi controls and the hidden characters above. `lib/text/terminal.ts` shows them as
 * escapes. A zero-width joiner inside an emoji is matched by the first group, which callers keep.
 */
export const UNSAFE_FOR_DISPLAY = new RegExp(`${CONTROL.source}|[\\n\\v\\f\\r\\u0085\\u2028\\u2029]|${HIDDEN.source}`, 'gu')

/** What a note made of nothing visible consists of: the hidden characters, controls, white space, blank Braille, lone variation selectors. */
const NOTHING_VISIBLE = new RegExp(`${HIDDEN.source}|[\\p{Cc}\\p{Z}\\s\\u200D\\u2800\\uFE00-\\uFE0F\\u{E0100}-\\u{E01EF}]`, 'gu')

/**
 * An ASCII letter or digit, or a character of the CJK ranges (`CJK_CHAR`), which is always
 * visible: none is among the characters above (test/store/validate-fast.test.ts checks each).
 */
const SURELY_VISIBLE = /[0-9A-Za-z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/

/** True when nothing in `text` is visible: only white space, controls and the hidden characters above. */
export function isInvisibleOnly(text: string): boolean {
  if (SURELY_VISIBLE.test(text)) return false // nearly every note: no need to rewrite the whole text
  return text.replace(NOTHING_VISIBLE, '') === ''
}
