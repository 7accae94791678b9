/**
 * A synthetic, seeded memory corpus for the performance benchmark. Nothing here comes from an
 * evaluation set: words are drawn from small hand-written lists plus generated long-tail words,
 * with Zipf-like frequencies, so that the index has the skew of real text (a few very common
 * words, many rare ones). Block `i` depends only on (seed, i), so queries can be cut from any
 * block without keeping the corpus in memory.
 */

/** A small, fast, seedable PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const EN_COMMON = (
  'service server deploy deployment config configuration database cache queue worker cluster node ' +
  'network proxy gateway endpoint request response timeout retry error warning log logs metric metrics ' +
  'alert dashboard release version build test tests branch commit merge review user users account team ' +
  'project meeting schedule deadline budget invoice customer order payment billing report backup restore ' +
  'storage disk memory cpu load balancer certificate domain token session login password key secret ' +
  'migration schema index table query latency throughput monitor monitoring incident outage fix patch ' +
  'upgrade downgrade rollback feature flag experiment search memory note notes friend family weekend ' +
  'dinner coffee trip flight hotel train ticket doctor appointment birthday gift book movie music ' +
  'running gym lunch office home garden kitchen weather morning evening yesterday tomorrow today ' +
  'prefer likes dislikes decided agreed planned moved changed replaced started finished broke installed ' +
  'configured restarted migrated renamed deleted added updated checked verified tested shipped ' +
  'production staging development local remote primary replica internal external public private ' +
  'daily weekly monthly quarterly nightly manual automatic slow fast stable flaky broken healthy'
).split(/\s+/)

const ZH_COMMON = (
  '服务 端口 部署 配置 数据库 缓存 队列 集群 节点 网络 代理 网关 请求 响应 超时 重试 错误 日志 ' +
  '监控 告警 版本 发布 测试 分支 提交 合并 用户 账号 团队 项目 会议 计划 截止 预算 发票 客户 订单 ' +
  '支付 账单 报表 备份 恢复 存储 磁盘 内存 负载 证书 域名 令牌 会话 登录 密码 迁移 索引 查询 延迟 ' +
  '吞吐 故障 修复 补丁 升级 回滚 功能 实验 搜索 记忆 笔记 朋友 家人 周末 晚饭 咖啡 旅行 航班 酒店 ' +
  '火车 车票 医生 预约 生日 礼物 电影 音乐 跑步 健身 午饭 办公室 花园 厨房 天气 早上 晚上 昨天 明天 ' +
  '今天 喜欢 讨厌 决定 同意 打算 搬到 改成 替换 开始 完成 安装 重启 改名 删除 添加 更新 检查 验证 ' +
  '上线 生产 预发 开发 本地 远程 主库 从库 内部 外部 公开 私有 每天 每周 每月 手动 自动 稳定 健康 ' +
  '服务器 负责人 运维 后端 前端 接口 文档 需求 设计 评审 排期 周报 预案 值班 机房 带宽 流量'
).split(/\s+/)

const ZH_CHARS = Array.from('的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质')

const EN_PREFIX = 'ka ze mo ri ta lu ve no si pa qu dor fen gal hex jin kor lam mir nes orb pil rask sol tor vin wex yar zul brin cas'.split(' ')
const EN_SUFFIX = 'ra lo tin vex mar dus ion ent ula ock ith ane oro ix yl ber gen ton ward ley'.split(' ')

/**
 * A Zipf–Mandelbrot sampler over `n` ranks: rank r has weight 1 / (r + 1 + q). Content words
 * follow Zipf's law below the function words, so the head is flattened by `q`: the most common
 * content word lands in roughly one note in ten, as "服务" or "server" would in a real store.
 */
function zipf(n: number, q = 20): (r: number) => number {
  const cumulative = new Float64Array(n)
  let total = 0
  for (let i = 0; i < n; i++) { total += 1 / (i + 1 + q); cumulative[i] = total }
  return (r) => {
    const target = r * total
    let lo = 0, hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid]! < target) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** Function words woven between content words, as real sentences have them (never query terms). */
const EN_GLUE = 'the a to and of in on is was it we for with that'.split(' ')
const ZH_GLUE = Array.from('的了是在和也就都把要')

/** Distinct words per language. */
const VOCABULARY = 20_000

