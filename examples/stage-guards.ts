/**
 * An example plugin on the stage API (`ctx.stablemem.stages`), using three stages:
 *
 * - on_input: a rate limiter. Past `maxTurns` turns per agent within `windowMs`, the turn is
 *   answered with a canned reply and the model is not called.
 * - after_toolcall: a secret redactor. Tool output that looks like a credential is masked before
 *   the model sees it (the log keeps what the model saw).
 * - after_output: a turn counter, per agent, written to the log after every turn.
 *
 * Mount it after dsh-stablemem (it injects `stablemem`). A third-party plugin imports the types
 * with `import type {} from 'dsh-stablemem'`; this one sits in the repository and imports the source.
 */
import type { Context } from '@deepseek-ai/cordis'
import Schema from '@deepseek-ai/schemastery'
import type {} from '../lib/index.ts'

export const name = 'stage-guards'
export const inject = ['stablemem']

/** The example's configuration. */
export interface Config {
  maxTurns: number
  windowMs: number
  tooFast: string
}

export const Config: Schema<Config> = Schema.object({
  maxTurns: Schema.natural().min(1).default(20).description('Turns per agent allowed within the window.'),
  windowMs: Schema.natural().min(1).default(60_000).description('The rate window, in ms.'),
  tooFast: Schema.string().default('Too many messages in a short time; please wait a moment.').description('The canned reply past the limit.'),
})

/** Credential shapes masked in tool output: API keys, bearer tokens, `password=` values. */
const SECRET = /\b(?:sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16})\b|(?<=\b(?:password|passwd|token)\s*[=:]\s*)[^\s"']+|(?<=\bBearer\s+)[A-Za-z0-9._~+/-]{16,}/gi

export function apply(ctx: Context, config: Config): void {
  const stages = ctx.stablemem.stages
  const logger = ctx.logger(name)

  const starts = new Map<string, number[]>()
  stages.on('on_input', function rateLimit({ agent, step }) {
    if (step !== 1) return undefined // steering inside a running turn is not a new turn
    const now = Date.now()
    const recent = (starts.get(agent.id) ?? []).filter((t) => now - t < config.windowMs)
    if (recent.length >= config.maxTurns) {
      starts.set(agent.id, recent)
      return { kind: 'reply', text: config.tooFast }
    }
    starts.set(agent.id, [...recent, now])
    return undefined
  })

  stages.on('after_toolcall', function redactSecrets({ content }) {
    let masked = false
    const replaced = content.map((block) => {
      if (block.type !== 'text') return block
      const text = block.text.replace(SECRET, () => {
        masked = true
        return '[secret masked]'
      })
      return text === block.text ? block : { ...block, text }
    })
    return masked ? { kind: 'replace', content: replaced } : undefined
  })

  const turns = new Map<string, number>()
  stages.on('after_output', function countTurns({ agent, reason }) {
    const count = (turns.get(agent.id) ?? 0) + 1
    turns.set(agent.id, count)
    logger.info('agent %s finished turn %d (%s)', agent.id, count, reason.kind)
  })

  ctx.on('agent/disposed', ({ agent }) => {
    starts.delete(agent.id)
    turns.delete(agent.id)
  })
}
