/**
 * Transactions of one connection: IMMEDIATE transactions that concurrent writers queue for, joined
 * when already inside one, and savepoints for import's line-by-line replay. It counts rollbacks,
 * which the scene cache reads to know its cached rows may be gone (`SceneTableDeps.rollbacks`).
 */
import type { DatabaseSync } from 'node:sqlite'

/** The transactions of one open connection. */
export class Transactions {
  private readonly db: DatabaseSync
  /** Transactions and savepoints that rolled back. */
  rollbacks = 0

  constructor(db: DatabaseSync) {
    this.db = db
  }

  /** See `BlockStore.transaction`. */
  run<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn()
    this.db.exec('BEGIN IMMEDIATE')
    try {
      const result = fn()
      this.db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK')
      this.rollbacks++
      throw error
    }
  }

  /** See `BlockStore.savepoint`. */
  savepoint<T>(fn: () => T): T {
    this.db.exec('SAVEPOINT stablemem_line')
    try {
      const result = fn()
      this.db.exec('RELEASE stablemem_line')
      return result
    } catch (error) {
      this.db.exec('ROLLBACK TO stablemem_line')
      this.db.exec('RELEASE stablemem_line')
      this.rollbacks++
      throw error
    }
  }
}