/** The vocabulary: hand-written common words first (most frequent), then a generated long tail. */
function vocabulary(seed: number): { en: string[], zh: string[] } {
  const r = rng(seed ^ 0x5eed)
  const en = [...EN_COMMON]
  const seenEn = new Set(en)
  while (en.length < VOCABULARY) {
    let word = EN_PREFIX[Math.floor(r() * EN_PREFIX.length)]!
    const syllables = 1 + Math.floor(r() * 3)
    for (let k = 0; k < syllables; k++) word += EN_SUFFIX[Math.floor(r() * EN_SUFFIX.length)]!
    if (!seenEn.has(word)) { seenEn.add(word); en.push(word) }
  }
  const zh = [...ZH_COMMON]
  const seenZh = new Set(zh)
  while (zh.length < VOCABULARY) {
    const n = r() < 0.8 ? 2 : 3
    let word = ''
    for (let i = 0; i < n; i++) word += ZH_CHARS[Math.floor(r() * ZH_CHARS.length)]!
    if (!seenZh.has(word)) { seenZh.add(word); zh.push(word) }
  }
  return { en, zh }
}

/** The kind of a generated block. */
export type BlockKind = 'zh' | 'en' | 'mixed'

/** One generated block, with the pieces queries are cut from. */
export interface GeneratedBlock {
  text: string
  kind: BlockKind
  /** The exact symbol the block carries (port, IP, path, version), or '' (two thirds of blocks). */
  symbol: string
  /** Content words used in the block (English, or Chinese for zh blocks). */
  words: string[]
}

/**
 * The query kinds the benchmark reports. `absent_symbol` asks about a port, host, path or version
 * of the same form as a stored one that no block holds (a port above 65023, a host outside 10/8,
 * a major version above 9, a path number above 999): recall abstains and looks for stored strings
 * one typo away.
 */
export const QUERY_KINDS = ['zh_phrase', 'en_words', 'exact_symbol', 'long_conversational', 'absent_symbol'] as const
/**
 * `QUERY_KINDS` plus `common_term`: a query made of one of the store's most common words alone
 * (服务, server …, in roughly one note in ten), the worst case for FTS5's bm25 ranking, which
 * scores every note holding it. bench:perf reports it; the other benchmarks keep their query mix.
 */
export const SCALE_QUERY_KINDS = [...QUERY_KINDS, 'common_term'] as const
/** One query kind. */
export type QueryKind = typeof SCALE_QUERY_KINDS[number]

/** A corpus generator for one seed. */
export interface Corpus {
  block(i: number): GeneratedBlock
  /** A query of this kind cut from block `i` (regenerated from the seed). */
  query(kind: QueryKind, i: number): string
  /** The block that query was cut from (the first block from `i` on that can serve the kind). */
  source(kind: QueryKind, i: number): number
}

