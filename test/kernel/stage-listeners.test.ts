/**
 * The binding listens to a dsh hook only while a handler needs it (every listener costs dsh a
 * traced call per dispatch): with only the kernel's own handlers, the stream and tool hooks carry
 * no stablemem listener; registering a handler adds the listeners its stage needs, at once and
 * for the next turn, and disposing it removes them. A mutation check listens regardless.
 */
import type { Context } from '@deepseek-ai/cordis'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { boot, echoTool, reply, tempStorePath, toolCall } from '../helpers/harness.ts'
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
  h.ctx.tools.register(echoTool())
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

/**
 * before_toolcall needs `tools/pre-execute` only; `tools/execute` is listened to just while a
 * result a handler authored waits for its execution. Returns the listener counts and what ran.
 */
async function authoring(t: Test, author: boolean, module: typeof plugin = plugin, denyLater = false): Promise<{ idle: Record<string, number>, withHandler: Record<string, number>, during: number | undefined, after: Record<string, number>, bodyRan: boolean, texts: string[] }> {
  const h = await boot({ path: tempStorePath('listeners-author') }, [toolCall('c1', 'echo', { word: 'a' }), reply('done')], { module })
  t.teardown(() => h.dispose())
  let bodyRan = false
  h.ctx.tools.register(echoTool(() => { bodyRan = true }))
  // Registered before any stablemem execute listener, so it runs first and sees how many there are.
  let during: number | undefined
  h.ctx.on('tools/execute', (_exec, next) => {
    during = listeners(h.ctx)['tools/execute']
    return next()
  })
  // A policy after the stage's (the binding's listener is prepended) that denies the call anyway.
  if (denyLater) h.ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'denied by a later policy' }))
  const idle = listeners(h.ctx)
  const dispose = h.ctx.stablemem.stages.on('before_toolcall', () => (author ? { kind: 'result', value: 'authored' } : undefined))
  const withHandler = listeners(h.ctx)
  await h.turn('call echo once')
  await dispose()
  const texts = h.adapter.requests.at(-1)!.messages.flatMap((m) => m.content.flatMap((b) => b.type === 'tool-result' ? b.content.flatMap((c) => c.type === 'text' ? [c.text] : []) : []))
  return { idle, withHandler, during, after: listeners(h.ctx), bodyRan, texts }
}

t.test('a before_toolcall handler adds the pre-execute listener only; execute is listened to while an authored result waits', async (t) => {
  const plain = await authoring(t, false)
  t.equal(plain.withHandler['tools/pre-execute'], plain.idle['tools/pre-execute']! + 1, 'the handler added the pre-execute listener')
  t.equal(plain.withHandler['tools/execute'], plain.idle['tools/execute'], 'but no execute listener: it authored nothing')
  t.equal(plain.during, plain.idle['tools/execute'], 'not even while the tool ran')
  t.ok(plain.bodyRan, 'the tool body ran')
  const authored = await authoring(t, true)
  t.equal(authored.withHandler['tools/execute'], authored.idle['tools/execute'], 'no execute listener before the call either')
  t.equal(authored.during, authored.idle['tools/execute']! + 1, 'while the authored result waited, the execute listener was there')
  t.notOk(authored.bodyRan, 'and served it: the tool body did not run')
  t.same(authored.texts, ['authored'], 'the model saw the authored value')
  t.same(authored.after, authored.idle, 'afterwards every listener is gone')
})

t.test('mutation check: a binding that listens to execute for every before_toolcall handler has it before any result', async (t) => {
  const m = mutant({ file: 'kernel/stages/bind.ts', from: 'listenWhile(() => outstanding > 0,', to: "listenWhile(() => outstanding > 0 || handlers('before_toolcall')," })
  t.teardown(() => m.remove())
  const plain = await authoring(t, false, await m.load<typeof plugin>('index.ts'))
  t.equal(plain.withHandler['tools/execute'], plain.idle['tools/execute']! + 1, 'the execute listener is added with the handler')
})

t.test('mutation check: without listening when a result is authored, the tool body runs after all', async (t) => {
  const m = mutant({ file: 'kernel/stages/bind.ts', from: 'if (outstanding++ === 0) sync()', to: 'outstanding++' })
  t.teardown(() => m.remove())
  const authored = await authoring(t, true, await m.load<typeof plugin>('index.ts'))
  t.ok(authored.bodyRan, 'nothing served the authored result')
  t.same(authored.texts, ['echo:a'])
})

t.test('an authored result that a later policy denies stops the execute listener too', async (t) => {
  const denied = await authoring(t, true, plugin, true)
  t.notOk(denied.bodyRan)
  t.equal(denied.during, undefined, 'no execution came')
  t.same(denied.after, denied.idle, 'and the execute listener is gone again')
})

t.test('mutation check: without the cleanup on a later denial, the execute listener stays', async (t) => {
  const m = mutant({ file: 'kernel/stages/bind.ts', from: "if (final.kind === 'deny' && authored.delete(exec.token) && --outstanding === 0) sync()", to: '' })
  t.teardown(() => m.remove())
  const denied = await authoring(t, true, await m.load<typeof plugin>('index.ts'), true)
  t.equal(denied.after['tools/execute'], denied.idle['tools/execute']! + 1, 'it waits for an execution that never comes')
})

t.test('mutation check: a no-opinion fast path that forgets authored results leaves the execute listener on a later denial', async (t) => {
  const m = mutant({ file: 'kernel/stages/bind.ts', from: 'if (decision === undefined && !tally && !authored.has(exec.token)) return next()', to: 'if (decision === undefined && !tally) return next()' })
  t.teardown(() => m.remove())
  const denied = await authoring(t, true, await m.load<typeof plugin>('index.ts'), true)
  t.equal(denied.after['tools/execute'], denied.idle['tools/execute']! + 1, 'the authored call is not watched, so its denial is missed')
})
