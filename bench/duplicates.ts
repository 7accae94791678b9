/**
 * `npm run bench:duplicates -- [--data DIR] [--json]` (DIR: the eval sets, found beside the checkout when not given)
 *
 * Measures near-duplicate rules on the public eval corpora (read from `--data`, never copied):
 * the rule commit uses (`key`: equal `nearKey`, lib/text/near-key.ts) against the alternative the
 * issue names (`overlap θ`: Jaccard of the notes' word/CJK-bigram sets ≥ θ, with equal numbers).
 *
 * For each corpus and rule:
 * - `real_pairs`: pairs of distinct notes in the corpus the rule calls duplicates, and of those
 *   `real_different`: pairs whose letters and digits differ (another word or number: a different
 *   fact, so a false merge);
 * - `detected`: share of true duplicates caught, over four variants of every note (sentence
 *   punctuation dropped, case changed, ASCII turned full-width, spacing changed);
 * - `false_merge_number`: share of notes with a number whose copy with that number changed is
 *   called a duplicate (must be 0);
 * - `false_merge_word`: the same for a copy with one word (or one CJK character) replaced.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CJK_CHAR } from '../lib/text/cjk.ts'
import { nearKey, nearTokens } from '../lib/text/near-key.ts'
import { canonicalText } from '../lib/text/normalize.ts'
import { exitOnHelp, jsonWanted, progressLog } from './args.ts'
import { evalRoot } from './recall/eval-set.ts'
import { round } from './stats.ts'

const USAGE = 'npm run bench:duplicates -- [--data DIR] [--json]\n\nThe near-duplicate rule against word-overlap rules on the eval corpora (DIR: the eval sets; found beside the checkout when not given).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({ options: { data: { type: 'string' }, json: { type: 'boolean', default: false } } })
const EVAL = evalRoot(args.data, '--data')
const asJson = jsonWanted(args.json)
const SETS = ['locomo-en-dev', 'madial-zh-dev', 'cmrc2018-zh-chunk-dev']
const THETAS = [0.9, 0.8]
const log = progressLog(asJson)

/** The word set the overlap rule compares: Latin tokens, and CJK characters as overlapping bigrams. */
function features(text: string): { set: Set<string>, numbers: string } {
  const tokens = nearTokens(text)
  const set = new Set<string>()
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    if (CJK_CHAR.test(t)) {
      const next = tokens[i + 1]
      if (next !== undefined && CJK_CHAR.test(next)) set.add(t + next)
      else set.add(t)
    } else set.add(t)
  }
  const numbers = tokens.filter((t) => /\d/.test(t)).sort().join(' ')
  return { set, numbers }
}

function jaccard(a: Set<string>, b: Set<string>): number {
  let inter = 0
  for (const x of a) if (b.has(x)) inter++
  return inter / (a.size + b.size - inter)
}

/** Letters and digits only: two notes with different ones say different things. */
const alnum = (text: string) => text.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]/gu, '')

type Rule = { name: string, same: (a: string, b: string) => boolean }
const rules: Rule[] = [
  { name: 'key', same: (a, b) => nearKey(a) !== '' && nearKey(a) === nearKey(b) },
  ...THETAS.map((theta) => ({
    name: `overlap ${theta}`,
    same: (a: string, b: string) => {
      const fa = features(a)
      const fb = features(b)
      return fa.numbers === fb.numbers && fa.set.size > 0 && jaccard(fa.set, fb.set) >= theta
    },
  })),
]

const variants: Array<[string, (t: string) => string]> = [
  ['punctuation', (t) => t.replace(/[.,!?;:。，！？；：、]+(?=\s|$)/gu, '')],
  ['case', (t) => t.toUpperCase()],
  ['full-width', (t) => t.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0))],
  ['spacing', (t) => t.replace(/ /g, '  ').replace(/(\p{Script=Han})(?=[A-Za-z0-9])/gu, '$1 ')],
]

function changedNumber(text: string): string | undefined {
  const m = /\d+/.exec(text)
  if (!m) return undefined
  return text.slice(0, m.index) + String(Number(m[0].slice(-6)) + 1) + text.slice(m.index + m[0].length)
}

function changedWord(text: string, vocab: readonly string[], i: number): string | undefined {
  const words = text.match(/[A-Za-z]{4,}/g)
  if (words && words.length > 0) {
    const target = words.reduce((a, b) => (b.length > a.length ? b : a))
    let replacement = vocab[(i * 7919) % vocab.length]!
    if (replacement.toLowerCase() === target.toLowerCase()) replacement = vocab[(i * 7919 + 1) % vocab.length]!
    return text.replace(target, replacement)
  }
  const han = [...text].findIndex((c) => CJK_CHAR.test(c))
  if (han < 0) return undefined
  const chars = [...text]
  chars[han] = chars[han] === '山' ? '水' : '山'
  return chars.join('')
}

const report: Record<string, Record<string, unknown>> = {}
for (const set of SETS) {
  const texts = [...new Set(readFileSync(join(EVAL, set, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '')
    .map((l) => canonicalText(String((JSON.parse(l) as { text: string }).text))))]
  const vocab = [...new Set(texts.flatMap((t) => t.match(/[A-Za-z]{4,}/g) ?? []))]
  report[set] = {}
  const feats = texts.map(features)
  const keys = texts.map(nearKey)
  for (const rule of rules) {
    let realPairs = 0
    let realDifferent = 0
    const examples: string[][] = []
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        let same: boolean
        if (rule.name === 'key') same = keys[i] !== '' && keys[i] === keys[j]
        else {
          const theta = Number(rule.name.split(' ')[1])
          const a = feats[i]!
          const b = feats[j]!
          const small = Math.min(a.set.size, b.set.size)
          const large = Math.max(a.set.size, b.set.size)
          same = small / large >= theta && a.numbers === b.numbers && jaccard(a.set, b.set) >= theta
        }
        if (!same) continue
        realPairs++
        if (alnum(texts[i]!) !== alnum(texts[j]!)) {
          realDifferent++
          if (examples.length < 2) examples.push([texts[i]!.slice(0, 100), texts[j]!.slice(0, 100)])
        }
      }
    }
    let detected = 0
    let positives = 0
    let numberMerged = 0
    let numberTotal = 0
    let wordMerged = 0
    let wordTotal = 0
    texts.forEach((text, i) => {
      for (const [, variant] of variants) {
        const v = variant(text)
        if (v === text) continue
        positives++
        if (rule.same(text, v)) detected++
      }
      const n = changedNumber(text)
      if (n !== undefined && n !== text) { numberTotal++; if (rule.same(text, n)) numberMerged++ }
      const w = changedWord(text, vocab, i)
      if (w !== undefined && w !== text) { wordTotal++; if (rule.same(text, w)) wordMerged++ }
    })
    report[set]![rule.name] = {
      notes: texts.length,
      real_pairs: realPairs,
      real_different: realDifferent,
      detected: round(detected / positives, 4),
      false_merge_number: round(numberMerged / Math.max(1, numberTotal), 4),
      false_merge_word: round(wordMerged / Math.max(1, wordTotal), 4),
      ...(examples.length > 0 ? { examples } : {}),
    }
    log(`${set} ${rule.name}: ${JSON.stringify(report[set]![rule.name])}`)
  }
}
if (asJson) console.log(JSON.stringify(report))
else console.log(JSON.stringify(report, null, 2))
