import type { Context } from '@deepseek-ai/cordis'
import { defineTool, type ToolDefinition } from '@deepseek-ai/dsh-tools'
import { blockId } from '../store/block-id.ts'
import { placeOf } from './session-place.ts'

/**
 * The tool through which the model saves a note. Its description tells the model what is worth
 * saving; its output is the block id and whether the note was new, rendered as one line the model
 * reads. Refusals (empty, too large, store unavailable) come back as tool errors with their message.
 * With a team layer (`team`), the model may also share the note with the team (`shared: true`);
 * it is told to do so only when the user asks, because nothing is shared implicitly.
 */
export function commitTool(ctx: Context, name: string, team = false): ToolDefinition {
  return defineTool({
    name,
    description: 'Save a durable fact to long-term memory so that future sessions recall it automatically. ' +
      'Use it for facts worth keeping across sessions: ports, IPs, paths, versions, names, decisions, preferences. ' +
      'Write one self-contained note per call, in the user\'s language, naming its subject (e.g. "billing 服务端口 8499"). ' +
      'Saving the same text twice is harmless. ' +
      'Scope: "workspace" for facts about the current project (its ports, paths, conventions), "global" for facts about the user ' +
      'that hold everywhere (language, time zone, preferences), "preset" for facts only this agent preset needs; omit it for the default.',
    parameters: {
      text: { type: 'string', required: true, description: 'The note, self-contained (subject + fact).' },
      source: { type: 'string', description: 'Optional provenance tag, e.g. "user" or a file name.' },
      scene: { type: 'string', description: 'Optional scene key the note belongs to, e.g. "chan:qq".' },
      scope: { type: 'string', enum: ['workspace', 'global', 'preset'], description: 'Optional: where the note is recalled (see above).' },
      supersedes: {
        type: 'string',
        description: 'Optional id (blk_…) of an earlier note this one replaces, e.g. when a port or path changed. ' +
          'The old note stays stored but is no longer recalled.',
      },
      ...(team ? {
        shared: {
          type: 'boolean' as const,
          description: 'Optional: true also saves the note in the team\'s shared memory, where every teammate\'s agent recalls it. ' +
            'Only when the user asks for it to be shared with the team; never for personal facts.',
        },
      } : {}),
    },
    output: {
      schema: {
        type: 'object',
        properties: { id: { type: 'string' }, created: { type: 'boolean' }, restored: { type: 'string' }, redacted: { type: 'array', items: { type: 'string' } }, duplicateOf: { type: 'string' }, shared: { type: 'boolean' } },
        additionalProperties: false,
      },
      render: (_args, value) => [{
        type: 'text',
        text: (value.created ? `Saved to long-term memory as ${value.id}.` : value.restored
          ? `Saved again as ${value.id}: it is the current note again and replaces ${value.restored}.`
          : `Already in long-term memory as ${value.id}.`) +
          (value.duplicateOf && value.created ? ` It nearly duplicates ${value.duplicateOf}, which was already saved.` : '') +
          (value.shared ? ' It is shared with the team.' : '') +
          (value.redacted ? ` Credentials were masked before saving (${value.redacted.join(', ')}); they are not in memory.` : ''),
      }],
    },
    async execute(args, exec) {
      // 'model' marks notes the model saved on its own; it must not overwrite the provenance of a
      // note that already exists (e.g. one saved with source 'user'), so it applies to new notes only.
      const exists = args.source === undefined && await ctx.stablemem.get(blockId(args.text)) !== undefined
      const source = args.source ?? (exists ? '' : 'model')
      const shared = (args as { shared?: boolean }).shared === true
      const result = await ctx.stablemem.commit({
        // Without a scene of its own, a note is tagged with the turn's primary scene (docs/scenes.md).
        text: args.text, source, scene: args.scene ?? (exec.agent === undefined ? '' : ctx.stablemem.scenes.current(String(exec.agent.id))?.primary ?? ''), supersedes: args.supersedes ?? '', scope: args.scope, ...placeOf(exec.agent),
        ...(shared ? { shared: true } : {}),
      })
      return {
        id: result.id, created: result.created,
        ...(result.restored === undefined ? {} : { restored: result.restored }),
        ...(result.redacted ? { redacted: result.redacted } : {}),
        ...(result.duplicateOf ? { duplicateOf: result.duplicateOf } : {}),
        ...(shared ? { shared: true } : {}),
      }
    },
  })
}
