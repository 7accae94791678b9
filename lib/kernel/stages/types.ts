/**
 * HologramAgent's seven turn stages as types over dsh: each stage's input and the decision a
 * handler may return there, with exactly the powers the dsh hook under it allows. The mapping to
 * dsh hooks, and what differs from HologramAgent and why, is in docs/stages.md.
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { CallId, ContentBlock, StreamChunk, UserMessage } from '@deepseek-ai/dsh-llm'
import type { JsonValue, TurnEndReason } from '@deepseek-ai/dsh-session'

/**
 * The stages a handler can be registered on, in the order they occur in a turn:
 * on_input → pre_action → post_action → [before_toolcall → after_toolcall]×n → pre_action → … →
 * after_output.
 *
 * `before_output` is not offered: dsh has no gate between the model's final text and the user.
 * The text streams to the session (and the UI) chunk by chunk as it is generated
 * (dsh-agent-loop: each chunk is appended as `assistant/chunk` when it arrives), so a gate would
 * have to buffer the whole reply and turn streaming off. Transform final text chunk by chunk at
 * `post_action` instead, or observe it at `after_output`.
 */
export const STAGES = ['on_input', 'pre_action', 'post_action', 'before_toolcall', 'after_toolcall', 'after_output'] as const

/** A stage name (see {@link STAGES}). */
export type Stage = typeof STAGES[number]

/** What every stage input carries: the agent whose turn it is, and where in the turn. */
export interface StageTurn {
  agent: Agent
  /** The turn number (1-based, per session). */
  turn: number
  /** The step number within the turn (1-based): one model call plus the tool calls it asked for. */
  step: number
}

/**
 * on_input (dsh: the first step's `agent/pre-step`, and later steps that claimed human input):
 * the input that starts the step, as the inbox released it (the human prompt, steering, queued
 * context), before dsh's runtime-context snapshot and other plugins' additions are appended.
 */
export interface OnInputInput extends StageTurn {
  /** The claimed input, after earlier handlers' rewrites. */
  messages: readonly UserMessage[]
  signal: AbortSignal
}

/**
 * What an on_input handler may do. `undefined` leaves the input alone.
 * - `reject`: the turn ends `blocked`, the model is not called, and the input is dropped (dsh
 *   logs no reason; `reason` goes to the log of this plugin). Later handlers do not run.
 * - `rewrite`: these messages enter the step instead of the claimed input (logged durably, like
 *   any entered message).
 * - `reply`: the step runs with its input, but the model is not called: `text` is logged as the
 *   assistant's message of the step (attributed to the agent's model route, as dsh attributes
 *   every loop response) and the turn completes. Later handlers do not run.
 *
 * To rate-limit, `await` inside the handler (observe `signal`).
 */
export type OnInputDecision =
  | { kind: 'reject', reason?: string }
  | { kind: 'rewrite', messages: UserMessage[] }
  | { kind: 'reply', text: string }

/**
 * pre_action (dsh: the step's `system-prompt/assemble` waterfall, then its `agent/pre-step`):
 * the step's context is being assembled. Runs on every step, after on_input.
 */
export interface PreActionInput extends StageTurn {
  /** The step's input after on_input, plus messages added by earlier pre_action handlers. */
  messages: readonly UserMessage[]
  signal: AbortSignal
}

/** A system-prompt section or runtime-context entry added for one step. */
export interface StageText {
  name: string
  text: string
}

/**
 * What a pre_action handler may add (all optional; `undefined` adds nothing):
 * - `sections`: system-prompt text for this step's request, after every registered section
 *   (a changed system prompt costs a prompt-cache miss and a new `request/header`). Dropped when
 *   the agent's persona is `complete`, as dsh drops every other section then. `{{name}}` is
 *   interpolated as in any section, so text with an unknown variable is refused (counted as this
 *   handler's error).
 * - `contexts`: lines of this step's runtime-context snapshot (a user-role message dsh appends
 *   only when the snapshot text changed). Dropped when runtime context is suppressed.
 * - `messages`: user-role messages appended to this step's batch, after everything else. They are
 *   durable and re-sent with every later request of the session, so add them once per turn.
 */
export interface PreActionDecision {
  sections?: StageText[]
  contexts?: StageText[]
  messages?: UserMessage[]
}

/** post_action (dsh: `llm/stream` of the agent-loop request): one chunk of the model's answer. */
export interface PostActionInput extends StageTurn {
  chunk: StreamChunk
}

/**
 * What a post_action handler returns for a chunk: `undefined` keeps it, `null` drops it, a chunk
 * or a list of chunks replaces it. The log records what the stage yields. The request itself is
 * deep-frozen and cannot be changed here. Keep the stream well-formed: dropping a block means
 * dropping its `block-start`, deltas and `block-end` alike.
 */
