/**
 * Words that say nothing about which note is meant. Removing them from queries keeps FTS from
 * matching every block on "the" or "什么" and keeps coverage honest.
 */

/** English function words and question words (3+ letters; shorter ones are dropped anyway). */
export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set((
  'the and for are but not you your yours all any can had has have her hers him his how its our ours out she they them their theirs ' +
  'this that these those what when where which who whom whose why with was were will would should could did does doing done ' +
  'been being from into onto over under about above after again against before below between both down during each few ' +
  'further here more most once only other own same some such than then there too very just also off until while because ' +
  'let lets get got may might must shall yes yet one ever every nor per via upon within without whether whatever ' +
  'tell told say said know knew think thought please thanks thank like well really maybe okay oh hey'
).split(/\s+/))

/**
 * Chinese function words, question words and interjections (HologramAgent's `cjkFunctionWords`,
 * extended with common pronouns and particles). Content words such as 端口 or 服务 are NOT here:
 * in a segmented query they are exactly what a note must mention.
 */
export const CJK_FUNCTION_WORDS: ReadonlySet<string> = new Set((
  '什么 哪些 哪个 哪里 怎么 怎样 如何 是否 可以 需要 应该 必须 为什么 多少 几个 是不是 有没有 能不能 ' +
  '我们 你们 他们 她们 它们 自己 这个 那个 这些 那些 这里 那里 这样 那样 一个 一下 一些 ' +
  '还是 或者 而且 但是 因为 所以 如果 然后 就是 不是 没有 已经 现在 之前 以前 刚才 上次 ' +
  '吗 呢 吧 啊 呀 哦 噢 欸 喂 哎 唔 嗯 的 了 和 与 或 及 等'
).split(/\s+/))

/**
 * Single CJK characters that glue words together (particles, the copula, prepositions, pronouns,
 * question words). Two neighbouring characters the segmenter left alone usually form a word it
 * does not know (舜|天, 端|口), unless one of them is one of these ("是|由", "哪|天").
 */
export const CJK_PARTICLES: ReadonlySet<string> = new Set(Array.from('的了和与或及等是有在也都就被把从向给让于以由之其这那个我你他她它谁哪什么怎吗呢吧啊呀哦嗯很太更最又还不没'))
