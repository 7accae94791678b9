/**
 * The text of the scene card (docs/scenes.md, "The card"): the situation and the conventions noted
 * for it, within a character budget. It is a pure function of the situation, the notes and the
 * budget, so the card is byte-identical from turn to turn until the scene or its notes change.
 */

/** A rendered card and how many of its notes it shows whole (a note cut by the budget is not one of them). */
export interface CardText {
  text: string
  whole: number
}

/**
 * The card for a situation and its notes, within `budget` characters; '' without notes (a scene
 * with nothing to say would only cost a header).
 */
export function renderCard(situation: string, notes: readonly string[], budget: number): CardText {
  if (notes.length === 0) return { text: '', whole: 0 }
  let text = `Current situation: ${situation}. Conventions noted for it (follow them here, not elsewhere):`
  let whole = 0
  for (const note of notes) {
    const line = `\n- ${note.replace(/\s+/g, ' ').trim()}`
    if (text.length + line.length > budget) {
      const room = budget - text.length - 4
      if (room > 20) text += `${line.slice(0, room)}…`
      break
    }
    text += line
    whole++
  }
  return text.length > budget ? { text: text.slice(0, budget), whole: 0 } : { text, whole }
}
