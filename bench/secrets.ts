/**
 * `npm run bench:secrets [-- --eval <dir> --repeat N --json]` (`--help` for usage)
 *
 * What the credential detector (`lib/secrets.ts`) costs and what it masks by mistake:
 *
 * 1. False positives: every note of the three eval corpora (`--eval`, else `shared/eval` beside the checkout; real text with
 *    no credentials in it) goes through `redactSecrets`; a note it changes is a false positive.
 *    `scanned` counts the notes that passed the prefilter, so the shapes they name ran on them.
 *    Each is listed by set, id and kind (never by text: the corpora are third-party data).
 * 2. Cost per 1 kB note: the corpora cut into notes of about 1,000 characters, plus notes of
 *    the same size that are dense with labels and prefixes but hold no credential (the worst
 *    ordinary case: every shape runs), timed against a baseline measured in the same run and
 *    alternated with it: the rest of the commit path's text work (NFC and the SHA-256 id).
 * 3. Hostile input: each text of `bench/secrets/hostile.ts` at 1 MB, against the same baseline.
 *
 * The last line is one JSON object (with `--json` the only line).
 */
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { redactSecrets } from '../lib/secrets.ts'
import { TRIGGERS } from '../lib/secrets/shapes.ts'
import { jsonWanted, wholeFlag } from './args.ts'
import { evalRoot, readEvalSet } from './recall/eval-set.ts'
import { HOSTILE_FRAGMENTS, hostileText } from './secrets/hostile.ts'
import { nowMs, percentile, round } from './stats.ts'

const USAGE = `usage: bench:secrets [--eval <dir>] [--repeat N] [--json]
Masks every note of the eval sets under --eval (default: the shared/eval found beside this checkout
or above it) and lists each one it changes (false positives, by set and id); times the detector per
1 kB note (corpus text, and notes dense with labels) against the commit path's NFC + SHA-256 in the
same run, over --repeat passes (default 5); times each hostile 1 MB text. The last line is one JSON
object (with --json the only line).`

