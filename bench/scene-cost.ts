/**
 * `npm run bench:scene-cost -- [--scenes 1000] [--refs 100000] [--samples 1000] [--json]` (also the
 * `scene_cost` section of `bench:perf` and `bench:scenes`).
 *
 * The per-turn cost of scenes on a store holding many of them (default 1,000 scenes and 100,000
 * refs over 20,000 notes), against the lexical recall of the same store in the same run. Each
 * simulated human turn (80% in a known situation, 20% in a new one) goes through the scene API as
 * the plugin does:
 * - resolve: `SceneApi.enter` — the situation of the message (topic words included) and the turn's
 *   scene; sightings are counted in memory and written between turns (`flush`, off the turn's path);
 * - card: `SceneApi.card` — the notes of the turn's scenes within the scope union, rendered;
 * - union: the extra work of recall with the scene's notes merged in, after the card (as in a turn);
 * - similarity: the resolution's comparison step through the similarity index and over every
 *   scene, checked to agree on every turn.
 * Every figure is wall time and CPU time (`process.cpuUsage`, µs resolution) per turn, at p50, p99
 * and p99.9 (the default 1,000 turns give the p99.9 a second-largest sample, not the largest).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { SceneApi } from '../lib/kernel/scenes/api.ts'
import { compare } from '../lib/kernel/scenes/resolve.ts'
import { similarCandidates } from '../lib/kernel/scenes/similar.ts'
import { feature, newSituation, prepare } from '../lib/kernel/scenes/situation.ts'
import { withSceneNotes } from '../lib/kernel/scenes/union.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { exitOnHelp, jsonWanted, wholeFlag } from './args.ts'
import { rng } from './corpus.ts'
import { BlockStore } from '../lib/store/store.ts'
import { nowMs, percentile, round } from './stats.ts'

/** Options of one measurement. */
export interface SceneCostOptions {
  scenes: number
  refs: number
  samples: number
  log: (line: string) => void
}

const TOPICS = ['部署', '报销', '值班', '发布', '数据库', '网关', 'nginx', 'deploy', 'budget', 'lunch', 'invoice', 'review', '周报', '会议', '证书', '端口']

const SYLLABLES = ['服务', '端口', '配置', '日志', '版本', '集群', '节点', '证书', '缓存', '队列', '权限', '备份', '监控', '告警', '域名', '镜像']

/** A pseudo-word per number, so the notes' words spread like a real store's instead of sharing every term. */
function word(n: number): string {
  const letters = 'bcdfghjklmnprstvz'
  let out = ''
  for (let v = n + 17; out.length < 6; v = Math.floor(v / letters.length) + out.length * 31) out += letters[v % letters.length] + 'aeiou'[v % 5]!
  return out
}

function stats(wall: number[], cpu: number[]) {
  return {
    p50_ms: round(percentile(wall, 50)), p99_ms: round(percentile(wall, 99)), p999_ms: round(percentile(wall, 99.9)),
    cpu_p50_ms: round(percentile(cpu, 50)), cpu_p99_ms: round(percentile(cpu, 99)), cpu_p999_ms: round(percentile(cpu, 99.9)),
  }
}

/** Times `fn` once: wall ms and CPU ms. */
function timed<T>(fn: () => T): { value: T, wall: number, cpu: number } {
  const c = process.cpuUsage()
  const t = nowMs()
  const value = fn()
  const wall = nowMs() - t
  const used = process.cpuUsage(c)
  return { value, wall, cpu: (used.user + used.system) / 1000 }
}

/** A store built for the scene cost: its scenes (as the bench's turns address them) and note count. */
export interface SceneCostStore {
  store: BlockStore
  scenes: Array<{ channel: string, group: string, topics: string[], key: string }>
  notes: number
}

/**
 * Fills the store at `path` with `scenes` emergent scenes (one group each, on ten channels, two
 * topics and a part of day) and ≈ `refs` refs over `refs / 5` notes (1,000–20,000). Each scene's
 * own declared key (`chan:…/group:…`) exists too, as it does in a store that saw the situation:
 * its first sighting declared it, the second created the emergent scene.
 */
export function buildSceneStore(path: string, options: { scenes: number, refs: number }, rand: () => number): SceneCostStore {
  const store = new BlockStore(path)
  const notes = Math.max(1000, Math.min(20_000, options.refs / 5))
  const ids: string[] = []
  for (let i = 0; i < notes; i += 1000) {
    const batch = []
    for (let j = i; j < Math.min(notes, i + 1000); j++) batch.push({ text: `${TOPICS[j % TOPICS.length]} ${word(j)} ${word(j * 7 + 1)} ${SYLLABLES[j % SYLLABLES.length]}${SYLLABLES[(j >> 3) % SYLLABLES.length]} 第 ${j} 条` })
    ids.push(...store.commitMany(batch).map((r) => r.id))
  }
  const scenes: SceneCostStore['scenes'] = []
  const now = Date.now()
  store.transaction(() => {
    for (let i = 0; i < options.scenes; i++) {
      const channel = `ch${i % 10}`
      const group = `g${i}`
      const topics = [TOPICS[i % TOPICS.length]!, TOPICS[(i * 7 + 3) % TOPICS.length]!]
      const sig = newSituation([feature('group', group), feature('chan', channel), ...topics.map((w) => feature('topic', w)), feature('part', 'morning')])
      store.scenes.declare(`chan:${channel}/group:${group}`, 0, now)
      const key = store.scenes.createEmergent(`auto:group:${group}_chan:${channel}`, sig, `x${i}`, now)
      scenes.push({ channel, group, topics, key })
    }
    for (let r = 0; r < options.refs; r++) store.scenes.tag(scenes[r % scenes.length]!.key, ids[Math.floor(rand() * ids.length)]!, 0.5 + rand() / 2, now)
  })
  return { store, scenes, notes }
}

