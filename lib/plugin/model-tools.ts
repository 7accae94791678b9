import type { Context } from '@deepseek-ai/cordis'
import type { ToolDefinition } from '@deepseek-ai/dsh-tools'
import { recallToolNameOf, type Config } from '../config.ts'
import { commitTool } from './commit-tool.ts'
import { forgetTool } from './forget-tool.ts'
import { recallTool } from './recall-tool.ts'

/**
 * Every tool the model sees, in one list. The host row registers them for agents outside the
 * `stablemem` preset and the kernel row registers the same list, under the same names, for the
 * agents that joined it (a scoped tool shadows a global one of that name), so a new tool added
 * here reaches both planes and never shows up twice.
 */
export function modelTools(ctx: Context, config: Config): ToolDefinition[] {
  const tools = [commitTool(ctx, config.toolName, config.team.url !== ''), recallTool(ctx, recallToolNameOf(config))]
  if (config.forgetTool.enabled) tools.push(forgetTool(ctx, config.forgetTool))
  return tools
}
