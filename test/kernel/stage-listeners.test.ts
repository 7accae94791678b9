/**
 * The binding listens to a dsh hook only while a handler needs it (every listener costs dsh a
 * traced call per dispatch): with only the kernel's own handlers, the stream and tool hooks carry
 * no stablemem listener; registering a handler adds the listeners its stage needs, at once and
 * for the next turn, and disposing it removes them. A mutation check listens regardless.
 */
import type { Context } from '@deepseek-ai/cordis'
import { defineTool } from '@deepseek-ai/dsh-tools'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { boot, reply, tempStorePath, toolCall } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const HOOKS = ['llm/stream', 'tools/pre-execute', 'tools/execute', 'tools/post-execute'] as const

/** How many listeners each hook has on the root event bus. */
function listeners(ctx: Context): Record<string, number> {
  const hooks = (ctx.events as unknown as { _hooks: Record<string, unknown[] | undefined> })._hooks
  return Object.fromEntries(HOOKS.map((name) => [name, hooks[name]?.length ?? 0]))
}

async function scenario(t: Test, module: typeof plugin = plugin): Promise<{ idle: Record<string, number>, withHandler: Record<string, number>, after: Record<string, number>, seen: string[] }> {
  const h = await boot({ path: tempStorePath('listeners') }, [toolCall('c1', 'echo', { word: 'a' }), reply('done')], { module })
  t.teardown(() => h.dispose())
  h.ctx.tools.register(defineTool({
    name: 'echo',
    description: 'Echo a word.',
    parameters: { word: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute(args) { return `echo:${args.word}` },
  }))
  const idle = listeners(h.ctx)
  const seen: string[] = []
  const dispose = h.ctx.stablemem.stages.on('after_toolcall', ({ name }) => { seen.push(name) })
  const withHandler = listeners(h.ctx)
  await h.turn('call echo once')
  await dispose()
  return { idle, withHandler, after: listeners(h.ctx), seen }
}

t.test('a tool hook is listened to only while an after_toolcall handler exists', async (t) => {
  const { idle, withHandler, after, seen } = await scenario(t)
  t.same(seen, ['echo'], 'the handler registered after start-up ran in the next turn')
  t.equal(withHandler['tools/post-execute'], idle['tools/post-execute']! + 1, 'registering it added the post-execute listener')
  t.equal(withHandler['llm/stream'], idle['llm/stream'], 'and nothing on the stream, which no handler needs')
  t.equal(withHandler['tools/pre-execute'], idle['tools/pre-execute'])
  t.same(after, idle, 'disposing it removed the listener again')
})

t.test('mutation check: a binding that always listens has the listener before any handler', async (t) => {
  const m = mutant({ file: 'kernel/stages/bind.ts', from: "listenWhile(() => handlers('after_toolcall'),", to: 'listenWhile(() => true,' })
  t.teardown(() => m.remove())
  const { idle, withHandler } = await scenario(t, await m.load<typeof plugin>('index.ts'))
  t.equal(withHandler['tools/post-execute'], idle['tools/post-execute'], 'no listener is added: it was there all along')
})
