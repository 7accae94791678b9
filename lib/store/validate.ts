/**
 * Checking a note before anything is written: the text canonical, visible, within the size limit
 * and masked under the secrets policy, its tags, scene and scope checked the same way, and its
 * content id computed from the text as stored. Commit and import both validate every input
 * before they write, so a bad item rejects its batch with an error naming the field.
 */
import { StableMemError } from '../errors.ts'
import { applySecretsPolicy, type SecretsPolicy } from '../secrets.ts'
import { isInvisibleOnly } from '../text/invisible.ts'
import { canonicalText, hasLoneSurrogate } from '../text/normalize.ts'
import { blockId, canonicalBlockId } from './block-id.ts'
import { checkSceneKey } from './scene-key.ts'
import { checkScopeKey, GLOBAL_SCOPE } from './scope-key.ts'
import { checkTag } from './tags.ts'
import type { CommitInput } from './types.ts'

/** A checked input: every field present and normalised, the content id, and the credential kinds masked. */
export type ValidRow = Required<CommitInput> & { id: string, redacted: string[] }

/**
 * Checks one input; `prefix` names its place in a batch (`inputs[3].`) in every error. `secrets`
 * is the policy the text and tags are masked under, `maxBlockChars` the store's size limit.
 */
export function validateInput(input: CommitInput, prefix: string, secrets: SecretsPolicy, maxBlockChars: number): ValidRow {
  if (input === null || typeof input !== 'object') throw new StableMemError('invalid_input', `${prefix === '' ? 'input' : prefix.slice(0, -1)} must be an object with a text field`)
  if (typeof input.text !== 'string') throw new StableMemError('invalid_input', `${prefix}text must be a string`)
  if (hasLoneSurrogate(input.text)) {
    throw new StableMemError('invalid_input', `${prefix}text contains an unpaired UTF-16 surrogate and cannot be stored without loss`)
  }
  const canonical = canonicalText(input.text)
  if (canonical.length === 0) throw new StableMemError('invalid_input', `${prefix}text is empty`)
  if (isInvisibleOnly(canonical)) throw new StableMemError('invalid_input', `${prefix}text has no visible characters`)
  if (canonical.length > maxBlockChars) {
    throw new StableMemError('too_large', `${prefix}text has ${canonical.length} characters; the limit is ${maxBlockChars} (config maxBlockChars)`)
  }
  const { text, redacted } = applySecretsPolicy(canonical, secrets, `${prefix}text`)
  if (text.length > maxBlockChars) {
    throw new StableMemError('too_large', `${prefix}text has ${text.length} characters after masking credentials; the limit is ${maxBlockChars} (config maxBlockChars)`)
  }
  // Tags are masked under the same policy as the text (`lib/store/tags.ts`).
  const tag = (value: unknown, field: string): string => {
    const checked = checkTag(value, `${prefix}${field}`, false, secrets)
    for (const kind of checked.redacted) if (!redacted.includes(kind)) redacted.push(kind)
    return checked.value
  }
  const [source, scene, semanticType, supersedes] = [tag(input.source ?? '', 'source'), checkSceneKey(tag(input.scene ?? '', 'scene'), `${prefix}scene`, false),
    tag(input.semanticType ?? '', 'semanticType'), tag(input.supersedes ?? '', 'supersedes')]
  const scope = checkScopeKey(input.scope ?? GLOBAL_SCOPE, `${prefix}scope`)
  // Masking can leave text that is not canonical (a hidden character removed before a mark): its id is the canonical form's.
  return { id: text === canonical ? canonicalBlockId(text) : blockId(text), text, redacted, source, scene, semanticType, supersedes, scope }
}