function cliArgs(): { eval?: string | undefined, repeat: string, json: boolean } {
  try {
    const { values } = parseArgs({
      options: {
        eval: { type: 'string' },
        repeat: { type: 'string', default: '5' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    })
    if (values.help) {
      console.log(USAGE)
      process.exit(0)
    }
    return values
  } catch (error) {
    console.error(`bench:secrets: ${(error as Error).message.split('\n')[0]} (--help for usage)`)
    process.exit(2)
  }
}
const args = cliArgs()
const asJson = jsonWanted(args.json)
const EVAL = evalRoot(args.eval, '--eval')
const SETS = ['madial-zh-dev', 'locomo-en-dev', 'cmrc2018-zh-chunk-dev']
const repeat = wholeFlag('repeat', args.repeat)

/** The baseline: what the commit path does to every note's text anyway. */
function baseline(text: string): number {
  return createHash('sha256').update(text.normalize('NFC')).digest().length
}

function log(line: string): void {
  if (!asJson) console.log(line)
}

// 1. False positives.
const falsePositives: Array<{ set: string, id: string, kinds: string[] }> = []
const perSet: Record<string, { notes: number, scanned: number, changed: number, share_pct: number }> = {}
const allTexts: string[] = []
for (const name of SETS) {
  const dir = join(EVAL, name)
  const set = readEvalSet(dir)
  let changed = 0
  let scanned = 0
  for (const block of set.blocks) {
    allTexts.push(block.text)
    if (TRIGGERS.some((trigger) => trigger.test(block.text))) scanned++
    const { text, kinds } = redactSecrets(block.text)
    if (text !== block.text) {
      changed++
      falsePositives.push({ set: name, id: block.id, kinds })
    }
  }
  perSet[name] = { notes: set.blocks.length, scanned, changed, share_pct: round(100 * changed / set.blocks.length, 3) }
  log(`${name}: ${changed} of ${set.blocks.length} notes changed by masking (${perSet[name]!.share_pct} %); ${scanned} passed the prefilter`)
}
const totalNotes = Object.values(perSet).reduce((n, s) => n + s.notes, 0)
const totalChanged = falsePositives.length
for (const fp of falsePositives) log(`  false positive: ${fp.set} ${fp.id} (${fp.kinds.join(', ')})`)

// 2. Cost per 1 kB note.
function kilobyteNotes(texts: readonly string[]): string[] {
  const out: string[] = []
  let note = ''
  for (const text of texts) {
    note += (note === '' ? '' : '\n') + text
    if (note.length >= 1000) { out.push(note.slice(0, 1000)); note = '' }
  }
  return out
}
/** Ordinary technical notes full of labels, prefixes and commands, with no credential in them. */
function denseNotes(count: number): string[] {
  const lines = [
    'the token bucket allows 50 requests; the key decision was postgres 16; password policy is 12 characters',
    'ssh deploy@10.3.7.9 -p 2222 and curl https://api.internal/v1/jobs; docker login to registry.io',
    'API_KEY_FILE=/run/secrets/api_key, TOKEN_TTL=3600, secret_key_path: ~/.ssh/id_ed25519',
    'Authorization header is set by the proxy; Bearer auth is on; mysql -u root -p prompts for it',
    '密码策略要求 12 位，密钥轮换每 90 天，令牌桶限速每秒 50 次，口令不能复用',
    'http://10.0.0.5:8080/health?user=a@b.org and redis://cache.internal:6379/0 via redis-cli -h cache',
    'sk-learn version 1.5, task-1234, hf_hub cache, npm_config_cache, pypi-mirror, ghp docs, AKIA docs',
    'the credentials are in the vault; auth is OIDC; key: value pairs; password: see the vault',
  ]
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    let note = ''
    for (let j = i; note.length < 1000; j++) note += `${lines[j % lines.length]!} (${i}.${j})\n`
    out.push(note.slice(0, 1000))
  }
  return out
}

/** Median µs per note of `fn` and of the baseline, alternated note by note over `repeat` passes. */
function timePerNote(notes: readonly string[], fn: (text: string) => unknown): { ours_us: number, baseline_us: number } {
  const ours: number[] = []
  const base: number[] = []
  for (let pass = 0; pass < repeat; pass++) {
    for (const note of notes) {
      let t = nowMs(); fn(note); ours.push((nowMs() - t) * 1000)
      t = nowMs(); baseline(note); base.push((nowMs() - t) * 1000)
    }
  }
  return { ours_us: round(percentile(ours, 50), 2), baseline_us: round(percentile(base, 50), 2) }
}

const cost: Record<string, { notes: number, ours_p50_us: number, baseline_p50_us: number, ratio: number, ours_mean_us: number, ours_p99_us: number }> = {}
for (const [name, notes] of [['corpus_1kB', kilobyteNotes(allTexts)], ['dense_1kB', denseNotes(400)]] as const) {
  for (const note of notes.slice(0, 50)) redactSecrets(note) // warm up
  const p50 = timePerNote(notes, (text) => redactSecrets(text))
  const all: number[] = []
  for (const note of notes) { const t = nowMs(); redactSecrets(note); all.push((nowMs() - t) * 1000) }
  cost[name] = { notes: notes.length, ours_p50_us: p50.ours_us, baseline_p50_us: p50.baseline_us, ratio: round(p50.ours_us / p50.baseline_us, 2), ours_mean_us: round(all.reduce((a, b) => a + b, 0) / all.length, 2), ours_p99_us: round(percentile(all, 99), 2) }
  log(`cost ${name}: ${p50.ours_us} µs per note (baseline NFC+SHA-256 ${p50.baseline_us} µs, ratio ${cost[name]!.ratio}), mean ${cost[name]!.ours_mean_us} µs, p99 ${cost[name]!.ours_p99_us} µs`)
}

// 3. Hostile 1 MB texts.
const hostile: Array<{ name: string, ms: number, baseline_ms: number, ratio: number }> = []
for (const { name, fragment } of HOSTILE_FRAGMENTS) {
  const text = hostileText(fragment, 1 << 20)
  let t = nowMs(); redactSecrets(text); const ms = nowMs() - t
  t = nowMs(); baseline(text); const baseMs = nowMs() - t
  hostile.push({ name, ms: round(ms, 1), baseline_ms: round(baseMs, 1), ratio: round(ms / baseMs, 1) })
  log(`hostile 1 MB, ${name}: ${round(ms, 1)} ms (baseline ${round(baseMs, 1)} ms)`)
}

console.log(JSON.stringify({
  false_positives: { notes: totalNotes, changed: totalChanged, share_pct: round(100 * totalChanged / totalNotes, 3), per_set: perSet, list: falsePositives },
  cost_per_1kB_note: cost,
  hostile_1MB: hostile,
  hostile_worst_ms: Math.max(...hostile.map((h) => h.ms)),
}))
