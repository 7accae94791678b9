import type { Context } from '@deepseek-ai/cordis'

/**
 * Registers the kernel's turn statistics as an after_output handler, through the same stage API
 * other plugins use: every finished turn is counted by how it ended (`stats().turns`).
 */
export function registerStatistics(ctx: Context): void {
  ctx.stablemem.stages.on('after_output', ({ reason }) => { ctx.stablemem.noteTurn(reason.kind) }, { name: 'stablemem:statistics' })
}
