import Schema from '@deepseek-ai/schemastery'
import { MAX_VECTOR_DIMS } from './embed/types.ts'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE } from './recall/gate.ts'
import type { ScopeName } from './store/scope-key.ts'
import type { SecretsPolicy } from './secrets.ts'
import type { DuplicatePolicy } from './store/duplicates.ts'
import { TeamConfig } from './team/config.ts'

/**
 * Who gives an agent its memory surface (the tools, the context line, the per-turn recall):
 * - `auto`: the host row, for every agent not on a preset whose kernel row claimed it; the kernel
 *   row for the agents that joined its preset.
 * - `global`: the host row, for every agent; kernel rows stand down.
 * - `service`: kernel rows only; the host row owns the store and `ctx.stablemem`, nothing more.
 */
export type SurfaceMode = 'auto' | 'global' | 'service'

/** The plugin's configuration, as written under `config:` in a dsh composition. */
export interface Config {
  path: string
  topK: number
  inject: boolean
  querySources: string[]
  injectBudgetChars: number
  minScore: number
  minRelevance: number
  relevanceFalloff: number
  maxBlockChars: number
  toolName: string
  secrets: SecretsPolicy
  recallToolName: string
  duplicates: DuplicatePolicy
  forgetTool: ForgetToolConfig
  embed: EmbedConfig
  layers: LayersConfig
  scopes: ScopesConfig
  maxStepsPerTurn: number
  stopWhenAllDenied: boolean
  surface: SurfaceMode
  team: TeamConfig
  scenes: string[]
  sceneCard: 'context' | 'section' | 'off'
  sceneCardChars: number
  sceneHalfLifeDays: number
  channel: string
  timeZone: string
  indexUpkeep: boolean
}

/** Compaction capture and cooling (`layers:`, docs/layers.md). */
export interface LayersConfig {
  capture: boolean
  toolResultChars: number
  coolAfterHours: number
  coolMaxAccess: number
  coolRetryHours: number
  coolBatch: number
  heartbeatMinutes: number
  distiller: 'deterministic' | 'llm'
  distillerProvider: string
  distillerModel: string
}

/** Schema of `layers:`; every field has a default. */
export const LayersConfig: Schema<LayersConfig> = Schema.object({
  capture: Schema.boolean().default(true)
    .description('When compaction takes messages out of the context window, keep the person\'s messages, the assistant\'s text and tool results as cold blocks (L2) that recall can bring back.'),
  toolResultChars: Schema.natural().min(100).max(1_000_000).default(4_000)
    .description('Longest part of one tool result kept at capture, in characters (the rest is cut before any other work).'),
  coolAfterHours: Schema.number().min(0).max(87_600).default(72)
    .description('A cold block idle (not recalled) for longer than this, in hours, is distilled into stable facts (L3).'),
  coolMaxAccess: Schema.natural().max(1_000_000).default(2)
    .description('Only cold blocks recalled at most this many times cool; more often recalled ones stay as they are.'),
  coolRetryHours: Schema.number().min(0).max(87_600).default(24)
    .description('A cold block that yielded no fact is tried again after this many hours (it is never deleted).'),
  coolBatch: Schema.natural().min(1).max(10_000).default(100)
    .description('Most blocks one cooling tick distils, so a tick stays short whatever the store size.'),
  heartbeatMinutes: Schema.natural().max(10_080).default(60)
    .description('Minutes between cooling ticks in the dsh process. 0: no timer (run `stablemem cool` instead).'),
  distiller: Schema.union(['deterministic', 'llm'] as const).default('deterministic')
    .description('`deterministic`: offline rules that keep only values found verbatim in the text. `llm`: ask the model through dsh (`distillerProvider`/`distillerModel`) for JSON fields, checked by the same rules; any failure falls back to `deterministic`.'),
  distillerProvider: Schema.string().default('')
    .description('dsh provider route of the `llm` distiller (e.g. `deepseek`).'),
  distillerModel: Schema.string().default('')
    .description('Model of the `llm` distiller.'),
})

