/**
 * Binds a `StageHost` to dsh's hooks, once per host row, for every agent of the process (bare
 * headless agents and preset-joined ones alike): which hook each stage runs in, how its decisions
 * become dsh decisions, and the two loop exits. docs/stages.md has the table with file:line.
 * post_action over the stream is `post-action-stream.ts`; the message checks are `messages.ts`.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import { isAgentLoopRequest, type ContentBlock, type StreamChunk, type UserMessage } from '@deepseek-ai/dsh-llm'
import type { JsonValue } from '@deepseek-ai/dsh-session'
import type { PromptAssembly } from '@deepseek-ai/dsh-system-prompt'
import type { PostToolDecision, PreToolDecision, ToolExecution, ToolExecutionResult } from '@deepseek-ai/dsh-tools'
import type { StageHost } from './host.ts'
import { badText, replaceClaimed, replyChunks, userMessages } from './messages.ts'
import { PostActionStream } from './post-action-stream.ts'
import { STAGES, type AfterToolcallInput, type OnInputInput, type PostActionInput, type PreActionInput, type Stage } from './types.ts'

/** The loop exits HologramAgent's README promised, as options of the host row (0 / false: off). */
export interface LoopExits {
  /** End the turn (`blocked`) before step N+1; a step that claimed human input still runs. */
  maxStepsPerTurn: number
  /** End the turn (`blocked`) after a step whose every tool call was denied and which claimed no new input. */
  stopWhenAllDenied: boolean
}

/** What on_input, pre_action and the exits decided for the coming step, applied at its pre-step. */
type Prepared =
  | { kind: 'reject' }
  | { kind: 'enter', claimed: readonly UserMessage[], input: readonly UserMessage[] | undefined, added: UserMessage[], reply: string | undefined }

/** Per-session bookkeeping, from the session's own events. */
interface AgentState {
  agent: Agent | undefined
  turn: number
  /** Steps of the current turn that have ended. */
  stepsEnded: number
  /** The next assembly of this agent is the one of a step (set at turn/start and step/end). */
  assemblyDue: boolean
  claimed: UserMessage[]
  prepared: Prepared | undefined
  reply: string | undefined
  calls: number
  denied: number
  lastText: string
}

/** The handle the service keeps: settle pending after_output handlers. */
export interface StageBinding {
  /** Resolves when every after_output handler started so far has finished. */
  idle(): Promise<void>
}

/**
 * Registers the listeners, each only while a handler (or a loop exit) needs its hook: every
 * listener costs dsh a traced call per dispatch (about 0.1 ms per turn for `session/event`
 * alone), so a hook no handler needs is not listened to at all, and adding or removing a handler
 * adds or removes the listeners it needs. A listener that runs stays cheap when no handler
 * applies to the agent: one map lookup and the `has` check, then straight to `next()`.
 */