/** Builds the generator for `seed`. */
export function corpus(seed: number): Corpus {
  const vocab = vocabulary(seed)
  const pickEn = zipf(vocab.en.length)
  const pickZh = zipf(vocab.zh.length)

  function block(i: number): GeneratedBlock {
    const r = rng(seed * 1_000_003 + i)
    const roll = r()
    const kind: BlockKind = roll < 0.5 ? 'zh' : roll < 0.5 + 1 / 3 ? 'en' : 'mixed'
    const words: string[] = []
    const en = () => { const w = vocab.en[pickEn(r())]!; words.push(w); return w }
    const zh = () => { const w = vocab.zh[pickZh(r())]!; if (kind === 'zh') words.push(w); return w }
    const sentences = 1 + Math.floor(r() * 3)
    const parts: string[] = []
    for (let s = 0; s < sentences; s++) {
      const len = 5 + Math.floor(r() * 10)
      if (kind === 'zh') {
        let sentence = ''
        for (let k = 0; k < len; k++) {
          sentence += zh() + (r() < 0.3 ? ZH_GLUE[Math.floor(r() * ZH_GLUE.length)]! : '') + (k > 0 && k % 4 === 3 ? '，' : '')
        }
        parts.push(sentence.replace(/，$/, '') + '。')
      } else if (kind === 'en') {
        const ws: string[] = []
        for (let k = 0; k < len; k++) {
          if (r() < 0.4) ws.push(EN_GLUE[Math.floor(r() * EN_GLUE.length)]!)
          ws.push(en())
        }
        parts.push(ws.join(' ').replace(/^./, (c) => c.toUpperCase()) + '.')
      } else {
        let sentence = ''
        for (let k = 0; k < len; k++) sentence += r() < 0.35 ? ` ${en()} ` : zh()
        parts.push(sentence.replace(/\s+/g, ' ').trim() + '。')
      }
    }
    let symbol = ''
    if (r() < 1 / 3) {
      const what = Math.floor(r() * 4)
      const name = vocab.en[pickEn(r())]!
      if (what === 0) symbol = String(1024 + Math.floor(r() * 64000))
      else if (what === 1) symbol = `10.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}.${1 + Math.floor(r() * 254)}`
      else if (what === 2) symbol = `/srv/${name}/${vocab.en[pickEn(r())]!}-${Math.floor(r() * 1000)}.conf`
      else symbol = `v${Math.floor(r() * 10)}.${Math.floor(r() * 30)}.${Math.floor(r() * 100)}`
      const label = ['port', 'host', 'path', 'version'][what]!
      parts.push(kind === 'en' ? `The ${name} ${label} is ${symbol}.` : `${name} 的${['端口', '地址', '路径', '版本'][what]!}是 ${symbol}。`)
    }
    return { text: parts.join(kind === 'en' ? ' ' : ''), kind, symbol, words }
  }

  function query(kind: QueryKind, i: number): string {
    return serve(kind, i).text
  }

  function source(kind: QueryKind, i: number): number {
    return serve(kind, i).block
  }

  function serve(kind: QueryKind, i: number): { text: string, block: number } {
    const r = rng(seed * 7_919 + i * 31 + SCALE_QUERY_KINDS.indexOf(kind))
    // Walk forward from block i to the first block that can serve this kind of query.
    for (let j = i; ; j++) {
      const at = (text: string) => ({ text, block: j })
      const b = block(j)
      if (kind === 'zh_phrase' && b.kind === 'zh') {
        const run = b.text.split(/[，。]/).filter((s) => s.length >= 4)[0]
        if (!run) continue
        const len = Math.min(run.length, 4 + Math.floor(r() * 5))
        const start = Math.floor(r() * (run.length - len + 1))
        return at(run.slice(start, start + len))
      }
      if (kind === 'en_words' && b.kind === 'en' && b.words.length >= 3) {
        const picked = new Set<string>()
        while (picked.size < 3) picked.add(b.words[Math.floor(r() * b.words.length)]!)
        return at([...picked].join(' '))
      }
      if (kind === 'exact_symbol' && b.symbol !== '') {
        return at(b.kind === 'en' ? `what is ${b.symbol} used for?` : `${b.symbol} 是哪个服务的？`)
      }
      if (kind === 'common_term') {
        const words = b.kind === 'en' ? vocab.en : vocab.zh
        return at(words[Math.floor(r() * 3)]!)
      }
      if (kind === 'absent_symbol' && b.symbol !== '') {
        const absent = absentLike(b.symbol)
        return at(b.kind === 'en' ? `what is ${absent} used for?` : `${absent} 是哪个服务的？`)
      }
      if (kind === 'long_conversational' && b.words.length >= 2) {
        const a = b.words[0]!, c = b.words[b.words.length - 1]!
        return at(`嗨，早上好！我昨天和团队开了个会，聊了很多事情，有些细节记不太清楚了。` +
          `We spent a while on the ${b.kind === 'zh' ? 'rollout' : a} plan and then drifted into other topics, ` +
          `like lunch and the weather. 你还记得我们之前说过的关于${b.kind === 'zh' ? a : '那个'}和${b.kind === 'zh' ? c : '这个'}的决定吗？` +
          ` Also, can you remind me what we said about ${b.kind === 'zh' ? 'it' : c}${b.symbol ? ` and ${b.symbol}` : ''}? ` +
          `不着急，慢慢想，谢谢你！`)
      }
    }
  }

  return { block, query, source }
}

/** A symbol of the same form as a generated one that no generated block can hold (see `QUERY_KINDS`). */
function absentLike(symbol: string): string {
  if (/^\d+$/.test(symbol)) return String(65_024 + (Number(symbol) % 34_976))
  if (symbol.startsWith('10.')) return `11.${symbol.slice(3)}`
  if (symbol.startsWith('v')) return `v1${symbol.slice(1)}`
  return symbol.replace(/-(\d+)\.conf$/, (_, n: string) => `-${1000 + Number(n)}.conf`)
}
