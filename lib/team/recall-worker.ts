import { parentPort, workerData } from 'node:worker_threads'
import pg from 'pg'
import { TeamRecallLate, teamRecall, type LocalIds } from './search.ts'
import type { RecallReply, RecallRequest } from './recall-thread.ts'

/**
 * The team recall's thread (started by `recall-thread.ts`): its own connection pool to the team
 * database, the settings of the layer's pool (`workerData`), and `teamRecall` per request. The
 * local ids of a request arrive in a later message, when the turn's local recall is done.
 * Errors go back as data (message, PostgreSQL or socket code, whether the deadline passed) for
 * the layer to classify.
 */

const port = parentPort!
const pool = new pg.Pool(workerData as pg.PoolConfig)
// An idle connection lost (the server restarted): the next recall opens another; the layer's own pool reports it.
pool.on('error', () => {})
const locals = new Map<number, (ids: readonly string[]) => void>()

port.on('message', (message: RecallRequest) => {
  if (message.type === 'local') {
    locals.get(message.id)?.(message.ids)
    return
  }
  if (message.type === 'close') {
    void pool.end().finally(() => port.close())
    return
  }
  let known: readonly string[] | undefined
  let arrived: (ids: readonly string[]) => void = () => {}
  const done = new Promise<readonly string[]>((resolve) => { arrived = resolve })
  locals.set(message.id, (ids) => {
    known = ids
    arrived(ids)
  })
  const local: LocalIds = { now: () => known, done }
  void recall(message, local).then((reply) => {
    locals.delete(message.id)
    port.postMessage(reply)
  })
})
port.postMessage({ type: 'ready' } satisfies RecallReply)

async function recall(message: Extract<RecallRequest, { type: 'recall' }>, local: LocalIds): Promise<RecallReply> {
  try {
    const client = await pool.connect()
    let broken: Error | undefined
    try {
      // The deadline is an epoch time in ms: the two threads' performance clocks start at different times.
      const result = await teamRecall(client, message.namespace, message.query, message.topK, local, message.deadline - performance.timeOrigin)
      return { type: 'result', id: message.id, result }
    } catch (error) {
      // A recall that ran out of time stopped between statements: its connection is fine to reuse.
      if (!(error instanceof TeamRecallLate)) broken = error as Error
      throw error
    } finally {
      client.release(broken)
    }
  } catch (error) {
    const e = error as { message?: string, code?: string }
    return { type: 'error', id: message.id, message: e.message ?? String(error), ...(typeof e.code === 'string' ? { code: e.code } : {}), late: error instanceof TeamRecallLate }
  }
}
