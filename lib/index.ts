import { resolve } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type {} from '@deepseek-ai/dsh-system-prompt'
import type {} from '@deepseek-ai/dsh-tools'
import { Config, defaultStorePath } from './config.ts'
import { ScopePolicy } from './scope-policy.ts'
import { registerCompactionCapture } from './kernel/layers/capture.ts'
import { registerHeartbeat } from './kernel/layers/heartbeat.ts'
import { registerScenes } from './kernel/scenes/register.ts'
import { checkSceneKey } from './store/scene-key.ts'
import { registerIndexUpkeep } from './plugin/index-upkeep.ts'
import { registerStatistics } from './plugin/statistics.ts'
import { attachHostSurface, registerSurface } from './plugin/surface.ts'
import { untraced } from './plugin/untraced.ts'
import { StableMem } from './service.ts'
import { checkTeamConfig } from './team/config.ts'
import { teamTarget } from './team/connection.ts'

/** The plugin's name; also the `source.plugin` of every message it injects. */
export const name = 'dsh-stablemem'

/** Only services a bare agent loop has; everything else is optional, so it mounts in any composition. */
export const inject = ['tools', 'systemPrompt']

/**
 * The host row: mounts the memory, the `ctx.stablemem` service over the store file, and (by
 * `surface`) the commit tool, the runtime-context line and the per-turn recall injection for the
 * agents no `dsh-stablemem/kernel` preset row serves.
 *
 * The service name is isolated below each instance, so an instance's tool, context line and recall
 * always reach its own store even when two instances are mounted side by side (without that, the
 * second instance's service failed to register and its tool wrote into the first one's file).
 * The first instance in a scope also publishes its service as `ctx.stablemem` for other plugins;
 * when it is unloaded, another instance still mounted takes over.
 */
export async function apply(ctx: Context, config: Config): Promise<void> {
  const resolvedPath = config.path === '' ? defaultStorePath() : config.path === ':memory:' ? config.path : resolve(config.path)
  const scopePolicy = new ScopePolicy(config.scopes) // an invalid alias table fails the load here, naming the field
  checkTeamConfig(config.team, teamTarget) // so does an incomplete `team:` block
  checkSceneConfig(config)
  const own = ctx.isolate('stablemem')
  own.plugin(StableMem, { ...config, resolvedPath, scopePolicy })
  await own.inject(['stablemem'], (inner) => {
    const surface = attachHostSurface(inner.stablemem, config.surface, config, resolvedPath)
    if (config.surface !== 'service') registerSurface(inner, config, resolvedPath, name, (scope) => surface.hostServes(scope))
    registerCompactionCapture(inner, () => inner.stablemem, config)
    registerHeartbeat(inner, () => inner.stablemem, config)
    const memory = untraced(inner.stablemem) // scenes run on every turn (lib/plugin/untraced.ts)
    registerScenes(inner, () => memory)
    registerStatistics(inner)
    if (config.indexUpkeep && resolvedPath !== ':memory:') registerIndexUpkeep(inner, () => inner.stablemem)
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

/** Fails the load on a `scenes` entry that is no scene key, or a `timeZone` Intl does not know, naming the field. */
function checkSceneConfig(config: Config): void {
  config.scenes.forEach((key, i) => checkSceneKey(key, `scenes[${i}]`, true))
  if (config.timeZone === '') return
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: config.timeZone })
  } catch {
    throw new Error(`timeZone: ${JSON.stringify(config.timeZone)} is not an IANA time zone (e.g. Asia/Shanghai)`)
  }
}

/** Publishes `service` as `ctx.stablemem` unless another instance already does; true if it did. */
function publish(ctx: Context, service: StableMem): boolean {
  if (ctx.get('stablemem', false) !== undefined) return false
  ctx.provide('stablemem', service)
  return true
}

export { Config, EmbedConfig, ScopesConfig, defaultStorePath, resolveConfig, type SurfaceMode } from './config.ts'
export { ScopePolicy, type RecallView, type ScopeContext, type ScopeTarget } from './scope-policy.ts'
export type { ScopeName } from './store/scope-key.ts'
export type { ScopeCount } from './store/scopes.ts'
export { placeOf, presetOf } from './plugin/session-place.ts'
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
export { StableMem } from './service.ts'
export type { RecallCallOptions, ServiceCommitInput, ServiceRecallOptions, ServiceStats, VectorStats } from './service/types.ts'
export { gateHits, type GateOptions } from './recall/gate.ts'
export * from './kernel/stages/index.ts'
export type { Feature, SceneCardMode, SceneDetail, Scenes, SceneStats, SceneSummary, TurnScene } from './kernel/scenes/api.ts'
export { normalizeSceneKey } from './store/scene-key.ts'
