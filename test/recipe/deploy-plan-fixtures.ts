// Revisions of one recipe built by the real pipeline (buildManifests, snapshot), and live objects
// made from them, for the deploy, drift, rollback and deletion planner tests.
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import type { LiveObject } from '../../shared/recipe/plan/deploy-plan.js'
import { buildManifests } from '../../shared/recipe/plan/manifests.js'
import type { RecipeChild, RecipeObjects } from '../../shared/recipe/plan/objects.js'
import { snapshot } from '../../shared/recipe/plan/snapshot.js'
import { parseSnapshot, type RevisionSnapshot } from '../../shared/recipe/plan/rollback.js'
import type { RenderedWorkload } from '../../shared/recipe/plan/rendered.js'
import { RECIPE, recipeWith, rendered, renderedTest, renderOk } from './manifest-fixtures.js'

export { RECIPE }
export const NOW = '2026-03-01T12:00:00Z'
export const config = recipeConfig({})

/** The pool of workloads, in a topological order (db ← web ← tools; batch, cron, agent, stdio alone). */
export function pool(image = '1'): Record<string, RenderedWorkload> {
  return {
    db: rendered({ name: 'db', kind: 'StatefulSet', image: `postgres:${image}`, ports: [{ name: 'pg', port: 5432 }], replicas: 1 }),
    web: rendered({ name: 'web', kind: 'Deployment', image: `web:${image}`, ports: [{ name: 'http', port: 80, targetPort: 8080 }], dependsOn: ['db'], envSecret: [{ name: 'DB_PASSWORD', secretName: 'db', key: 'password' }] }),
    tools: rendered({ name: 'tools', kind: 'Deployment', image: `tools:${image}`, ports: [{ name: 'mcp', port: 8080 }], transport: 'http', dependsOn: ['web'] }),
    batch: rendered({ name: 'batch', kind: 'Job', image: `batch:${image}`, args: ['migrate'] }),
    cron: rendered({ name: 'cron', kind: 'CronJob', image: `cron:${image}`, schedule: '0 3 * * *' }),
    agent: rendered({ name: 'agent', kind: 'DaemonSet', image: `agent:${image}` }),
    clock: rendered({ name: 'clock', kind: 'Deployment', image: `clock:${image}`, transport: 'stdio', replicas: 1 }),
  }
}

/** Revision `revision` with the named workloads of the pool (images per workload optional). */
export function revisionOf(names: string[], revision: number, images: Record<string, string> = {}, withTests = false): RecipeObjects {
  const workloads = names.map((n) => pool(images[n] ?? '1')[n]!)
  const tests = withTests ? [renderedTest({ name: 'smoke', image: 'curl:1', args: ['http://web'] })] : []
  return buildManifests(recipeWith({}), renderOk(workloads, { tests }), config, revision)
}

/** The parsed snapshot of such a revision. */
export function snapshotOf(names: string[], revision: number, images: Record<string, string> = {}, withTests = false): RevisionSnapshot {
  const workloads = names.map((n) => pool(images[n] ?? '1')[n]!)
  const tests = withTests ? [renderedTest({ name: 'smoke', image: 'curl:1', args: ['http://web'] })] : []
  const s = snapshot(recipeWith({}), renderOk(workloads, { tests }), config, revision)
  if (!s.ok) throw new Error(s.error.message)
  const parsed = parseSnapshot(s.configMap)
  if (!parsed.ok) throw new Error(parsed.message)
  return parsed.snapshot
}

export const keyOf = (c: Pick<RecipeChild, 'kind' | 'namespace' | 'name'>): string => `${c.kind} ${c.namespace}/${c.name}`

/** The object as the API server would return it after Kinetic applied the child. */
export function applied(c: RecipeChild, extra: Record<string, unknown> = {}): LiveObject {
  return structuredClone({ ...c.manifest, ...extra }) as LiveObject
}

/** An object of the same name that another owner created. */
export function foreign(c: Pick<RecipeChild, 'kind' | 'namespace' | 'name'>, uid?: string): LiveObject {
  return { kind: c.kind, metadata: { name: c.name, namespace: c.namespace, labels: uid ? { 'purko.io/recipe-uid': uid } : { app: 'theirs' } } }
}

/** Live map with every child of `objects` applied. */
export function liveWith(...sets: RecipeChild[][]): Map<string, LiveObject> {
  const m = new Map<string, LiveObject>()
  for (const set of sets) for (const c of set) m.set(keyOf(c), applied(c))
  return m
}

export const ready = (...names: string[]) => Object.fromEntries(names.map((n) => [n, { ready: true, mainReady: true }]))
