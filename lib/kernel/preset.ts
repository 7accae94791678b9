/**
 * The `stablemem` agent preset as text: dsh's own `standard` preset with the kernel rows
 * appended and its compaction row on `dsh-stablemem/compaction` (dsh's basic engine plus the
 * memory line in each checkpoint, `lib/kernel/compaction.ts`). A composition is a top-level YAML list of rows, so appending rows keeps the file
 * valid and keeps dsh's comments; rows name installed packages by bare specifier, which a preset
 * resolves from the profile directory (a relative name would resolve from the copied preset
 * directory and break).
 */

/** The preset id: the directory name under a preset root. */
export const PRESET_ID = 'stablemem'

/** The composition file of a preset, as dsh names it. */
export const COMPOSITION_FILE = 'agent.cordis.yml'

/** The display text of a preset, as dsh names it. */
export const METADATA_FILE = 'preset.yml'

/** The first line of the appended block; everything from here on is ours. */
export const KERNEL_MARKER = '# ── dsh-stablemem: long-term memory (added by `stablemem preset install`) ──'

/** The rows appended to the base preset. */
export const KERNEL_ROWS = [
  KERNEL_MARKER,
  '# The host row dsh-stablemem (a dsh.bundle of the profile) owns the store and ctx.stablemem;',
  '# this row gives the agents on this preset the memory tools, the context line and the recall.',
  '- id: stablemem-kernel',
  '  name: dsh-stablemem/kernel',
  '',
].join('\n')

/** The preset's display text (`preset.yml`): name, description, order in dsh web's picker. */
export const PRESET_METADATA = [
  'name: 标准模式 · 长期记忆',
  'description: 标准模式加上 dsh-stablemem 长期记忆：跨会话记住端口、IP、路径、版本和名字等事实，每轮自动召回相关笔记。',
  'order: 5',
  '',
].join('\n')

/** The compaction row's name in dsh's `standard` preset (any indentation, quoted as dsh writes it). */
const BASIC_COMPACTION_NAME = /^(\s*)name: '@deepseek-ai\/dsh-compaction-basic'$/m

/** What the `stablemem` preset names there instead: the same engine and configuration, plus the memory line. */
export const COMPACTION_NAME = 'name: dsh-stablemem/compaction # dsh\'s basic compaction plus one line on what moved to memory'

/**
 * The `stablemem` composition from a base composition (the `standard` preset's text). Refuses a
 * base that already carries the kernel rows, so the rows are never appended twice. A base
 * without dsh's basic compaction row (a future standard preset) keeps whatever it has.
 */
export function composePreset(base: string): string {
  if (base.includes(KERNEL_MARKER)) throw new Error('the base preset already contains the dsh-stablemem rows')
  const engine = base.replace(BASIC_COMPACTION_NAME, (_, indent: string) => `${indent}${COMPACTION_NAME}`)
  const body = engine.endsWith('\n') ? engine : `${engine}\n`
  return `${body}\n${KERNEL_ROWS}`
}
