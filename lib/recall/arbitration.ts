import { containsWhole } from './symbols.ts'

/**
 * Time arbitration between conflicting notes (HologramAgent spec §7.7), applied to recall
 * candidates when no explicit `supersedes` link was given. A later note voids an earlier one only
 * when it explicitly names the earlier note's value and says that it changed:
 * "billing 端口 8499" is voided by a later "billing 端口从 8499 改为 8500", never by a later note
 * that merely has a newer time or another number. Time decides who supersedes whom; relevance
 * keeps deciding the order (kept notes are never re-sorted).
 */

/** Value-like strings: numbers, versions, IPs, dates, percentages. */
const VALUE = /v?\d+(?:[.:/-]\d+)*%?/gi

/**
 * The change vocabulary: words and phrases that say a value was replaced or put out of use,
 * grouped by how languages say it, in English and Chinese. A later note naming an old value
 * without one of them is a mention, not a replacement. Each group is a kind of statement:
 *
 * - `change`: the value was changed into another (changed, moved to, 改为, 换成 …);
 * - `retire`: the value is out of use, whatever replaced it (deactivated, retired, abolished,
 *   no longer used, 停用, 废弃, 作废, 注销, 下线 …);
 * - `succession`: old and new are set against each other (instead of, the old number, 旧号码,
 *   现为, →). Words that also tell a story ("originally", 原为, 原来是, 以前是, "formerly") are
 *   left out: on the evaluation sets 原为 made one encyclopedia paragraph void another.
 *
 * Latin entries match as whole words (so "now" is not found in "know"); Chinese ones as
 * substrings. Only the vocabulary is broad: a replacement still needs the later note to name the
 * old value, its key and another value (`namesChange`).
 */
export const CHANGE_VOCABULARY: Readonly<Record<'change' | 'retire' | 'succession', { en: readonly string[], zh: readonly string[] }>> = {
  change: {
    en: ['changed', 'changes to', 'moved to', 'moved from', 'switched', 'migrated', 'replaced', 'replaced by', 'superseded', 'updated to',
      'renamed', 'reassigned', 'rotated', 'renumbered'],
    zh: ['改为', '改成', '改到', '换成', '换为', '换到', '变成', '变为', '更新为', '更改为', '调整为', '迁移到', '迁到', '迁至', '替换', '取代',
      '代替', '改用', '换用', '更换为', '变更为', '改回', '已改'],
  },
  retire: {
    en: ['deactivated', 'retired', 'decommissioned', 'abolished', 'discontinued', 'deprecated', 'disabled', 'revoked', 'cancelled', 'canceled',
      'terminated', 'withdrawn', 'shut down', 'phased out', 'obsolete', 'defunct', 'out of service', 'out of use', 'no longer', 'not used anymore',
      'not in use', 'stopped using'],
    zh: ['不再', '停用', '弃用', '废弃', '废止', '作废', '撤销', '注销', '下线', '停止使用', '退役', '淘汰', '失效', '已过期', '已停'],
  },
  succession: {
    en: ['instead of', 'in place of', 'now', 'old number', 'old address', '->', '→', '=>'],
    zh: ['现为', '现在是', '现改', '旧号', '旧的', '老号码', '新号码'],
  },
}

/** Every entry of the vocabulary, flat. */
export const CHANGE_MARKERS: readonly string[] = Object.values(CHANGE_VOCABULARY).flatMap(({ en, zh }) => [...en, ...zh])

const CHANGE = new RegExp(CHANGE_MARKERS.map((m) => {
  const quoted = m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return /^[a-z]/.test(m) ? `(?<![a-z])${quoted}(?![a-z])` : quoted
}).join('|'))

/** A text with at least two separate numbers: the least a replacement ("from 4324 to 4379") holds. */
const TWO_NUMBERS = /\d\D+\d/

/** A recall candidate as arbitration sees it. */
export interface Arbitrated {
  text: string
  createdAt: number
}

/** The longest value-like string of a text (2+ characters), lower-cased, or undefined. */
export function longestValue(text: string): string | undefined {
  let best: string | undefined
  for (const match of text.toLowerCase().matchAll(VALUE)) {
    if (match[0].length >= 2 && (best === undefined || match[0].length > best.length)) best = match[0]
  }
  return best
}

/**
 * What an old value is the value of: the word (or last two CJK characters) right before it in
 * the earlier note, past separators and a copula (是, 为, is, was).
 */
export function valueKey(lowerText: string, value: string): string | undefined {
  const at = lowerText.indexOf(value)
  if (at < 0) return undefined
  // "port is 8499" names the port, not "is": English copulas are skipped like 是 and 为.
  const before = lowerText.slice(0, at).replace(/[\s:：=是为从]+$/u, '').replace(/(?<![a-z])(?:is|are|was|were)$/, '').replace(/[\s:：=]+$/u, '')
  const cjk = /[\u3400-\u4dbf\u4e00-\u9fff]{2}$/u.exec(before)
  if (cjk) return cjk[0]
  const word = /[a-z][a-z0-9_-]+$/.exec(before)
  return word?.[0]
}

/**
 * Whether `later` explicitly replaces `earlier`'s value: it is newer, names the earlier note's
 * value together with what the value was of (its key), says that it changed, and gives another value.
 */
export function replacesValue(earlier: Arbitrated, later: Arbitrated): boolean {
  const value = longestValue(earlier.text)
  return value !== undefined && later.createdAt > earlier.createdAt && namesChange(later.text.toLowerCase(), earlier.text.toLowerCase(), value)
}

function namesChange(lowerLater: string, lowerEarlier: string, value: string): boolean {
  if (!containsWhole(lowerLater, value) || !CHANGE.test(lowerLater)) return false
  const key = valueKey(lowerEarlier, value)
  if (key === undefined || !lowerLater.includes(key)) return false
  for (const match of lowerLater.matchAll(VALUE)) if (match[0].length >= 2 && match[0] !== value) return true
  return false
}

/**
 * The first `limit` candidates (in their given order) that no other candidate replaces. Only
 * candidates holding two values and a change marker can replace anything, so the pairwise check
 * stays cheap on long candidate lists.
 */
export function arbitrate<T extends Arbitrated>(candidates: readonly T[], limit: number = candidates.length): T[] {
  const replacers: Array<{ c: T, lower: string }> = []
  for (const c of candidates) {
    if (!TWO_NUMBERS.test(c.text)) continue
    const lower = c.text.toLowerCase()
    if (CHANGE.test(lower)) replacers.push({ c, lower })
  }
  const kept: T[] = []
  for (const a of candidates) {
    if (kept.length >= limit) break
    const value = replacers.length === 0 ? undefined : longestValue(a.text)
    if (value === undefined || !replacers.some(({ c, lower }) => c !== a && c.createdAt > a.createdAt && namesChange(lower, a.text.toLowerCase(), value))) kept.push(a)
  }
  return kept
}
