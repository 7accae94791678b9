/** `stablemem get`: one block with all its metadata and edges. */
import { isBlockId } from '../../store/block-id.ts'
import { LINE_BREAK } from '../../text/invisible.ts'
import { escapeForDisplay as show, jsonForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type Command } from '../command.ts'
import { describeScope } from '../../store/scope-key.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The get command. */
export const command: Command = {
  usage: [
    'Usage: stablemem get <id> [--db <path>] [--json]',
    '',
    'Shows one block: its text, tags, scopes, times, access count and edges.',
    '',
    '  --json  the block (with an "edges" array) as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ db, dbGiven, args, values, io }) {
    const id = args[0]!
    if (!isBlockId(id)) throw new UsageError(`"${id}" is not a block id (blk_ followed by 24 hex digits)`)
    const found = await withStore(openExisting(db, dbGiven), (store) => {
      const block = store.get(id)
      return block && { block, edges: store.edgesOf('block', id), scopes: store.scopes.of(id) }
    })
    if (found === undefined) {
      println(io.stderr, `stablemem get: no block ${id} in ${db}`)
      return 1
    }
    const { block, edges, scopes } = found
    if (values.json === true) {
      println(io.stdout, jsonForDisplay({ ...block, scopes, edges }))
      return 0
    }
    println(io.stdout, block.id)
    // Stored text and tags are shown with controls and invisible characters escaped (lib/text/terminal.ts).
    for (const line of block.text.split(LINE_BREAK)) println(io.stdout, `  > ${show(line)}`)
    if (block.source !== '') println(io.stdout, `source:   ${show(block.source)}`)
    if (block.scene !== '') println(io.stdout, `scene:    ${show(block.scene)}`)
    if (block.semanticType !== '') println(io.stdout, `type:     ${show(block.semanticType)}`)
    println(io.stdout, `scopes:   ${show(scopes.map(describeScope).join('; '))}`)
    println(io.stdout, `created:  ${new Date(block.createdAt).toISOString()}`)
    println(io.stdout, `updated:  ${new Date(block.updatedAt).toISOString()}`)
    println(io.stdout, `recalled: ${block.accessCount} time${block.accessCount === 1 ? '' : 's'}${block.lastAccessAt === null ? '' : `, last ${new Date(block.lastAccessAt).toISOString()}`}`)
    for (const edge of edges) {
      println(io.stdout, show(`edge:     ${edge.sourceKind}:${edge.sourceId} -${edge.type}-> ${edge.targetKind}:${edge.targetId}`))
    }
    return 0
  },
}
