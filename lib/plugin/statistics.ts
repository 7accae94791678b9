import type { Context } from '@deepseek-ai/cordis'
import { untraced } from './untraced.ts'

/**
 * Registers the kernel's turn statistics as an after_output handler, through the same stage API
 * other plugins use: every finished turn is counted by how it ended (`stats().turns`).
 */
export function registerStatistics(ctx: Context): void {
  const memory = untraced(ctx.stablemem) // per turn: not through cordis's tracing proxy (untraced.ts)
  ctx.stablemem.stages.on('after_output', ({ reason }) => { memory.noteTurn(reason.kind) }, { name: 'stablemem:statistics' })
}
