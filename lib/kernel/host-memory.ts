/**
 * What the kernel uses of the host row's `ctx.stablemem`: the narrow view its host-plane
 * listeners (capture, scenes), the heartbeat and its rows need. The kernel never imports the
 * service class: `lib/service.ts` sits above the kernel and builds on its stages and scenes. The
 * service declares `implements KernelMemory`, so a change that breaks this contract fails to
 * compile there.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { ScopeContext } from '../scope-policy.ts'
import type { CapturePiece, CaptureResult } from '../store/layers.ts'
import type { CoolingReport } from './layers/cooling.ts'
import type { SceneApi } from './scenes/api.ts'

/** The host's memory as the kernel sees it (docs/architecture.md, "Two planes"). */
export interface KernelMemory {
  /** Why the store is unavailable, if it is; the kernel's listeners then do nothing. */
  unavailableReason(): string | undefined
  /** Stores the pieces of a compacted region as cold blocks in the scope of the session's `place` (`layers/capture.ts`). */
  capture(pieces: readonly CapturePiece[], place?: ScopeContext): Promise<CaptureResult>
  /** Counts one capture that failed. */
  noteCaptureFailure(): void
  /** One cooling tick with the configured rule and distiller (`layers/cooling.ts`). */
  cool(): Promise<CoolingReport>
  /** Finishes a large forget's pending scrub in the background (the heartbeat asks). */
  scrubLater(): void
  /** Scenes: resolution per turn, tools, decay (`scenes/api.ts`). */
  readonly scenes: SceneApi
}

/** The host row's service found in `ctx`, through the kernel's view; undefined where no host row serves. */
export function kernelMemoryOf(ctx: Context): KernelMemory | undefined {
  return ctx.get('stablemem') as KernelMemory | undefined
}
