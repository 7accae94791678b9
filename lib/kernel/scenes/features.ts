/**
 * The situation of a turn from dsh facts (docs/scenes.md, "Features"): the channel a bridge
 * stamped on the human message (`source.channel`; `web` for a prompt of dsh's web RPC, which
 * carries `rpcId`; else the configured channel), the partner and group (`source.peer`,
 * `source.group`; in a group the group is the partner), up to three topic words of the text, and the part of day in the **user's**
 * time zone (`source.clientTimeZone`, else the configured zone, else the process zone).
 * Tools join at the end of the turn (`toolFeatures`).
 */
import type { UserMessage } from '@deepseek-ai/dsh-llm'
import { normalizeSceneKey } from '../../store/scene-key.ts'
import { feature, newSituation, type Feature } from './situation.ts'
import { topicWords } from './topics.ts'

declare module '@deepseek-ai/dsh-llm' {
  interface MessageSourceMap {
    /**
     * A human message relayed by a channel bridge (QQ, Telegram, a mail gateway …): still
     * `kind: 'user'`, plus where it came from. dsh-stablemem reads these to know the situation
     * (docs/scenes.md, "The channel-bridge contract").
     */
    'stablemem-channel': {
      kind: 'user'
      /** The channel, e.g. `qq`, `telegram`, `mail`. */
      channel?: string
      /** The conversation partner (a user id) for a private chat, or the speaker in a group. */
      peer?: string
      /** The group or room, when the message came from one. */
      group?: string
      /** Declared scene keys for this message (`chan:qq/group:ops`), beside the ones derived. */
      scene?: string | string[]
    }
  }
}

/** What the features need beside the message. */
export interface FeatureContext {
  /** The turn's time, epoch ms. */
  now: number
  /** Channel of a human message that names none (config `scenes.channel`; '' for none). */
  channel: string
  /** Time zone when the message names none (config `scenes.timeZone`; '' for the process zone). */
  timeZone: string
}

/** The facts of one human message, as `situationOf` reads them. */
export interface SituationFacts {
  features: Feature[]
  /** Declared keys: the situation's own key (`chan:qq/group:group_1`) and any `source.scene`. */
  declared: string[]
}

/** The part of day of `hour` (HologramAgent: night < 6, morning < 12, afternoon < 18, evening). */
export function partOfDay(hour: number): string {
  return hour < 6 ? 'night' : hour < 12 ? 'morning' : hour < 18 ? 'afternoon' : 'evening'
}

const hourFormats = new Map<string, Intl.DateTimeFormat>()
/** Per zone, the last quarter of an hour (UTC) asked and its local hour (see `hourIn`). */
const lastHours = new Map<string, { quarter: number, hour: number }>()
const QUARTER_MS = 900_000

/**
 * The hour (0–23) of `now` in `zone` ('' or an unknown zone: the process zone). Every zone's
 * offset, and every change of it, falls on a quarter of an hour of UTC, so the local hour is the
 * same throughout one UTC quarter: it is formatted once per quarter and zone, not once per turn.
 */
export function hourIn(now: number, zone: string): number {
  const quarter = Math.floor(now / QUARTER_MS)
  const last = lastHours.get(zone)
  if (last?.quarter === quarter) return last.hour
  const hour = formatHour(now, zone)
  if (lastHours.size < 64 || lastHours.has(zone)) lastHours.set(zone, { quarter, hour })
  return hour
}

function formatHour(now: number, zone: string): number {
  let format = hourFormats.get(zone)
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', { hour: 'numeric', hourCycle: 'h23', ...(zone === '' ? {} : { timeZone: zone }) })
    } catch {
      format = new Intl.DateTimeFormat('en-US', { hour: 'numeric', hourCycle: 'h23' })
    }
    if (hourFormats.size < 64) hourFormats.set(zone, format)
  }
  return Number(format.formatToParts(now).find((p) => p.type === 'hour')?.value ?? 0) % 24
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : ''
}

/**
 * The features and declared keys of one human message. The caller has already decided that the
 * turn participates (a `user` message of a session that is not a subagent's).
 */
export function situationOf(message: UserMessage, context: FeatureContext): SituationFacts {
  const source = message.source as unknown as Record<string, unknown>
  const channel = text(source.channel) || (source.rpcId !== undefined ? 'web' : context.channel)
  const peer = text(source.peer)
  const group = text(source.group)
  const body = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n')
  const zone = text(source.clientTimeZone) || context.timeZone
  const features = newSituation([
    // One partner, as in HologramAgent: the group when there is one (its speakers are one
    // situation, whoever talks), else the private peer.
    group !== '' ? feature('group', group) : peer === '' ? undefined : feature('peer', peer),
    channel === '' ? undefined : feature('chan', channel),
    ...topicWords(body).map((w) => feature('topic', w)),
    feature('part', partOfDay(hourIn(context.now, zone))),
  ])
  const declared: string[] = []
  const own = [channel === '' ? '' : `chan:${channel}`, group !== '' ? `group:${group}` : peer !== '' ? `peer:${peer}` : '']
    .filter((s) => s !== '').map((s) => normalizeSceneKey(s.replaceAll('/', '_'))).join('/')
  if (own !== '') declared.push(own)
  const extra = Array.isArray(source.scene) ? source.scene : [source.scene]
  for (const s of extra) {
    const key = typeof s === 'string' && !/[\u0000-\u001f]/.test(s) ? normalizeSceneKey(s.slice(0, 256)) : ''
    if (key !== '' && !declared.includes(key)) declared.push(key)
  }
  return { features, declared }
}

/** `tool:<name>` features of the tools a turn called. */
export function toolFeatures(names: Iterable<string>): Feature[] {
  return newSituation([...names].map((n) => feature('tool', n)))
}
