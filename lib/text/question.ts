/**
 * Whether a message asks for something. Abstention ("the memory store has no record of 19999")
 * answers a question; said in reply to a statement ("记住：billing 端口 8499") it is noise that
 * tells the model to doubt what the user just said. So the per-turn notice is only given to
 * messages that ask.
 */

/** A question mark in any script. */
const QUESTION_MARK = /[?？]/
/** Chinese interrogatives and request-for-information phrasing. */
const CJK_ASKING = /多少|什么|哪|几[个号点台次岁年月天位]|谁|怎么|如何|是否|有没有|是不是|能不能|吗|告诉我|提醒我|查一下|回忆/
/** English interrogatives at the start of a sentence, or a request for information anywhere. */
const LATIN_ASKING = /(?:^|[.!;:\n]\s*)(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|do|does|did|can|could|should|would|will|have|has)\b|\b(?:tell me|remind me|look up|recall|do you know|do you remember)\b/i
/** Phrasing that hands the memory a fact to keep. */
const SAVING = /^\s*(?:记住|记一下|记下|请记住|帮我记|remember|note that|save|store|keep in mind)/i

/** True when the text asks for information rather than only stating or ordering something. */
export function isQuestion(text: string): boolean {
  if (QUESTION_MARK.test(text)) return true
  if (SAVING.test(text)) return false
  return CJK_ASKING.test(text) || LATIN_ASKING.test(text)
}
