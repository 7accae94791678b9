/**
 * In-process preset harness: a Cordis Loader (with the `include` and `group` builtins a preset
 * mount needs), the real dsh registries, agent loop and `dsh-agent-presets`, the host row mounted
 * from source, and a preset root in a temp folder. The presets name `dsh-stablemem/kernel` by
 * bare specifier, as the shipped preset does; the loader resolves it from a temp base folder whose
 * `node_modules/dsh-stablemem` re-exports the source tree under test (the real `lib/`, or a
 * mutant's copy).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import Group from '@deepseek-ai/cordis-plugin-group'
import Include from '@deepseek-ai/cordis-plugin-include'
import Loader from '@deepseek-ai/cordis-plugin-loader'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import type { Agent } from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import AgentPresets from '@deepseek-ai/dsh-agent-presets'
import LlmRuntime, { type StreamChunk } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'
import type * as hostModule from '../../lib/index.ts'
import type { Config } from '../../lib/config.ts'
import { ScriptedAdapter, realContext, userMessage } from './harness.ts'
import { tempDir } from './temp.ts'

/** The project's `lib/`. */
export const LIB = fileURLToPath(new URL('../../lib/', import.meta.url))

/** Options of `presetHarness`. */
export interface PresetHarnessOptions {
  /** The host row's config (validated by its schema). */
  host: Partial<Config>
  /** Preset id → `agent.cordis.yml` text, written into the temp preset root. */
  presets: Record<string, string>
  /** The source tree to mount (default: the real `lib/`; a mutant's `lib/` in mutation checks). */
  lib?: string
  /** Mount the host row (default true). */
  mountHost?: boolean
}

/** A booted composition with presets. */
export interface PresetHarness {
  ctx: Context
  adapter: ScriptedAdapter
  errors: unknown[]
  root: string
  /** Creates an agent on a new session, joined to `preset` (or bare with `null`). */
  agent(session: string, preset: string | null): Promise<Agent>
  /** One turn on `agent` with a human prompt, waiting until idle. */
  turn(agent: Agent, prompt: string): Promise<void>
  dispose(): Promise<void>
}

/** Writes the `node_modules/dsh-stablemem` shim under `base` that re-exports `lib`. */
function shim(base: string, lib: string): void {
  const dir = join(base, 'node_modules', 'dsh-stablemem')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'dsh-stablemem', type: 'module', exports: { '.': './index.js', './kernel': './kernel.js' } }))
  writeFileSync(join(dir, 'index.js'), `export * from ${JSON.stringify(pathToFileURL(join(lib, 'index.ts')).href)}\n`)
  writeFileSync(join(dir, 'kernel.js'), `export * from ${JSON.stringify(pathToFileURL(join(lib, 'kernel', 'index.ts')).href)}\n`)
}

/** Boots the composition; the scripted model answers with `script` (more via `adapter`). */
export async function presetHarness(options: PresetHarnessOptions, script: StreamChunk[][] = []): Promise<PresetHarness> {
  const lib = options.lib ?? LIB
  const base = tempDir('stablemem-presets')
  shim(base, lib)
  const root = join(base, 'presets')
  for (const [id, text] of Object.entries(options.presets)) {
    mkdirSync(join(root, id), { recursive: true })
    writeFileSync(join(root, id, 'agent.cordis.yml'), text)
  }
  const ctx = new Context()
  ctx.baseUrl = pathToFileURL(base).href + '/'
  await ctx.plugin(Loader)
  // A preset resolves its rows' bare names from the host's base through Node's own module loader,
  // which the Cordis loader reaches with `--expose-internals` (set for every test in package.json;
  // a dsh installation reaches it through a native add-on instead).
  if (ctx.loader.internal === undefined) throw new Error('the preset harness needs node --expose-internals (tap sets it from package.json)')
  ctx.loader.builtins.include = Include
  ctx.loader.builtins.group = Group
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  await ctx.plugin(SystemPrompt, { persona: '' })
  await ctx.plugin(ToolRuntime)
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(realContext)
  if (options.mountHost !== false) {
    const host = await import(pathToFileURL(join(lib, 'index.ts')).href) as typeof hostModule
    await ctx.plugin(host, host.resolveConfig(options.host))
  }
  await ctx.plugin(AgentPresets, { default: Object.keys(options.presets)[0] ?? 'none', roots: [{ path: root, trust: 'user' }], includeUserRoot: false })
  const adapter = new ScriptedAdapter(script)
  ctx.llm.registerAdapter(['mock'], adapter)
  const errors: unknown[] = []
  ctx.on('agent/error', ({ error }) => { errors.push(error) })
  return {
    ctx, adapter, errors, root,
    async agent(session, preset) {
      const created = await ctx.agents.create({
        sessionId: SessionId(session),
        agentOptions: { provider: 'mock', model: 'mock-1' },
        ...(preset === null ? {} : { setup: async (agentCtx: Context) => void await ctx.agentPresets.mount(agentCtx, preset) }),
      } as never) as { agent: Agent }
      return created.agent
    },
    async turn(agent, prompt) {
      agent.followup(userMessage(prompt))
      await agent.whenIdle()
    },
    dispose: () => ctx.fiber.dispose(),
  }
}
