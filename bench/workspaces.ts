import { join } from 'node:path'
import { workspaceScope } from '../lib/store/scope-key.ts'

/**
 * The scope key of the workspace block i goes into in a store spread over `workspaces` (a fixed
 * folder name, so a cached file stays valid): where `bench:perf`'s scoped file (step 5) puts
 * block i, and the union a query cut from block i is recalled in there.
 */
export function benchWorkspace(i: number, workspaces: number): string {
  return workspaceScope(join('/bench', `project-${i % workspaces}`))
}
