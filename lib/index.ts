import { resolve } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type {} from '@deepseek-ai/dsh-system-prompt'
import type {} from '@deepseek-ai/dsh-tools'
import { Config, defaultStorePath, recallToolNameOf } from './config.ts'
import { commitTool } from './plugin/commit-tool.ts'
import { contextLine, contextName } from './plugin/context-line.ts'
import { forgetTool } from './plugin/forget-tool.ts'
import { registerPreStep } from './plugin/pre-step.ts'
import { recallTool } from './plugin/recall-tool.ts'
import { registerCompactionCapture } from './kernel/layers/capture.ts'
import { registerHeartbeat } from './kernel/layers/heartbeat.ts'
import { registerStatistics } from './plugin/statistics.ts'
import { StableMem } from './service.ts'

/** The plugin's name; also the `source.plugin` of every message it injects. */
export const name = 'dsh-stablemem'

/** Only services a bare agent loop has; everything else is optional, so it mounts in any composition. */
export const inject = ['tools', 'systemPrompt']

/**
 * Mounts the memory: the `ctx.stablemem` service over the store file, the commit tool, the
 * runtime-context line, and the per-turn recall injection.
 *
 * The service name is isolated below each instance, so an instance's tool, context line and recall
 * always reach its own store even when two instances are mounted side by side (without that, the
 * second instance's service failed to register and its tool wrote into the first one's file).
 * The first instance in a scope also publishes its service as `ctx.stablemem` for other plugins;
 * when it is unloaded, another instance still mounted takes over.
 */
export async function apply(ctx: Context, config: Config): Promise<void> {
  const resolvedPath = config.path === '' ? defaultStorePath() : config.path === ':memory:' ? config.path : resolve(config.path)
  const own = ctx.isolate('stablemem')
  own.plugin(StableMem, { ...config, resolvedPath })
  await own.inject(['stablemem'], (inner) => {
    inner.tools.register(commitTool(inner, config.toolName))
    inner.tools.register(recallTool(inner, recallToolNameOf(config)))
    registerCompactionCapture(inner, () => inner.stablemem, config)
    registerHeartbeat(inner, () => inner.stablemem, config)
    if (config.forgetTool.enabled) inner.tools.register(forgetTool(inner, config.forgetTool))
    inner.systemPrompt.context({ name: contextName(resolvedPath, config.toolName), order: 500, text: () => contextLine(inner.stablemem, config.toolName) })
    registerPreStep(inner, config, name)
    registerStatistics(inner)
    if (!publish(ctx, inner.stablemem)) {
      inner.logger('stablemem').info('ctx.stablemem is provided by another instance; %s is reachable through its tool %s', resolvedPath, config.toolName)
      // When the publishing instance goes away, the next one still mounted takes its place, so
      // other plugins keep a memory service for as long as any instance is loaded.
      ctx.on('internal/service', (service) => {
        if (service === 'stablemem' && publish(ctx, inner.stablemem)) {
          inner.logger('stablemem').info('ctx.stablemem is now %s (the instance that published it was unloaded)', resolvedPath)
        }
      })
    }
  })
}

/** Publishes `service` as `ctx.stablemem` unless another instance already does; true if it did. */
function publish(ctx: Context, service: StableMem): boolean {
  if (ctx.get('stablemem', false) !== undefined) return false
  ctx.provide('stablemem', service)
  return true
}

export { Config, EmbedConfig, defaultStorePath, resolveConfig } from './config.ts'
export { StableMemError, type StableMemErrorCode } from './errors.ts'
export { recallBlocks } from './recall/recall.ts'
export { recallBlocksHybrid, type FusionMethod, type HybridOptions } from './recall/hybrid.ts'
export { abstentionOf, isAbstention, type Abstention, type RecallHits } from './recall/abstain.ts'
export type { DegradedReason, Hit, HybridHits, RecallOptions } from './recall/types.ts'
export { EmbedError, type EmbedErrorKind, type EmbedOptions, type Embedder } from './embed/types.ts'
export { HttpEmbedder, type HttpEmbedderOptions } from './embed/http.ts'
export { embedderFromConfig } from './embed/from-config.ts'
export { backfillVectors, type BackfillOptions, type BackfillProgress } from './embed/backfill.ts'
export { blockId } from './store/block-id.ts'
export { BlockStore, type StoreOptions } from './store/store.ts'
export type { Block, CommitInput, CommitResult, Edge, EdgeInput, StoreStats } from './store/types.ts'
export type { ForgetFilter, ForgetOptions, ForgetResult, ForgetTarget, VacuumResult } from './store/forget.ts'
export type { DuplicatePolicy } from './store/duplicates.ts'
export { StableMem, type RecallCallOptions, type ServiceStats, type VectorStats } from './service.ts'
export { gateHits, type GateOptions } from './recall/gate.ts'
export * from './kernel/stages/index.ts'
