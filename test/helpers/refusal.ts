/** Assertion helper for the package's deliberate refusals. */
import { StableMemError, type StableMemErrorCode } from '../../lib/errors.ts'

/** The StableMemError `fn` throws (sync or async), or a description of what happened instead. */
export async function refusal(fn: () => unknown): Promise<{ code: StableMemErrorCode, message: string } | string> {
  try {
    await fn()
  } catch (error) {
    if (error instanceof StableMemError) return { code: error.code, message: error.message }
    return `threw a non-StableMemError: ${String(error)}`
  }
  return 'did not throw'
}
