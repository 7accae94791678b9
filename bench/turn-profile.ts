/**
 * `node bench/turn-profile.ts <profile.cpuprofile> <windows.json> [--top N] [--inclusive <regex>]`
 *
 * Where a turn's CPU goes, from a V8 CPU profile of `bench/stages.ts --only <arm> --windows <file>`
 * (docs/benchmarks.md, "A whole turn"): only samples inside the timed turns count. Each sample is
 * charged to the innermost frame of this package (`lib/…`, by file and function) or, without one,
 * to the package of its leaf frame (dsh, cordis, node), so the plugin's own work and the host
 * work it triggers can be told apart; `--inclusive` adds the time spent under each frame whose
 * `file:line function` matches (callees included). Prints ms per turn; the last line is one JSON object.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { wholeFlag } from './args.ts'

interface ProfileNode { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }
interface Profile { nodes: ProfileNode[], startTime: number, samples: number[], timeDeltas: number[] }

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, inclusive: { type: 'string' } } })
const [profilePath, windowsPath] = positionals
if (profilePath === undefined || windowsPath === undefined) throw new Error('usage: turn-profile.ts <profile.cpuprofile> <windows.json> [--top N]')
const profile = JSON.parse(readFileSync(profilePath, 'utf8')) as Profile
const windows = JSON.parse(readFileSync(windowsPath, 'utf8')) as Array<[number, number]>
const top = wholeFlag('top', values.top)

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const own = (n: ProfileNode) => /\/lib\/[^/].*\.ts$/.test(n.callFrame.url) && !n.callFrame.url.includes('node_modules')
const where = (n: ProfileNode) => `${n.callFrame.url.replace(/^.*?\/lib\//, 'lib/')}:${n.callFrame.lineNumber + 1} ${n.callFrame.functionName || '(anonymous)'}`
const pkg = (n: ProfileNode) => {
  const url = n.callFrame.url
  if (url === '') return n.callFrame.functionName // (garbage collector), (program), native
  return url.match(/node_modules\/(@[^/]+\/[^/]+|[^/]+)/)?.[1] ?? url.replace(/^.*\/(bench|test)\//, '$1/').replace(/^node:internal\/.*/, 'node:internal')
}

const pattern = values.inclusive === undefined ? undefined : new RegExp(values.inclusive)
const under = new Map<string, number>() // --inclusive: time under each matching frame
const charged = new Map<string, number>() // innermost lib frame, or the leaf's package
const ownFiles = new Map<string, number>()
let inside = 0
let time = profile.startTime
let w = 0
for (let i = 0; i < profile.samples.length; i++) {
  time += profile.timeDeltas[i]!
  const dt = profile.timeDeltas[i + 1] ?? 0 // a sample stands for the interval up to the next one
  while (w < windows.length && windows[w]![1] < time) w++
  if (w === windows.length) break
  if (time < windows[w]![0]) continue
  inside += dt
  const leaf = byId.get(profile.samples[i]!)!
  if (pattern !== undefined) {
    const seen = new Set<string>()
    for (let f: ProfileNode | undefined = leaf; f !== undefined; f = parent.has(f.id) ? byId.get(parent.get(f.id)!) : undefined) {
      const key = own(f) ? where(f) : `${pkg(f)}:${f.callFrame.lineNumber + 1} ${f.callFrame.functionName || '(anonymous)'}`
      if (pattern.test(key) && !seen.has(key)) {
        seen.add(key)
        under.set(key, (under.get(key) ?? 0) + dt)
      }
    }
  }
  let frame: ProfileNode | undefined = leaf
  while (frame !== undefined && !own(frame)) frame = parent.has(frame.id) ? byId.get(parent.get(frame.id)!) : undefined
  const key = frame === undefined ? `(host) ${pkg(leaf)}` : where(frame)
  charged.set(key, (charged.get(key) ?? 0) + dt)
  if (frame !== undefined) {
    const file = frame.callFrame.url.replace(/^.*?\/lib\//, 'lib/')
    ownFiles.set(file, (ownFiles.get(file) ?? 0) + dt)
  }
}
const turns = windows.length
const perTurn = (us: number) => Math.round(us / turns) / 1000 // ms per turn, µs resolution
const rows = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => ({ where: k, ms_per_turn: perTurn(v) }))
const ownTotal = [...ownFiles.values()].reduce((a, b) => a + b, 0)
console.log(`sampled CPU inside the ${turns} timed turns: ${perTurn(inside)} ms per turn; in this package's frames: ${perTurn(ownTotal)} ms`)
console.log('--- by innermost lib/ frame, else the leaf\'s package')
for (const r of rows(charged)) console.log(`${r.ms_per_turn.toFixed(3).padStart(7)}  ${r.where}`)
console.log('--- by lib/ file')
for (const r of rows(ownFiles)) console.log(`${r.ms_per_turn.toFixed(3).padStart(7)}  ${r.where}`)
if (pattern !== undefined) {
  console.log(`--- inclusive, frames matching ${pattern}`)
  for (const r of rows(under)) console.log(`${r.ms_per_turn.toFixed(3).padStart(7)}  ${r.where}`)
}
console.log(JSON.stringify({ turns, ms_per_turn: perTurn(inside), own_ms_per_turn: perTurn(ownTotal), files: rows(ownFiles), charged: rows(charged), ...(pattern ? { inclusive: rows(under) } : {}) }))
