/**
 * The memory browser's two string tables (lib/serve/static/i18n.js) say the same things: the
 * same keys, and each string the same `{placeholders}`. The page falls back to English for a key
 * the Chinese table lacks, so a string added to one table only would not fail in the browser.
 */
import t from 'tap'

type Tables = Record<'en' | 'zh', Record<string, string>>
const I18N = new URL('../../lib/serve/static/i18n.js', import.meta.url).href
const { STRINGS } = await import(I18N) as { STRINGS: Tables }

const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort()

t.test('English and Chinese have the same keys, each with the same placeholders', async (t) => {
  t.same(Object.keys(STRINGS.zh).sort(), Object.keys(STRINGS.en).sort(), 'the same keys')
  for (const [key, en] of Object.entries(STRINGS.en)) {
    const zh = STRINGS.zh[key]
    if (zh !== undefined) t.same(placeholders(zh), placeholders(en), `${key}: the same placeholders`)
  }
})