/** The optional model-facing forget tool (`forgetTool:`); off unless `enabled`. */
export interface ForgetToolConfig {
  enabled: boolean
  name: string
  maxPerTurn: number
}

/**
 * Schema of `forgetTool:`. Off by default: a note planted by a prompt injection must not be able
 * to make the model wipe memory, so deleting is a user's command unless a user turns this on.
 */
export const ForgetToolConfig: Schema<ForgetToolConfig> = Schema.object({
  enabled: Schema.boolean().default(false)
    .description('Offer the model a tool that forgets notes by id (off by default: a stored prompt injection must not be able to wipe memory). Every deletion is logged with its session and turn.'),
  name: Schema.string().pattern(/^[a-zA-Z0-9_-]{1,64}$/).default('stablemem_forget')
    .description('Name of the forget tool the model sees.'),
  maxPerTurn: Schema.natural().min(1).max(100).default(3)
    .description('Most notes the forget tool may delete in one turn; further calls in that turn are refused.'),
})

/** Optional embedding endpoint (`embed:`); off while `baseUrl` is empty. */
export interface EmbedConfig {
  baseUrl: string
  model: string
  apiKey: string
  apiKeyEnv: string
  dims: number
  languages: string[]
  timeoutMs: number
  batchSize: number
  recallBudgetMs: number
  minCosine: number
}

/** Schema of `embed:`; every field has a default, so the whole block may be omitted. */
export const EmbedConfig: Schema<EmbedConfig> = Schema.object({
  baseUrl: Schema.string().default('')
    .description('Base URL of an OpenAI-compatible embeddings API (OpenAI, Ollama, vLLM, TEI, SiliconFlow …); `/embeddings` is appended. Empty (default): no vectors, lexical recall only, no network traffic.'),
  model: Schema.string().default('')
    .description('Embedding model name sent with every request and stored with every vector; changing it starts a new vector set (run the backfill).'),
  apiKey: Schema.string().role('secret').default('')
    .description('API key of the endpoint. Prefer `apiKeyEnv` so the key stays out of config files.'),
  apiKeyEnv: Schema.string().pattern(/^[A-Za-z_][A-Za-z0-9_]*$|^$/).default('')
    .description('Name of the environment variable holding the API key, read when the plugin starts (used when `apiKey` is empty).'),
  dims: Schema.natural().max(MAX_VECTOR_DIMS).default(0)
    .description('Expected vector length; an answer of another length is rejected. 0: taken from the first answer.'),
  languages: Schema.array(Schema.string().pattern(/^[a-z]{2,3}$/)).default(['en'])
    .description('Languages the model handles well (`en`, `zh`, …). Vectors take part in recall only for queries and notes in these languages; others get the lexical result.'),
  timeoutMs: Schema.natural().min(100).max(600_000).default(10_000)
    .description('Timeout of one HTTP request, in ms (background embedding of notes).'),
  batchSize: Schema.natural().min(1).max(2048).default(32)
    .description('Texts per embeddings request.'),
  recallBudgetMs: Schema.natural().min(10).max(10_000).default(300)
    .description('How long recall waits for the query vector, in ms; when it runs out the turn gets the lexical result.'),
  minCosine: Schema.number().min(-1).max(1).default(0.2)
    .description('Vector candidates whose cosine to the query is below this are ignored, so an unrelated note is never recalled on vector rank alone.'),
})

/** The `scopes:` block: which notes a session saves into and recalls from. */
export interface ScopesConfig {
  defaultScope: ScopeName
  workspaceAliases: Record<string, string>
  recallGlobal: boolean
}

