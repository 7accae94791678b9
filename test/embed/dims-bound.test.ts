/**
 * A vector length learned from the endpoint is bounded like a configured one: a hostile or broken
 * endpoint answering with 2,000,000-dimension vectors must not store 8 MB per note.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { HttpEmbedder } from '../../lib/embed/http.ts'
import type * as HttpModule from '../../lib/embed/http.ts'
import { MAX_VECTOR_DIMS } from '../../lib/embed/types.ts'
import { mutant } from '../helpers/mutant.ts'

/** An endpoint on 127.0.0.1 answering every request with vectors of `dims` dimensions. */
async function endpoint(t: { teardown(fn: () => void): void }, dims: number): Promise<string> {
  const vector = JSON.stringify(Array.from({ length: dims }, (_, i) => (i === 0 ? 1 : 0)))
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => { body += c.toString() })
    req.on('end', () => {
      const inputs = (JSON.parse(body) as { input: string[] }).input
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(`{"data":[${inputs.map((_, i) => `{"index":${i},"embedding":${vector}}`).join(',')}]}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function learned(Embedder: typeof HttpEmbedder, url: string): Promise<number | string> {
  const embedder = new Embedder({ baseUrl: url, model: 'm', maxRetries: 0 })
  try {
    return (await embedder.embed(['a note']))[0]!.length
  } catch (error) {
    return (error as Error).message
  }
}

t.test('a learned dimension above the bound is refused; the bound itself is accepted', async (t) => {
  t.equal(await learned(HttpEmbedder, await endpoint(t, MAX_VECTOR_DIMS)), MAX_VECTOR_DIMS)
  const over = await endpoint(t, MAX_VECTOR_DIMS + 1)
  t.equal(await learned(HttpEmbedder, over), `embedding has ${MAX_VECTOR_DIMS + 1} dimensions; at most ${MAX_VECTOR_DIMS} are accepted (embed.dims)`)
  const m = mutant({ file: 'embed/http.ts', from: 'if (dims > MAX_VECTOR_DIMS) throw', to: 'if (false) throw' })
  t.teardown(() => m.remove())
  const { HttpEmbedder: Mutated } = await m.load<typeof HttpModule>('embed/http.ts')
  t.equal(await learned(Mutated, over), MAX_VECTOR_DIMS + 1, 'mutation: without the bound the oversized vector is accepted')
})