/** Builds the store and measures; returns the JSON section. */
export async function measureSceneCost(options: SceneCostOptions) {
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-scene-cost-'))
  const rand = rng(20261201)
  let built: SceneCostStore | undefined
  try {
    built = buildSceneStore(join(dir, 'scenes.db'), options, rand)
    const { store, scenes, notes } = built
    process.stderr.write(`built the scene cost store\n`)
    options.log(`scene cost store: ${options.scenes} scenes, ${store.scenes.counts().refs} refs over ${notes} notes`)
    // The plugin's own path: the scene API resolves the turn (`enter`) and renders its card (`card`).
    const api = new SceneApi((fn) => fn(store), { channel: '', timeZone: 'Asia/Shanghai', halfLifeDays: 30, card: 'context', scopes: () => ['global'] })
    const series = () => ({ wall: [] as number[], cpu: [] as number[] })
    const [resolve, card, lexical, union, indexed, scan] = [series(), series(), series(), series(), series(), series()]
    const warmup = 20
    for (let i = 0; i < options.samples + warmup; i++) {
      const known = rand() < 0.8
      const s = scenes[Math.floor(rand() * scenes.length)]!
      const group = known ? s.group : `new${i}`
      const text = `${s.topics[0]} 的事怎么处理，明天 ${s.topics[1]} 要开会`
      const message = createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', channel: s.channel, group } as never })
      const agent = `agent-${group}` // one session per conversation
      const r = timed(() => api.enter(agent, message, true))
      const c = timed(() => api.card(agent, i, 'global', 600))
      const keys = api.readKeys(agent)
      const l = timed(() => recallBlocks(store, text, { topK: 5, scopes: ['global'] }))
      const u = timed(() => withSceneNotes(store, l.value, keys, ['global'], 5))
      // The resolution's similarity step alone, through the index and over every scene (same turn, same result).
      const sig = r.value!.features
      const x = timed(() => compare(sig, similarCandidates(store.scenes, prepare(sig))))
      const y = timed(() => compare(sig, store.scenes.emergent()))
      if (x.value.best?.key !== y.value.best?.key || x.value.similar.join() !== y.value.similar.join()) throw new Error(`the similarity index disagrees with the full scan on turn ${i}`)
      // What the scene API does a moment after the turn, off its path: the counted sightings are written.
      store.scenes.flush()
      if (i < warmup) continue
      for (const [to, from] of [[resolve, r], [card, c], [lexical, l], [union, u], [indexed, x], [scan, y]] as const) {
        to.wall.push(from.wall)
        to.cpu.push(from.cpu)
      }
    }
    const sum = (a: number[], b: number[]) => a.map((x, i) => x + b[i]!)
    const total = { wall: sum(resolve.wall, card.wall), cpu: sum(resolve.cpu, card.cpu) }
    const result = {
      scenes: options.scenes, refs: options.refs, notes, samples: options.samples,
      resolve: stats(resolve.wall, resolve.cpu),
      card: stats(card.wall, card.cpu),
      resolve_and_card: stats(total.wall, total.cpu),
      recall_lexical: stats(lexical.wall, lexical.cpu),
      recall_union_extra: stats(union.wall, union.cpu),
      similarity_indexed: stats(indexed.wall, indexed.cpu),
      similarity_full_scan: stats(scan.wall, scan.cpu),
      ratio_p50_resolve_and_card_to_recall: round(percentile(total.wall, 50) / percentile(lexical.wall, 50)),
      ratio_cpu_p50_similarity_indexed_to_full_scan: round(percentile(indexed.cpu, 50) / percentile(scan.cpu, 50)),
      load_avg: loadavg().map((l) => round(l, 1)),
    }
    options.log(`  resolve + card: p50 ${result.resolve_and_card.p50_ms} ms, p99 ${result.resolve_and_card.p99_ms} ms (CPU p99 ${result.resolve_and_card.cpu_p99_ms} ms)`)
    options.log(`  lexical recall of the same store: p50 ${result.recall_lexical.p50_ms} ms, p99 ${result.recall_lexical.p99_ms} ms; scene union adds p99 ${result.recall_union_extra.p99_ms} ms`)
    return result
  } finally {
    built?.store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  exitOnHelp('npm run bench:scene-cost -- [--scenes 1000] [--refs 100000] [--samples 1000] [--json]\n\nThe per-turn cost of scenes on a store holding many of them, against the lexical recall of the same store (also part of bench:scenes and bench:perf).')
  const { values } = parseArgs({
    options: {
      scenes: { type: 'string', default: '1000' },
      refs: { type: 'string', default: '100000' },
      samples: { type: 'string', default: '1000' },
      json: { type: 'boolean', default: false },
    },
  })
  const asJson = jsonWanted(values.json)
  const log = (line: string) => { if (!asJson) console.log(line) }
  const result = await measureSceneCost({ scenes: wholeFlag('scenes', values.scenes), refs: wholeFlag('refs', values.refs), samples: wholeFlag('samples', values.samples), log })
  if (asJson) console.log(JSON.stringify(result))
}
