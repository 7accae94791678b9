/**
 * Script-based language guess, used to gate vectors to the languages an embedder declares.
 * It only has to separate what embedding models separate: Han → `zh`, kana → `ja`, Hangul →
 * `ko`, Latin letters → `en` (any Latin-script language counts as `en`). A text is CJK when at
 * least a fifth of its letters are CJK, so an English sentence quoting one Chinese word stays
 * English and a Chinese sentence naming `SQLite` stays Chinese.
 */
export function textLanguage(text: string): string {
  let han = 0
  let kana = 0
  let hangul = 0
  let latin = 0
  for (const ch of text) {
    const c = ch.codePointAt(0)!
    if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0xc0 && c <= 0x24f)) latin++
    else if ((c >= 0x3040 && c <= 0x30ff) || (c >= 0x31f0 && c <= 0x31ff)) kana++
    else if ((c >= 0xac00 && c <= 0xd7af) || (c >= 0x1100 && c <= 0x11ff)) hangul++
    else if ((c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x20000 && c <= 0x2ffff) || (c >= 0xf900 && c <= 0xfaff)) han++
  }
  const cjk = han + kana + hangul
  const letters = cjk + latin
  if (letters === 0) return 'und'
  if (cjk * 5 >= letters) {
    if (kana > 0) return 'ja'
    if (hangul > han) return 'ko'
    return 'zh'
  }
  return 'en'
}

/** True when vectors may be used for this text: its language is declared, or it has no letters at all. */
export function languageDeclared(text: string, languages: readonly string[]): boolean {
  const lang = textLanguage(text)
  return lang === 'und' || languages.includes(lang)
}
