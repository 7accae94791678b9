import { join } from 'node:path'
import { workspaceScope } from '../lib/store/scope-key.ts'

/** The workspace directory of block i in a store spread over `workspaces` (a fixed folder name, so a cached file stays valid). */
export function benchWorkspaceDir(i: number, workspaces: number): string {
  return join('/bench', `project-${i % workspaces}`)
}

/**
 * The scope key of that workspace: where `bench:perf`'s scoped file (step 5) and `bench:grow
 * --spread` put block i, and the union a query cut from block i is recalled in there.
 */
export function benchWorkspace(i: number, workspaces: number): string {
  return workspaceScope(benchWorkspaceDir(i, workspaces))
}
