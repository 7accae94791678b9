/**
 * The supersede chain: which note replaced which. Every block names at most one successor
 * (`superseded_by`); following successors from any block must end at a current block. Three
 * writers keep that true: an explicit `supersedes` at commit, re-committing a replaced text (the
 * later commit wins, so the old text becomes current again), and import. None of them may create
 * a cycle, because a block in a cycle is never current and so never recalled again.
 */
import type { StatementSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'

/** Longest successor chain followed; a longer one means the file was edited by hand, and is refused. */
const MAX_CHAIN = 10_000

/** What the chain needs from the store: its cached statements. */
export interface ChainAccess {
  stmt(key: string, sql: string): StatementSync
}

/** The successor of a block: its id, null while current, undefined when no such block exists. */
function successorOf(access: ChainAccess, id: string): string | null | undefined {
  const row = access.stmt('successor', 'SELECT superseded_by FROM blocks WHERE id = ?').get(id) as { superseded_by: string | null } | undefined
  return row === undefined ? undefined : row.superseded_by
}

/**
 * The current block at the end of `id`'s successor chain (`id` itself when current). A chain
 * that loops or never ends is reported, not followed for ever.
 */
export function currentOf(access: ChainAccess, id: string): string {
  let at = id
  for (let steps = 0; steps < MAX_CHAIN; steps++) {
    const next = successorOf(access, at)
    if (next === null || next === undefined) return at
    if (next === id) break
    at = next
  }
  throw new StableMemError('invalid_input', `the supersede chain from ${id} loops or has more than ${MAX_CHAIN} links`)
}

/**
 * Whether marking `id` as replaced by `successor` would close a loop: true when `id` is
 * `successor` or lies on `successor`'s chain.
 */
export function wouldLoop(access: ChainAccess, id: string, successor: string): boolean {
  let at: string | null | undefined = successor
  for (let steps = 0; steps < MAX_CHAIN && at !== null && at !== undefined; steps++) {
    if (at === id) return true
    at = successorOf(access, at)
  }
  return at !== null && at !== undefined
}

/**
 * Makes a replaced block current again because its text was committed again: the block at the
 * end of its chain is now replaced by it, with a `supersedes` edge dated now that says so.
 * Returns the id it replaced, or undefined when the block was already current.
 */
export function restore(access: ChainAccess, id: string, now: number): string | undefined {
  const successor = successorOf(access, id)
  if (successor === null || successor === undefined) return undefined
  // Current first: a loop left by an older release through `id` then ends at `id` and is broken.
  access.stmt('unmark', 'UPDATE blocks SET superseded_by = NULL WHERE id = ?').run(id)
  const head = currentOf(access, successor)
  if (head === id) return successor
  mark(access, head, id, now)
  return head
}

/**
 * Marks `oldId` as replaced by `newId` and records a `supersedes` edge dated `now` (an edge that
 * already exists takes the later date, so the history says which commit won last). Refuses a
 * self-reference, a missing block and a loop.
 */
export function mark(access: ChainAccess, oldId: string, newId: string, now: number): void {
  if (oldId === newId) throw new StableMemError('invalid_input', 'supersedes: a block cannot supersede itself')
  if (successorOf(access, oldId) === undefined) throw new StableMemError('not_found', `supersedes: no block ${oldId}`)
  if (wouldLoop(access, oldId, newId)) throw new StableMemError('invalid_input', `supersedes: ${newId} is itself replaced by ${oldId}; the chain would loop`)
  access.stmt('mark', 'UPDATE blocks SET superseded_by = ? WHERE id = ?').run(newId, oldId)
  access.stmt('supersedeEdge', `INSERT INTO edges (source_kind, source_id, target_kind, target_id, type, created_at)
    VALUES ('block', ?, 'block', ?, 'supersedes', ?)
    ON CONFLICT DO UPDATE SET created_at = max(created_at, excluded.created_at)`).run(newId, oldId, now)
}

/**
 * Restores an imported `supersededBy`: `id` is marked as replaced by `successor` (which must
 * exist) unless it already names a successor; no edge is written, because the export carries its
 * edges. Refuses a link that would close a loop.
 */
export function adopt(access: ChainAccess, id: string, successor: string): void {
  if (successorOf(access, successor) === undefined) throw new StableMemError('not_found', `supersededBy: no block ${successor}`)
  if (successorOf(access, id) !== null) return
  if (wouldLoop(access, id, successor)) throw new StableMemError('invalid_input', `supersededBy: ${successor} is itself replaced by ${id}; the chain would loop`)
  access.stmt('adopt', 'UPDATE blocks SET superseded_by = ? WHERE id = ?').run(successor, id)
}

/** Whether a block with this id exists. */
export function exists(access: ChainAccess, id: string): boolean {
  return successorOf(access, id) !== undefined
}
