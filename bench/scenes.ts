/**
 * `npm run bench:scenes [-- --json]`
 *
 * Situated recall (docs/scenes.md, "Measured"). 32 situations — 4 channels (qq, wechat,
 * telegram, slack) × 8 partners (4 groups, 4 private peers; the same partner names on every
 * channel, so a channel alone must tell situations apart) — each with one convention said in it,
 * in Chinese on qq/wechat and in English on telegram/slack, all worded for this benchmark. In the
 * real agent loop (scripted model) the first turn of each situation has the model save its
 * convention; then every situation gets two more turns whose wording shares nothing with its
 * convention (everyday questions, the same few questions in every situation).
 *
 * For each later turn, in the same run:
 * - scenes on: the recall message the plugin actually injected into the request;
 * - scenes off: `recall(query, { purpose: 'inject' })` on the same store — the lexical injection.
 * Right-situation recall: share of later turns whose own convention was injected. Leakage: share
 * of later turns into which a convention of another situation was injected.
 *
 * Then the scene cost at 1,000 scenes and 100,000 refs (`bench/scene-cost.ts`), and the one-time
 * load of the topic segmenter. The last line with `--json` is one JSON object.
 */
import { createUserMessage, type UserMessage } from '@deepseek-ai/dsh-llm'
import { parseArgs } from 'node:util'
import { boot, injected, reply, tempStorePath, textOf, toolCall } from '../test/helpers/harness.ts'
import { topicWords, topicsLoaded } from '../lib/kernel/scenes/topics.ts'
import { exitOnHelp, jsonWanted, wholeFlag } from './args.ts'
import { measureSceneCost } from './scene-cost.ts'
import { nowMs, round } from './stats.ts'

const USAGE = 'npm run bench:scenes [-- --json]\n\nSituated recall with scenes on and off in the real agent loop (32 situations), and the per-turn scene cost (docs/scenes.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    scenes: { type: 'string', default: '1000' },
    refs: { type: 'string', default: '100000' },
    samples: { type: 'string', default: '200' },
    debug: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const costSizes = { scenes: wholeFlag('scenes', args.scenes), refs: wholeFlag('refs', args.refs), samples: wholeFlag('samples', args.samples) }

const log = (line: string) => { if (!asJson) console.log(line) }
/** Progress on stderr, so a slow machine shows where the run is. */
const progress = (line: string) => { process.stderr.write(`${line}\n`) }

const CHANNELS = ['qq', 'wechat', 'telegram', 'slack'] as const
const PARTNERS: ReadonlyArray<{ group?: string, peer?: string }> = [
  { group: 'ops' }, { group: 'family' }, { group: 'game' }, { group: 'study' },
  { peer: 'alice' }, { peer: 'bob' }, { peer: 'carol' }, { peer: 'dave' },
]

/** One convention per situation, in channel-major order (qq ×8, wechat ×8, telegram ×8, slack ×8). */
const CONVENTIONS = [
  '回这个群的消息不要用 Markdown，只用纯文本', '家人群里语气要轻松，可以多用表情', '这个群里不讨论工作，只聊游戏', '学习群里回答要给出处和页码',
  '跟她说话要用敬语，称呼王老师', '给他回消息时附上工单编号', '对这位房东只谈合同条款，不谈私事', '给老王回消息不要超过五十字',
  '这个群禁止发链接，用截图代替', '群公告类内容要加粗标题并编号', '这里的报价一律用人民币含税', '在这个群用繁体字回复',
  '给小李回复时先说结论再说原因', '这个客户只能用正式书面语', '回复她之前先确认对方身份', '跟他沟通统一用语音转文字的格式',
  'Always reply in English in this group, never Chinese', 'Keep answers here under 280 characters', 'Use bullet points for every reply to this channel', 'In this group, timestamps must be in UTC',
  'Never share internal hostnames with this person', 'Sign every message to her with the ops team signature', 'Reply to him only with runbook links, no inline steps', 'Write to this person in Spanish',
  'Mention the on-call engineer before any deploy advice here', 'This channel wants emoji reactions instead of long replies', 'Use metric units in this group', 'No code blocks in this channel; paste plain text',
  'For this client, always include the ticket number in the subject', 'Quote the original question before answering him', 'Prices for her are quoted in euros excluding VAT', 'Address him as Dr. Patel',
]

