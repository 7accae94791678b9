/**
 * Conversation neighbours: a note is lifted toward the score of a note saved right beside it in
 * the same conversation. In a conversation the answer sits next to its question: "What are you
 * researching?" matches a question about Caroline's research, and the reply beside it, "Adoption
 * agencies", holds the answer in words the question never used. No wording is shared, only the
 * place in the conversation, which the store knows: notes are kept in the order they were saved
 * (a local store's rowid), with their `scene` and their time.
 *
 * Two notes are neighbours when they share a scene, lie at most `NEIGHBOUR_SPAN` places apart in
 * save order, and were saved at most `NEIGHBOUR_GAP_MS` apart (a later talk in the same scene is
 * another conversation). A non-pinned note's score `s` becomes `s + NEIGHBOUR_LIFT × max(0, n − s)`,
 * where `n` is its best neighbour's score (capped at 1): a note is only ever lifted toward a better
 * neighbour, never lowered, so two matching notes side by side do not push each other up past the
 * rest, and the order among notes without a better neighbour is kept. A neighbour of one of the
 * `NEIGHBOUR_SOURCES` best candidates that no term matched is read too (one statement), because
 * the answer beside a matching question is often not a candidate at all.
 *
 * Two notes whose save times are both exact midnights carry a date only (`dateOnly`): they are
 * not neighbours, since nothing says they were saved within the hour.
 *
 * Measured (docs/recall.md, "Conversation neighbours"): LoCoMo R@5 .628 → .670 scoped, .604 →
 * .643 global, CMRC2018 .957 → .964, on both halves; MADial, whose memories carry only a date,
 * lost one gold note in 2 of 76 chats to another memory of the same day until `dateOnly`.
 */

/** How far a note is lifted toward its best neighbour's score (0: off, 1: up to it). */
export const NEIGHBOUR_LIFT = 0.4
/** Most places apart in save order two neighbours lie (1: adjacent notes). */
export const NEIGHBOUR_SPAN = 2
/** Most time between two neighbours' saves: one conversation, not the same scene another day. */
export const NEIGHBOUR_GAP_MS = 3_600_000
/** The best candidates whose neighbours are read when no term made them candidates. */
export const NEIGHBOUR_SOURCES = 5

/** A candidate as the neighbour lift sees it; `rowid` is its place in save order. */
export interface NeighbourScored {
  id: string
  rowid: number
  scene: string
  createdAt: number
  exact: boolean
  score: number
  /** Set by the lift: the id of the neighbour that lifted this note (its `why` names it). */
  beside?: string
}

/** Milliseconds in a day: a time that is a whole number of them is a midnight (UTC). */
const DAY_MS = 86_400_000

/**
 * Whether two save times say nothing about adjacency: both fall exactly on a midnight (UTC), to the
 * millisecond. That is a date without a time of day (notes imported with a day only: `2023-12-25`
 * parses to midnight UTC), not two saves within the hour; a note saved live is never exactly at
 * midnight twice. Two memories of one day would otherwise read as one conversation.
 */
function dateOnly(a: number, b: number): boolean {
  return a % DAY_MS === 0 && b % DAY_MS === 0
}

/**
 * Whether two notes are conversation neighbours (a note without a scene has none, nor two notes
 * whose times carry a date only, `dateOnly`).
 */
export function areNeighbours(a: Pick<NeighbourScored, 'rowid' | 'scene' | 'createdAt'>, b: Pick<NeighbourScored, 'rowid' | 'scene' | 'createdAt'>): boolean {
  const apart = Math.abs(a.rowid - b.rowid)
  return a.scene !== '' && a.scene === b.scene && apart >= 1 && apart <= NEIGHBOUR_SPAN && Math.abs(a.createdAt - b.createdAt) <= NEIGHBOUR_GAP_MS &&
    !dateOnly(a.createdAt, b.createdAt)
}

/**
 * The places in save order beside the `NEIGHBOUR_SOURCES` best non-pinned candidates with a scene
 * that are not candidates yet: the notes to read (the caller keeps those `areNeighbours` accepts).
 */
export function neighbourRowids(candidates: readonly NeighbourScored[]): number[] {
  const known = new Set(candidates.map((c) => c.rowid))
  const best = candidates.filter((c) => !c.exact && c.scene !== '').sort((a, b) => b.score - a.score || a.rowid - b.rowid).slice(0, NEIGHBOUR_SOURCES)
  const out = new Set<number>()
  for (const c of best) {
    for (let d = 1; d <= NEIGHBOUR_SPAN; d++) {
      for (const rowid of [c.rowid - d, c.rowid + d]) if (rowid > 0 && !known.has(rowid)) out.add(rowid)
    }
  }
  return [...out].sort((a, b) => a - b)
}

/** Lifts every non-pinned candidate toward its best neighbour's score, in place (all from the scores before the lift). */
export function liftNeighbours(candidates: NeighbourScored[], weight: number = NEIGHBOUR_LIFT): void {
  if (weight <= 0 || candidates.length < 2) return
  const before = new Map(candidates.map((c) => [c.rowid, c]))
  const scores = new Map(candidates.map((c) => [c.rowid, Math.min(c.score, 1)]))
  for (const c of candidates) {
    if (c.exact || c.scene === '') continue
    let near = 0
    let beside = ''
    for (let d = -NEIGHBOUR_SPAN; d <= NEIGHBOUR_SPAN; d++) {
      const other = before.get(c.rowid + d)
      if (other !== undefined && areNeighbours(c, other) && scores.get(other.rowid)! > near) {
        near = scores.get(other.rowid)!
        beside = other.id
      }
    }
    const own = scores.get(c.rowid)!
    if (near > own) {
      c.score = own + weight * (near - own)
      c.beside = beside
    }
  }
}