export type PostActionDecision = StreamChunk | readonly StreamChunk[] | null

/** A tool call as before_toolcall and after_toolcall see it. */
export interface ToolCallInput extends StageTurn {
  callId: CallId
  name: string
  /** The parsed arguments, deep-frozen: dsh logs and presents them before any policy runs. */
  arguments: unknown
  signal: AbortSignal
}

/**
 * What a before_toolcall handler may decide (dsh: `tools/pre-execute`, plus `tools/execute` for
 * an authored result). `undefined` or `allow` passes to the next handler; the first `deny`,
 * `ask` or `result` decides and later handlers do not run.
 * - `deny`: the tool does not run; the model receives `Error: <reason>` as the tool's result and
 *   the turn goes on.
 * - `ask`: dsh's approval service decides (denied when none is mounted).
 * - `result`: the tool body does not run; `value` is checked against the tool's output schema and
 *   rendered by the tool, so the model sees what a real call would have returned.
 *
 * There is **no argument rewrite**: dsh freezes and logs the arguments before any policy runs, and
 * its pre-execute decision has no such variant. Deny with a reason that tells the model what to
 * send instead.
 */
export type BeforeToolcallDecision =
  | { kind: 'allow' }
  | { kind: 'deny', reason: string }
  | { kind: 'ask', reason?: string }
  | { kind: 'result', value: JsonValue }

/** after_toolcall (dsh: `tools/post-execute`): a finished call and its result. */
export interface AfterToolcallInput extends ToolCallInput {
  /** True for failures, including calls denied at before_toolcall. */
  isError: boolean
  /** What the model will see, after earlier handlers' replacements. */
  content: readonly ContentBlock[]
  /** The tool's value (successes only), after earlier handlers' replacements. */
  value?: JsonValue
}

/**
 * What an after_toolcall handler may decide (`undefined` keeps the result):
 * - `replace` with `content`: the model sees this content instead (an error stays an error).
 * - `replace` with `value` (successes only): the tool renders this value instead.
 * - `block`: the call becomes a failure whose content is `feedback`; later handlers do not run.
 * Any decision may carry `contexts`: user-role messages that enter the next step (logged).
 * Results cannot be reordered: dsh commits them in the model's order.
 */
export type AfterToolcallDecision =
  | { kind: 'replace', content: ContentBlock[], contexts?: UserMessage[] }
  | { kind: 'replace', value: JsonValue, contexts?: UserMessage[] }
  | { kind: 'attach', contexts: UserMessage[] }
  | { kind: 'block', feedback: ContentBlock[], contexts?: UserMessage[] }

/**
 * after_output (dsh: `session/event` for `turn/end`): the turn is over. Observe only: the session
 * refuses appends from inside its own event dispatch.
 */
export interface AfterOutputInput {
  agent: Agent
  turn: number
  /** Why the turn ended (`completed`, `blocked`, `error`, `aborted`, `max-tokens`). */
  reason: TurnEndReason
  /** The text of the turn's last assistant message ('' when there was none). */
  text: string
}

/** Inputs by stage. */
export interface StageInputs {
  on_input: OnInputInput
  pre_action: PreActionInput
  post_action: PostActionInput
  before_toolcall: ToolCallInput
  after_toolcall: AfterToolcallInput
  after_output: AfterOutputInput
}

/** Decisions by stage (`void` everywhere means "no opinion"). */
export interface StageDecisions {
  on_input: OnInputDecision | void
  pre_action: PreActionDecision | void
  post_action: PostActionDecision | void
  before_toolcall: BeforeToolcallDecision | void
  after_toolcall: AfterToolcallDecision | void
  after_output: void
}

/** A handler of one stage; it may be async. */
export type StageHandler<S extends Stage> = (input: StageInputs[S]) => StageDecisions[S] | Promise<StageDecisions[S]>

/**
 * Which agents a handler applies to: every agent (default), the agents of one dsh agent preset
 * (by the preset id in the session header), or those a predicate accepts.
 */
export type AgentScope = 'all' | { preset: string } | ((agent: Agent) => boolean)

/** Options of `stages.on`. */
export interface StageOptions {
  /** Handlers of a stage run in ascending order; equal orders in registration order. Default 0. */
  order?: number
  /** Which agents the handler applies to (default `'all'`). */
  agents?: AgentScope
  /** A name for logs and errors (default: the function's name). */
  name?: string
}

/** The counters of `stats().stages`. */
export interface StageStats {
  /** Handlers registered now, by stage. */
  handlers: Record<Stage, number>
  /** Handler calls, by stage. */
  calls: Record<Stage, number>
  /** Handler calls that threw (logged; the turn went on as if the handler had returned nothing). */
  errors: Record<Stage, number>
  /** Turns ended by the loop exits of the host row. */
  exits: { maxStepsPerTurn: number, stopWhenAllDenied: number }
}
