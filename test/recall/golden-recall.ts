/**
 * The golden recall fixture: a Chinese + English note set and the queries whose hits
 * `fixtures/golden-recall.json` pins (id, order, exact score, exact flag, why). The test
 * (`golden.test.ts`) recomputes every case and compares with exact equality; after a deliberate
 * ranking change, `npm run fixture:golden` rewrites the fixture and the diff shows what moved.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { recallBlocks } from '../../lib/recall/recall.ts'
import type { Hit } from '../../lib/recall/types.ts'
import { BlockStore } from '../../lib/store/store.ts'

/** Where the fixture lives. */
export const GOLDEN_PATH = fileURLToPath(new URL('../../fixtures/golden-recall.json', import.meta.url))

/** The notes, committed in this order one second apart (so recency tie-breaks are fixed). */
export const GOLDEN_NOTES: ReadonlyArray<{ text: string, scene?: string }> = [
  { text: 'billing 服务端口 8499，部署在 10.3.7.9', scene: 'ops' },
  { text: 'billing2 灰度实例端口 8500', scene: 'ops' },
  { text: '本机 13010/13011 端口给内部网关用，而非 12011', scene: 'ops' },
  { text: '本地网关 8081 只在开发机上开', scene: 'ops' },
  { text: 'nginx 配置文件在 /etc/nginx/conf.d/app.conf，改完要 nginx -s reload', scene: 'ops' },
  { text: 'Postgres 16.2 数据目录 /var/lib/postgresql/16/main', scene: 'ops' },
  { text: 'Redis 7.2.4 at 10.0.0.12:6379, password in vault path secret/redis', scene: 'ops' },
  { text: '数据库容灾演练由王磊负责，每季度一次', scene: 'team' },
  { text: '值班室分机号 4324', scene: 'team' },
  { text: '周会改到每周三下午三点，会议室 B302', scene: 'team' },
  { text: '2026-09-04 发布 v2.3.1，回滚预案见 wiki', scene: 'release' },
  { text: 'commit f91b27a 修复了登录超时', scene: 'release' },
  { text: 'Deploy key fingerprint SHA256:9f2c…e41 belongs to the CI runner ci-07', scene: 'release' },
  { text: 'The staging cluster runs Kubernetes 1.29 on three nodes: kube-a, kube-b, kube-c' },
  { text: 'Alice prefers dark roast coffee and hates meetings before 10am' },
  { text: 'Bob is allergic to peanuts; order the sesame-free menu for team lunches' },
  { text: 'My sister Emma moved to Lisbon in March and is learning Portuguese' },
  { text: '我女儿的钢琴课在每周六上午，老师姓陈' },
  { text: '妈妈喜欢喝普洱茶，不喜欢太甜的点心' },
  { text: '下周二要去医院复查，记得带上次的化验单' },
  { text: 'The backup job writes to /mnt/backup/nightly and keeps 14 days' },
  { text: 'Grafana dashboard for billing lives at https://grafana.internal/d/billing' },
  { text: 'Python 3.12 is required for the data pipeline; 3.11 breaks tomllib imports' },
  { text: '公司 VPN 地址 vpn.example.cn，端口 443' },
]

/** Queries and the topK each is run with. */
export const GOLDEN_QUERIES: ReadonlyArray<{ query: string, topK: number }> = [
  { query: 'billing 服务的端口是多少？', topK: 3 },
  { query: 'billing', topK: 5 },
  { query: '本机 13010 端口对应什么', topK: 3 },
  { query: '8081', topK: 1 },
  { query: 'nginx 配置在哪里', topK: 3 },
  { query: '/etc/nginx/conf.d/app.conf', topK: 2 },
  { query: 'postgres 数据目录', topK: 3 },
  { query: 'Redis 的地址和端口', topK: 3 },
  { query: '10.0.0.12', topK: 1 },
  { query: '谁负责数据库容灾演练', topK: 3 },
  { query: '值班室分机号是多少', topK: 2 },
  { query: '周会什么时候开', topK: 3 },
  { query: '2026-09-04 发布了什么', topK: 3 },
  { query: 'v2.3.1', topK: 2 },
  { query: 'f91b27a 修了什么', topK: 2 },
  { query: 'which kubernetes version does staging run?', topK: 3 },
  { query: 'What coffee does Alice like?', topK: 3 },
  { query: 'team lunch allergies', topK: 3 },
  { query: 'Where did Emma move?', topK: 2 },
  { query: '女儿钢琴课是哪天', topK: 3 },
  { query: '妈妈喜欢喝什么茶', topK: 3 },
  { query: '医院复查要带什么', topK: 2 },
  { query: 'how long are nightly backups kept', topK: 3 },
  { query: 'grafana billing dashboard', topK: 5 },
  { query: 'python version for the pipeline', topK: 3 },
  { query: 'VPN 端口', topK: 3 },
  { query: '端口', topK: 10 },
  { query: '用户: 帮我看看网关\n助手: 哪个网关？\n用户: 本地网关开在哪台机器', topK: 3 },
  { query: '本机 19999 端口是干什么的', topK: 3 },
  { query: '那个端口后来改了吗', topK: 3 },
]

/** One pinned case. */
export interface GoldenCase {
  query: string
  topK: number
  hits: Hit[]
  abstained: boolean
}

/**
 * Builds the store (fixed clock, one commit per note) and runs every query; `neighbours: false`
 * ranks without conversation neighbours (test/recall/neighbours.test.ts reads what they changed).
 */
export function computeGolden(switches: { neighbours?: boolean } = {}): GoldenCase[] {
  let clock = Date.UTC(2026, 0, 1)
  const store = new BlockStore(':memory:', { now: () => clock })
  try {
    for (const note of GOLDEN_NOTES) {
      store.commit({ text: note.text, scene: note.scene ?? '', source: 'golden' })
      clock += 1000
    }
    return GOLDEN_QUERIES.map(({ query, topK }) => {
      const hits = recallBlocks(store, query, { topK, ...switches })
      return { query, topK, hits: [...hits], abstained: hits.abstained !== undefined }
    })
  } finally {
    store.close()
  }
}

/** The stored fixture. */
export function readGolden(): GoldenCase[] {
  return JSON.parse(readFileSync(GOLDEN_PATH, 'utf8')) as GoldenCase[]
}

if (import.meta.main) {
  writeFileSync(GOLDEN_PATH, `${JSON.stringify(computeGolden(), null, 2)}\n`)
  process.stdout.write(`wrote ${GOLDEN_PATH}\n`)
}
