import type { RecallSource } from './source.ts'
import { withoutCjk } from '../text/cjk.ts'
import { matchPhrase, quoteTerm } from './fts-query.ts'
import { symbolVariants } from './symbols.ts'

/**
 * Which of the many near-identical strings an abstention asks about (the typo neighbours of a
 * missing port, IP or version, `abstain.ts`) some note holds, at a cost that does not grow with
 * the store. Counted one by one as FTS5 phrases, the 64 neighbours of an IP cost up to 0.6 s at a
 * million notes: every phrase of common tokens (`10`, `3`) walks long postings lists, and a
 * vocabulary count walks them too.
 *
 * 1. A neighbour holding a token no note holds is absent. Tokens the index's Porter stemmer
 *    leaves alone (lower-case ASCII ending in a digit) are asked for as they are, each with a
 *    `LIMIT 1` lookup that stops at the first note (or at the index's b-tree when there is none);
 *    a one-token neighbour of that kind is then present exactly when its token is. The one-token
 *    neighbours of a string (a port's) are first read together, as one unranked OR of their
 *    tokens: when at most `FRAME_ROWS` notes hold any, their texts say which tokens are held,
 *    and no token of theirs is looked up.
 * 2. Neighbours of one string differ from it in one token: those differing at the same place share
 *    a frame (the tokens before that place, near those after it). One unranked FTS query per
 *    frame finds the notes that can hold any of them; none means all of them are absent.
 * 3. When a frame's notes are few (`FRAME_ROWS`) and every token is stemmer-proof, their texts
 *    are read and each neighbour's token sequence is looked for in them: exactly what the phrase
 *    query would say, with no token looked up (step 1 only spares phrase lookups, and a sequence
 *    found in a note's tokens has every token held; the dozens of lookups cost more than the frame). Otherwise a neighbour is looked up as a phrase (stopping at the first note),
 *    at most `PHRASE_LOOKUPS` of them per missing string, in the order `typoVariants` gives; past
 *    that budget a neighbour is not offered. The hint is a courtesy, its cost must stay bounded.
 */

/** Most notes read to check the neighbours of one frame in memory; past it, neighbours are looked up as phrases. */
export const FRAME_ROWS = 256

/** Most neighbours of one missing string looked up as phrases (step 3); the rest are not offered. */
export const PHRASE_LOOKUPS = 4

/** The strings `inStore` asks the index for when it checks `symbol`: a version is found with or without its `v`. */
export function phraseForms(symbol: string): string[] {
  return /^v\d/.test(symbol) ? [symbol, symbol.slice(1)] : symbolVariants(symbol)
}

/** The tokens FTS5's unicode61 tokenizer makes of a Latin string (before stemming): letters and digits, case and diacritics folded. */
function tokens(text: string): string[] {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((t) => t !== '')
}

/** A token the Porter stemmer returns unchanged (its rules only strip letter endings), so the index holds it as written. */
function stemProof(token: string): boolean {
  return /^[a-z0-9]*[0-9]$/.test(token)
}

/**
 * The notes that can hold a neighbour changed at one position: the tokens before it as a phrase,
 * within one token of those after it (FTS5's NEAR), so a frame of common numbers (`10 · 95`)
 * still finds few notes. A superset of the neighbours' notes; step 3 checks the order.
 */
function frameMatch(before: readonly string[], after: readonly string[]): string {
  const phrase = (ts: readonly string[]) => quoteTerm(ts.join(' '))
  if (before.length === 0) return `latin : ${phrase(after)}`
  if (after.length === 0) return `latin : ${phrase(before)}`
  return `latin : NEAR(${phrase(before)} ${phrase(after)}, 1)`
}

interface Form {
  s: string
  t: string[]
  /** Position among the neighbours asked about (the phrase budget is spent in this order). */
  order?: number
}

/**
 * The subset of `neighbours` (phrase forms of typo variants of `original`) that some note holds
 * as a phrase, as `store.matchCount(matchPhrase(s)) > 0` would say, within the bounds above.
 */
export function presentNeighbours(store: RecallSource, original: string, neighbours: readonly string[]): Set<string> {
  const forms: Form[] = [...new Set(neighbours)].map((s) => ({ s, t: tokens(s) }))
  const heldTokens = new Map<string, boolean>()
  const tokenHeld = (t: string) => {
    let known = heldTokens.get(t)
    if (known === undefined) heldTokens.set(t, known = store.ftsRowids(matchPhrase(t), 1).length > 0)
    return known
  }
  const present = new Set<string>()
  let lookups = 0
  const lookUp = (form: Form) => {
    if (lookups >= PHRASE_LOOKUPS) return
    lookups++
    if (store.ftsRowids(matchPhrase(form.s), 1).length > 0) present.add(form.s)
  }
  const held = (form: Form) => !form.t.some((t) => stemProof(t) && !tokenHeld(t))
  // One-token neighbours (a port's 49) in one unranked read of any of their tokens: none held, or
  // few notes whose tokens say which; past `FRAME_ROWS` notes each token is looked up.
  const singles = forms.filter((form) => form.t.length === 1 && stemProof(form.t[0]!))
  if (singles.length > 0) {
    const rowids = store.ftsRowids(singles.map((form) => matchPhrase(form.t[0]!)).join(' OR '), FRAME_ROWS + 1)
    if (rowids.length <= FRAME_ROWS) {
      const inNotes = new Set(rowids.length === 0 ? [] : [...store.blocksByRowid(rowids).values()].flatMap((b) => tokens(withoutCjk(b.text))))
      for (const form of singles) heldTokens.set(form.t[0]!, inNotes.has(form.t[0]!))
    }
    for (const form of singles) if (tokenHeld(form.t[0]!)) present.add(form.s)
  }
  const models = phraseForms(original).map(tokens)
  const frames = new Map<string, { match: string, forms: Form[] }>()
  for (const [order, form] of forms.entries()) {
    if (form.t.length === 1 && stemProof(form.t[0]!)) continue // settled above
    const model = models.find((m) => m.length === form.t.length && m.filter((t, i) => t !== form.t[i]).length === 1)
    if (model === undefined || form.t.length < 2) { if (held(form)) lookUp(form); continue }
    const at = model.findIndex((t, i) => t !== form.t[i])
    const key = `${at}\0${model.join('\0')}`
    let frame = frames.get(key)
    if (!frame) frames.set(key, frame = { match: frameMatch(model.slice(0, at), model.slice(at + 1)), forms: [] })
    frame.forms.push({ ...form, order })
  }
  // Frames checked in memory need no token lookups: a note whose tokens hold the sequence holds each token.
  const crowded: Form[][] = []
  for (const { match, forms: inFrame } of frames.values()) {
    const rowids = store.ftsRowids(match, FRAME_ROWS + 1)
    if (rowids.length === 0) continue // no note holds the frame, so none holds any of its neighbours
    if (rowids.length > FRAME_ROWS || !inFrame.every((f) => f.t.every(stemProof))) {
      const asked = inFrame.filter(held)
      if (asked.length > 0) crowded.push(asked)
      continue
    }
    const texts = [...store.blocksByRowid(rowids).values()].map((b) => ` ${tokens(withoutCjk(b.text)).join(' ')} `)
    for (const form of inFrame) {
      const sequence = ` ${form.t.join(' ')} `
      if (texts.some((text) => text.includes(sequence))) present.add(form.s)
    }
  }
  // The rest spend the phrase budget in the order `typoVariants` gives, frame by frame.
  crowded.sort((a, b) => a[0]!.order! - b[0]!.order!)
  for (const inFrame of crowded) for (const form of inFrame) lookUp(form)
  return present
}