export function bindStages(ctx: Context, host: StageHost, exits: LoopExits): StageBinding {
  const states = new Map<string, AgentState>()
  const pending = new Set<Promise<void>>()
  const authored = new WeakMap<symbol, JsonValue>()
  /** Results authored at before_toolcall whose execution has not come yet (keeps `tools/execute` listened to). */
  let outstanding = 0
  const never = new AbortController().signal
  const exitsOn = exits.maxStepsPerTurn > 0 || exits.stopWhenAllDenied
  const handlers = (...stages: Stage[]) => stages.some((stage) => host.count(stage) > 0)
  const listeners: Array<{ needed: () => boolean, listen: () => () => unknown, stop: (() => unknown) | undefined }> = []
  /** Listens to a dsh hook (`listen` registers it and returns its disposer) while `needed()` holds. */
  const listenWhile = (needed: () => boolean, listen: () => () => unknown): void => {
    listeners.push({ needed, listen, stop: undefined })
  }
  let unbound = false
  ctx.effect(() => () => { unbound = true }, 'stablemem.stages.binding')
  const sync = (): void => {
    if (unbound) return
    for (const l of listeners) {
      const want = l.needed()
      if (want && l.stop === undefined) l.stop = l.listen()
      else if (!want && l.stop !== undefined) {
        l.stop()
        l.stop = undefined
      }
    }
  }
  /** The turn bookkeeping (turn and step numbers, the agent, the last text, turn/end) serves every stage. */
  const anyHandler = () => exitsOn || handlers(...STAGES)
  /** on_input and pre_action run at the step's assembly and are applied at its pre-step, as are the exits. */
  const stepHandlers = () => exitsOn || handlers('on_input', 'pre_action')

  const state = (id: string): AgentState => {
    let st = states.get(id)
    if (st === undefined) {
      st = { agent: undefined, turn: 0, stepsEnded: 0, assemblyDue: false, claimed: [], prepared: undefined, reply: undefined, calls: 0, denied: 0, lastText: '' }
      states.set(id, st)
    }
    return st
  }

  async function prepare(st: AgentState, agent: Agent, claimed: readonly UserMessage[], signal: AbortSignal, assembly: PromptAssembly | undefined): Promise<Prepared> {
    const turn = st.turn
    const step = st.stepsEnded + 1
    const human = claimed.some((m) => m.source.kind === 'user')
    if (exits.maxStepsPerTurn > 0 && step > exits.maxStepsPerTurn && !human) {
      host.exited('maxStepsPerTurn')
      return { kind: 'reject' }
    }
    // A reject drops the input its step claimed, so a step that claimed any (steering, queued
    // context) runs: the model sees that input instead of the user losing it.
    if (exits.stopWhenAllDenied && step > 1 && st.calls > 0 && st.denied === st.calls && claimed.length === 0) {
      host.exited('stopWhenAllDenied')
      return { kind: 'reject' }
    }
    let input = claimed
    let reply: string | undefined
    if ((step === 1 || human) && host.has('on_input', agent)) {
      let rejected = false
      // One argument for the handlers until one rewrites the input (then the next ones see the rewrite).
      let arg: OnInputInput | undefined
      await host.run('on_input', agent, () => (arg ??= { agent, turn, step, messages: input, signal }), (d, name) => {
        if (d.kind === 'reject') {
          rejected = true
          ctx.logger('stablemem').info('stage on_input handler %s rejected turn %d%s', name, turn, d.reason ? `: ${d.reason}` : '')
          return 'stop'
        }
        if (d.kind === 'rewrite' && userMessages(d.messages)) {
          input = d.messages
          arg = undefined
          return 'next'
        }
        if (d.kind === 'reply' && typeof d.text === 'string') {
          reply = d.text
          return 'stop'
        }
        host.refused('on_input', name, `not a decision: ${JSON.stringify(d)}`)
        return 'next'
      })
      if (rejected) return { kind: 'reject' }
    }
    const added: UserMessage[] = []
    if (host.has('pre_action', agent)) {
      // One argument (and batch) for the handlers until one adds to it (then the next ones see the additions).
      let arg: PreActionInput | undefined
      await host.run('pre_action', agent, () => (arg ??= { agent, turn, step, messages: [...input, ...added], signal }), (d, name) => {
        if (userMessages(d.messages)) {
          added.push(...d.messages)
          arg = undefined
        }
        else if (d.messages !== undefined) host.refused('pre_action', name, 'messages must be user messages made with createUserMessage')
        for (const [key, target] of [['sections', assembly?.sections], ['contexts', assembly?.contexts]] as const) {
          const texts = d[key]
          if (texts === undefined) continue
          if (target === undefined) {
            host.refused('pre_action', name, `${key} need the step's prompt assembly, which this step did not go through`)
            continue
          }
          for (const t of texts) {
            const why = badText(t, assembly!)
            if (why === undefined) target.push({ name: t.name, text: t.text })
            else host.refused('pre_action', name, `${key.slice(0, -1)} ${JSON.stringify(t?.name)}: ${why}`)
          }
        }
        return 'next'
      })
    }
    return { kind: 'enter', claimed, input: input === claimed ? undefined : input, added, reply }
  }

  listenWhile(anyHandler, () => ctx.on('session/event', (session, event) => {
    const st = states.get(String(session.id))
    if (event.type === 'turn/start') {
      const s = st ?? state(String(session.id))
      Object.assign(s, { turn: event.data.turn, stepsEnded: 0, assemblyDue: true, claimed: [], prepared: undefined, reply: undefined, calls: 0, denied: 0, lastText: '' })
    } else if (st === undefined) {
      return
    } else if (event.type === 'step/end') {
      st.stepsEnded = event.data.step
      st.assemblyDue = true
    } else if (event.type === 'assistant/message') {
      st.lastText = event.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    } else if (event.type === 'turn/end') {
      st.assemblyDue = false
      st.prepared = undefined
      st.reply = undefined
      const agent = st.agent
      if (agent !== undefined && host.has('after_output', agent)) {
        const input = { agent, turn: event.data.turn, reason: event.data.reason, text: st.lastText }
        const run = host.run('after_output', agent, () => input, () => 'next')
        if (run !== undefined) { // synchronous handlers have finished already
          pending.add(run)
          void run.finally(() => pending.delete(run))
        }
      }
    }
  }))

  listenWhile(anyHandler, () => ctx.on('agent/inbox/claimed', ({ agent, message }) => {
    const st = state(String(agent.id))
    st.agent = agent
    st.claimed.push(message)
  }))

  listenWhile(anyHandler, () => ctx.on('agent/disposed', ({ agent }) => { states.delete(String(agent.id)) }))

  // on_input and pre_action run while the step's prompt is assembled: dsh assembles it (and the
  // runtime-context snapshot) before the pre-step decision, so that is the last moment at which
  // sections and contexts still reach this step's request. Their decisions are applied at pre-step.
  listenWhile(stepHandlers, () => ctx.on('system-prompt/assemble', (assembly, context, next) => {
    const agent = context.agent
    const st = agent === undefined ? undefined : states.get(String(agent.id))
    if (agent === undefined || st === undefined || !st.assemblyDue) return next()
    st.assemblyDue = false
    st.agent = agent
    return next().then(async (result) => {
      st.prepared = await prepare(st, agent, st.claimed, context.signal ?? never, result)
      return result
    })
  }))

  listenWhile(stepHandlers, () => ctx.on('agent/pre-step', async (payload, next): Promise<PreStepDecision> => {
    const st = state(String(payload.agent.id))
    st.agent = payload.agent
    st.turn = payload.turn
    st.stepsEnded = payload.step - 1
    // Without a seen assembly (a host that assembles differently), the stages still run here;
    // only pre_action's sections and contexts cannot reach the request any more.
    const prepared = st.prepared ?? await prepare(st, payload.agent, payload.messages, payload.signal, undefined)
    st.prepared = undefined
    st.claimed = []
    st.calls = 0
    st.denied = 0
    if (prepared.kind === 'reject') return { kind: 'reject' }
    const decision = await next()
    if (decision.kind !== 'enter') return decision
    let messages = decision.messages
    if (prepared.input !== undefined) messages = replaceClaimed(messages, prepared.claimed, prepared.input)
    if (prepared.added.length > 0) messages = [...messages, ...prepared.added]
    st.reply = prepared.reply
    return messages === decision.messages ? decision : { kind: 'enter', messages }
  }, { prepend: true }))

  // on_input's canned reply is streamed here too.
  listenWhile(() => handlers('post_action', 'on_input'), () => ctx.on('llm/stream', (options, next) => {
    const st = isAgentLoopRequest(options) && options.sessionId !== undefined ? states.get(String(options.sessionId)) : undefined
    const agent = st?.agent
    if (st === undefined || agent === undefined) return next()
    if (st.reply !== undefined) {
      const text = st.reply
      st.reply = undefined
      return replyChunks(text)
    }
    const entries = host.applicable('post_action', agent)
    if (entries.length === 0) return next()
    const stream = next()
    const input: PostActionInput = { agent, turn: st.turn, step: st.stepsEnded + 1, chunk: undefined as unknown as StreamChunk }
    return { [Symbol.asyncIterator]: () => new PostActionStream(host, stream[Symbol.asyncIterator](), entries, input) }
  }))

  listenWhile(() => exits.stopWhenAllDenied || handlers('before_toolcall'), () => ctx.on('tools/pre-execute', (exec, next) => {
    const agent = exec.agent
    const st = agent === undefined ? undefined : states.get(String(agent.id))
    const handled = agent !== undefined && host.has('before_toolcall', agent)
    /** stopWhenAllDenied counts the step's calls and denials. */
    const tally = exits.stopWhenAllDenied && st !== undefined
    if (!handled && !tally) return next()
    let decision: PreToolDecision | undefined
    /** The final decision, watched only when something depends on it (a tally, an authored result). */
    const decide = (): Promise<PreToolDecision> => {
      if (decision === undefined && !tally && !authored.has(exec.token)) return next()
      return (decision === undefined ? next() : Promise.resolve(decision)).then((final) => {
        if (final.kind === 'deny' && authored.delete(exec.token) && --outstanding === 0) sync() // a later policy denied the call: no execution comes
        if (tally && exec.parent === undefined) {
          st.calls++
          if (final.kind === 'deny') st.denied++
        }
        return final
      })
    }
    if (!handled) return decide()
    const input = { agent, turn: st?.turn ?? 0, step: (st?.stepsEnded ?? 0) + 1, callId: exec.callId, name: exec.name, arguments: exec.arguments, signal: exec.signal }
    const ran = host.run('before_toolcall', agent, () => input, (d, name) => {
      if (d.kind === 'allow') return 'next'
      if (d.kind === 'deny') decision = { kind: 'deny', reason: String(d.reason) }
      else if (d.kind === 'ask') decision = d.reason === undefined ? { kind: 'ask' } : { kind: 'ask', reason: String(d.reason) }
      else if (d.kind === 'result' && 'value' in d) {
        authored.set(exec.token, d.value)
        if (outstanding++ === 0) sync() // listen to `tools/execute` until the result is served
      }
      else {
        host.refused('before_toolcall', name, `not a decision: ${JSON.stringify(d)}`)
        return 'next'
      }
      return 'stop'
    })
    return ran === undefined ? decide() : ran.then(decide)
  }, { prepend: true }))

  // Only while an authored result waits for its execution: a before_toolcall handler that authors
  // none costs no `tools/execute` listener.
  listenWhile(() => outstanding > 0, () => ctx.on('tools/execute', (exec, next) => {
    if (!authored.has(exec.token)) return next()
    const value = authored.get(exec.token)!
    authored.delete(exec.token)
    outstanding--
    if (outstanding === 0) sync()
    const result: ToolExecutionResult = { isError: false, value, content: [] } // dsh validates the value and renders it with the tool
    return Promise.resolve(result)
  }))

  listenWhile(() => handlers('after_toolcall'), () => ctx.on('tools/post-execute', (exec, result, next) => {
    const agent = exec.agent
    if (agent === undefined || !host.has('after_toolcall', agent)) return next()
    return afterToolcall(exec, agent, result, next)
  }))
  host.watch(sync)
  sync()

  /** The after_toolcall handlers on one result; synchronous handlers that change nothing hand straight on to `next()`. */
  function afterToolcall(exec: ToolExecution, agent: Agent, result: Readonly<ToolExecutionResult>, next: () => Promise<PostToolDecision>): Promise<PostToolDecision> {
    const st = states.get(String(agent.id))
    let content: readonly ContentBlock[] = result.content
    let value: JsonValue | undefined = result.isError ? undefined : result.value
    let replaced: 'content' | 'value' | undefined
    let feedback: ContentBlock[] | undefined
    const contexts: UserMessage[] = []
    const base = { agent, turn: st?.turn ?? 0, step: (st?.stepsEnded ?? 0) + 1, callId: exec.callId, name: exec.name, arguments: exec.arguments, signal: exec.signal, isError: result.isError }
    /** One argument for the handlers until one decides anything (a decision may replace the content or value). */
    let arg: AfterToolcallInput | undefined
    const ran = host.run('after_toolcall', agent, () => (arg ??= { ...base, content, ...(value === undefined ? {} : { value }) }), (d, name) => {
      arg = undefined // the next handler sees what this one replaced
      if (userMessages(d.contexts)) contexts.push(...d.contexts)
      else if (d.contexts !== undefined) host.refused('after_toolcall', name, 'contexts must be user messages made with createUserMessage')
      if (d.kind === 'block' && Array.isArray(d.feedback)) {
        feedback = d.feedback
        return 'stop'
      }
      if (d.kind === 'replace' && 'value' in d && d.value !== undefined) {
        if (result.isError) host.refused('after_toolcall', name, 'a failed result has no value to replace; replace its content')
        else [value, replaced] = [d.value, 'value']
      } else if (d.kind === 'replace' && 'content' in d && Array.isArray(d.content)) {
        [content, replaced] = [d.content, 'content']
      } else if (d.kind !== 'attach') {
        host.refused('after_toolcall', name, `not a decision: ${JSON.stringify(d)}`)
      }
      return 'next'
    })
    const decided = (): PostToolDecision | undefined => {
      const additional = contexts.length > 0 ? { additionalContexts: contexts } : {}
      if (feedback !== undefined) return { kind: 'block', feedback, ...additional }
      if (replaced === 'value') return { kind: 'accept', value: value!, ...additional }
      if (replaced === 'content') return { kind: 'accept', content: [...content], ...additional }
      if (contexts.length > 0) return { kind: 'accept', ...additional }
      return undefined
    }
    const finish = (): Promise<PostToolDecision> => {
      const decision = decided()
      return decision === undefined ? next() : Promise.resolve(decision)
    }
    return ran === undefined ? finish() : ran.then(finish)
  }

  return {
    async idle() {
      while (pending.size > 0) await Promise.all([...pending])
    },
  }
}
