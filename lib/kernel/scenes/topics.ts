/**
 * Topic words of a human message: up to three content words, Chinese included. Chinese has no
 * spaces, and `Intl.Segmenter` cuts words like 端口 wrongly, so the words come from jieba
 * (`@node-rs/jieba`, prebuilt native binaries) ranked by its TF-IDF table. Its dictionaries take
 * a few hundred ms to load, so they load once, on the first human turn that needs them, never at
 * plugin start (`bench:scenes` reports the load and the per-turn cost).
 */
import { createRequire } from 'node:module'
import type { Jieba, TfIdf } from '@node-rs/jieba'

/** Most topic words per turn (HologramAgent: 3). */
export const MAX_TOPICS = 3
/** Longest text read for topics, in characters: the words of a long paste's opening are enough. */
const MAX_TOPIC_TEXT = 2_000

/** Function words jieba's IDF table ranks high in English text; never a topic. */
const STOP = new Set(('a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its ' +
  'me my no not of on or our please she should so than that the their them then there these they this to too us was we were what when ' +
  'where which who why will with would you your 的 了 是 我 你 他 她 它 们 这 那 吗 呢 吧 啊 和 与 也 都 就 还 在 有 不要 一下 这个 那个 怎么 什么 可以').split(' '))

let loaded: { jieba: Jieba, tfidf: TfIdf } | undefined

/** The segmenter and its IDF table, loaded on first use. */
function segmenter(): { jieba: Jieba, tfidf: TfIdf } {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url)
    const { Jieba: JiebaClass, TfIdf: TfIdfClass } = require('@node-rs/jieba') as typeof import('@node-rs/jieba')
    const { dict, idf } = require('@node-rs/jieba/dict') as { dict: Uint8Array, idf: Uint8Array }
    loaded = { jieba: JiebaClass.withDict(dict), tfidf: TfIdfClass.withDict(idf) }
  }
  return loaded
}

/** Whether the dictionaries are loaded (for `bench:scenes`, which times the first load). */
export function topicsLoaded(): boolean {
  return loaded !== undefined
}

/**
 * Up to `MAX_TOPICS` topic words of `text`, most specific first: jieba's TF-IDF keywords,
 * lower-cased, without function words, numbers alone, or single characters.
 */
export function topicWords(text: string): string[] {
  const clean = text.slice(0, MAX_TOPIC_TEXT).trim()
  if (clean === '') return []
  const { jieba, tfidf } = segmenter()
  const out: string[] = []
  for (const { keyword } of tfidf.extractKeywords(jieba, clean, MAX_TOPICS * 3, [])) {
    const word = keyword.toLowerCase().trim()
    if ([...word].length < 2 || STOP.has(word) || /^[\d\p{P}\p{S}\s]+$/u.test(word) || out.includes(word)) continue
    out.push(word)
    if (out.length === MAX_TOPICS) break
  }
  return out
}