/** Schema of `scopes:` (which notes a session saves into and recalls from). */
export const ScopesConfig: Schema<ScopesConfig> = Schema.object({
  defaultScope: Schema.union(['workspace', 'global', 'preset'] as const).default('workspace')
    .description('Scope of a note saved without one: `workspace` (the session\'s working directory; global when it has none), `global`, or `preset` (the agent preset; else as `workspace`).'),
  workspaceAliases: Schema.dict(Schema.string()).default({})
    .description('Absolute directories that are the same workspace as another one, e.g. `{"/home/me/proj-wt": "/home/me/proj"}`; chains are followed, cycles are refused at load.'),
  recallGlobal: Schema.boolean().default(true)
    .description('Recall global notes beside the workspace\'s and the preset\'s. `false`: a session with a workspace or preset sees only those.'),
})

/**
 * The configuration schema. Cordis validates it before `apply`, so a malformed value fails the
 * plugin at load with a message naming the field; `defaultConfig()` fills the defaults for callers
 * outside a composition (the CLI, benchmarks).
 */
export const Config: Schema<Config> = Schema.object({
  path: Schema.string().default('')
    .description('SQLite file of the store. Empty: `$DSH_HOME/stablemem/memory.db` (`~/.dsh/stablemem/memory.db` when DSH_HOME is unset). `:memory:` keeps nothing.'),
  topK: Schema.natural().min(1).max(20).default(5)
    .description('How many recalled notes are injected per turn at most.'),
  inject: Schema.boolean().default(true)
    .description('Recall and inject notes on the first step of every turn. `false`: tool and service only.'),
  querySources: Schema.array(Schema.string().pattern(/^[a-z][a-z0-9-]*$/)).default(['user'])
    .description('Message `source.kind` values whose text may serve as the recall query. Every other kind is ignored (fail closed).'),
  injectBudgetChars: Schema.natural().min(500).max(50_000).default(2_000)
    .description('Upper bound on the characters of the injected recall message, header included (at least 500, so one note fits beside the header).'),
  minScore: Schema.number().min(0).max(1).default(0)
    .description('Non-exact hits scoring below this are not injected (exact-symbol hits always are). The score is relative to the best candidate, so this cannot say "nothing is relevant": use `minRelevance`.'),
  minRelevance: Schema.number().min(0).max(1).default(DEFAULT_MIN_RELEVANCE)
    .description('The relevance gate: nothing is injected unless the relevances of the best five non-exact notes sum to this. A note\'s relevance is the share of what is specific in the message (its rare words, CJK bigrams, names and numbers, weighted by rarity) that the note holds, or twice the share of the note\'s own terms the message mentions, whichever is larger; 0 for every note when the message names only names the store has never seen. When the turn opens, its notes are injected unless they fall off (`relevanceFalloff`). 0 turns the gate off.'),
  relevanceFalloff: Schema.number().min(0).max(1).default(DEFAULT_FALLOFF)
    .description('Adaptive count: a note whose relevance is below this share of the most relevant note\'s is left out, so fewer than `topK` notes are injected when relevance falls off sharply. 0 keeps up to `topK`.'),
  maxBlockChars: Schema.natural().min(16).max(1_000_000).default(32_768)
    .description('Longest note accepted by commit, in characters; longer text is refused with an error.'),
  toolName: Schema.string().pattern(/^[a-zA-Z0-9_-]{1,64}$/).default('stablemem_commit')
    .description('Name of the commit tool the model sees; change it to mount two stores in one agent.'),
  secrets: Schema.union(['redact', 'refuse', 'allow'] as const).default('redact')
    .description('Credentials in a note (API keys, tokens, private keys, passwords in URLs or `password=`): ' +
      '`redact` stores the note with them masked, `refuse` rejects the note with an error, `allow` stores them as written. ' +
      'Recalled notes are masked again before they reach the prompt, whatever this says.'),
  recallToolName: Schema.string().pattern(/^[a-zA-Z0-9_-]{0,64}$/).default('')
    .description('Name of the search tool the model sees (`query`, optional `scope`: `session` or `all`). Empty: `toolName` with `commit` replaced by `recall` (`stablemem_recall`), or `toolName` + `_recall`.'),
  duplicates: Schema.union(['keep', 'link', 'skip'] as const).default('link')
    .description('A new note that is the same as a current one after normalising punctuation, spacing, full-width forms and case (never when a number or word differs): ' +
      '`link` stores it with a `duplicates` edge to the existing note, `keep` stores it without one, `skip` stores nothing. Commit reports `duplicateOf` in every case.'),
  forgetTool: ForgetToolConfig.description('Optional model tool that forgets notes by id. Off by default.'),
  embed: EmbedConfig.description('Optional embedding endpoint for hybrid (lexical + vector) recall. Off by default.'),
  layers: LayersConfig.description('Compaction capture (L1 → L2) and cooling (L2 → L3). On by default.'),
  scopes: ScopesConfig.description('Memory scopes: global, workspace and agent-preset notes.'),
  maxStepsPerTurn: Schema.natural().max(10_000).default(0)
    .description('Loop exit: end a turn (`blocked`) before its step N+1, so a model that keeps calling tools stops at N model calls. A step that claimed human input (steering) still runs. 0: no limit (dsh has none).'),
  stopWhenAllDenied: Schema.boolean().default(false)
    .description('Loop exit: end a turn (`blocked`) after a step whose every tool call was denied, unless the next step claimed new input (which is never dropped).'),
  surface: Schema.union(['auto', 'global', 'service'] as const).default('auto')
    .description('Which row gives agents the tool, context line and recall: `auto` this row for every agent except those on a preset with the `dsh-stablemem/kernel` row (that row serves them), ' +
      '`global` this row for every agent (kernel rows stand down), `service` only kernel rows (this row keeps the store and `ctx.stablemem`).'),
  team: TeamConfig.description('Optional shared team layer on PostgreSQL (docs/team.md). Off by default.'),
  scenes: Schema.array(Schema.string()).default([])
    .description('Declared scene keys created at start (docs/scenes.md), e.g. `chan:qq` or `chan:qq/group:ops`: notes attached to one are recalled in every situation under it. Keys are normalised (lower case, `_` for other characters); one with a line break or nothing a key can keep fails the load.'),
  sceneCard: Schema.union(['context', 'section', 'off'] as const).default('context')
    .description('The scene card (the current situation and its strongest conventions): `context` a line of the runtime-context snapshot (no prompt-cache miss; one stale snapshot per switch), `section` the last system-prompt section (one cache miss per scene switch), `off` none.'),
  sceneCardChars: Schema.natural().min(100).max(4_000).default(600)
    .description('Longest scene card, in characters.'),
  sceneHalfLifeDays: Schema.number().min(0).max(3_650).default(30)
    .description('Half-life of a note\'s attachment to a scene, in days: a ref not refreshed for this long halves (at most once per period), and is removed below 0.05. 0: no decay.'),
  channel: Schema.string().default('')
    .description('Channel of human prompts that name none (a channel bridge stamps `source.channel`; web prompts are `web`). Empty: such prompts have no channel feature.'),
  timeZone: Schema.string().default('')
    .description('IANA time zone of the part-of-day feature when a prompt carries no `clientTimeZone`. Empty: the process zone.'),
  indexUpkeep: Schema.boolean().default(true)
    .description('While no turn runs, merge the full-text index once it has 8 segments or more, in short slices (the small segments of recent commits with each other; the whole index when its segments are of comparable size), so every query seeks few (docs/recall.md, "Index upkeep"). `false`: run `stablemem upkeep` yourself.'),
})

/** A complete configuration from a partial one, validated like a composition would validate it. */
export function resolveConfig(partial: Partial<Config> = {}): Config {
  return Config(partial as Config)
}

export { defaultStorePath } from './dsh-home.ts'

/** The search tool's name: `recallToolName`, or one derived from `toolName` so two instances never collide. */
export function recallToolNameOf(config: Pick<Config, 'toolName' | 'recallToolName'>): string {
  if (config.recallToolName !== '') return config.recallToolName
  return config.toolName.includes('commit') ? config.toolName.replace('commit', 'recall') : `${config.toolName}_recall`
}
