/**
 * The one type every part of the recall bench shares: a recall under test. Kept in its own module
 * so `bench/recall.ts` and its parts (`hybrid.ts`, `precision.ts`) import it without importing
 * each other in a circle.
 */
import type { Hit } from '../../lib/recall/types.ts'
import type { BlockStore } from '../../lib/store/store.ts'

/** A recall under test: what the bench calls once per query. */
export type RecallFn = (store: BlockStore, query: string, options: { topK: number, earlier?: readonly string[] }) => Hit[] | Promise<Hit[]>
