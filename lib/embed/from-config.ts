import type { EmbedConfig } from '../config.ts'
import { HttpEmbedder } from './http.ts'

/**
 * The embedder a configuration asks for, or null when `embed.baseUrl` is empty (the default).
 * The key comes from `apiKey`, else from the environment variable named by `apiKeyEnv`.
 * Throws a plain Error naming the field when the configuration cannot work.
 */
export function embedderFromConfig(config: EmbedConfig, env: NodeJS.ProcessEnv = process.env): HttpEmbedder | null {
  if (config.baseUrl.trim() === '') return null
  if (config.model.trim() === '') throw new Error('embed.model is required when embed.baseUrl is set')
  let apiKey = config.apiKey
  if (apiKey === '' && config.apiKeyEnv !== '') {
    apiKey = env[config.apiKeyEnv] ?? ''
    if (apiKey === '') throw new Error(`embed.apiKeyEnv names ${config.apiKeyEnv}, which is not set`)
  }
  return new HttpEmbedder({
    baseUrl: config.baseUrl.trim(),
    model: config.model.trim(),
    apiKey,
    dims: config.dims > 0 ? config.dims : undefined,
    languages: config.languages,
    timeoutMs: config.timeoutMs,
    batchSize: config.batchSize,
  })
}