/** Everyday questions, the same in every situation: no word of any convention. */
const LATER = {
  zh: ['明天几点开会', '帮我总结一下今天的进展', '最近忙什么呢', '周末有什么安排'],
  en: ['what is the plan for tomorrow', 'can you summarise today', 'any updates since yesterday', 'what did we decide'],
}

interface Situation {
  index: number
  channel: string
  partner: { group?: string, peer?: string }
  convention: string
  lang: 'zh' | 'en'
}

const situations: Situation[] = CHANNELS.flatMap((channel, c) => PARTNERS.map((partner, p) => ({
  index: c * PARTNERS.length + p, channel, partner, convention: CONVENTIONS[c * PARTNERS.length + p]!, lang: c < 2 ? 'zh' as const : 'en' as const,
})))

function message(s: Situation, text: string): UserMessage {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: s.channel, ...s.partner } })
}

/** Which conventions a text shows: its own (`own`) and others' (`foreign`). */
function judge(s: Situation, text: string): { own: boolean, foreign: number } {
  let foreign = 0
  for (const other of situations) if (other !== s && text.includes(other.convention)) foreign++
  return { own: text.includes(s.convention), foreign }
}

// Topic segmenter: its one-time load, then the per-message cost.
const loadStart = nowMs()
const loadCpu = process.cpuUsage()
topicWords('预热一下分词')
const segmenterLoad = { wall_ms: round(nowMs() - loadStart), cpu_ms: round((process.cpuUsage(loadCpu).user + process.cpuUsage(loadCpu).system) / 1000) }
if (!topicsLoaded()) throw new Error('segmenter did not load')

const h = await boot({ path: tempStorePath('bench-scenes'), sceneCard: 'off' })
const turnsOn = { own: 0, leaked: 0 }
const turnsOff = { own: 0, leaked: 0 }
let later = 0
try {
  for (const s of situations) {
    h.script(toolCall(`c${s.index}`, 'stablemem_commit', { text: s.convention }), reply('ok'))
    await h.turn(message(s, s.lang === 'zh' ? `记住：${s.convention}` : `Remember: ${s.convention}`), `s${s.index}`)
  }
  progress(`saved ${situations.length} conventions`)
  const seen = new Set<string>(h.adapter.requests.flatMap((r) => injected(r).map((m) => m.id)))
  for (let round = 0; round < 2; round++) {
    for (const s of situations) {
      const query = LATER[s.lang][(s.index + round) % LATER[s.lang].length]!
      h.script(reply('ok'))
      await h.turn(message(s, query), `s${s.index}`)
      // Only this turn's recall message: earlier turns' stay in the session's history.
      const fresh = injected(h.adapter.requests.at(-1)!).filter((m) => !seen.has(m.id))
      for (const m of fresh) seen.add(m.id)
      const on = judge(s, fresh.map(textOf).join('\n'))
      const off = judge(s, (await h.ctx.stablemem.recall(query, { purpose: 'inject', recordAccess: false })).map((hit) => hit.text).join('\n'))
      later++
      if (args.debug && on.foreign > 0) progress(`leak in ${s.channel}/${s.partner.group ?? s.partner.peer} "${query}": ${JSON.stringify(h.ctx.stablemem.scenes.current(`s${s.index}`))}\n${fresh.map(textOf).join('\n')}`)
      if (on.own) turnsOn.own++
      if (on.foreign > 0) turnsOn.leaked++
      if (off.own) turnsOff.own++
      if (off.foreign > 0) turnsOff.leaked++
    }
  }
  progress(`ran ${later} later turns`)
  if (h.errors.length > 0) throw new Error(`agent errors: ${String(h.errors[0])}`)
} finally {
  await h.dispose()
}

const situated = {
  situations: situations.length,
  later_turns: later,
  scenes_on: { recall: round(turnsOn.own / later), leakage: round(turnsOn.leaked / later) },
  scenes_off: { recall: round(turnsOff.own / later), leakage: round(turnsOff.leaked / later) },
}
log(`situated recall over ${situations.length} situations, ${later} later turns:`)
log(`  scenes on : recall ${situated.scenes_on.recall}, leakage ${situated.scenes_on.leakage}`)
log(`  scenes off: recall ${situated.scenes_off.recall}, leakage ${situated.scenes_off.leakage}`)
log(`topic segmenter first load: ${segmenterLoad.wall_ms} ms wall, ${segmenterLoad.cpu_ms} ms CPU`)

const cost = await measureSceneCost({ ...costSizes, log })
const result = { situated, segmenter_load: segmenterLoad, cost }
if (asJson) console.log(JSON.stringify(result))
