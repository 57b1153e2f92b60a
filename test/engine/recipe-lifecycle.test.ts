import { describe, expect, it } from 'vitest'
import { reconcileRecipe, type RecipeDeps } from '../../shared/engine/reconcile-recipe.js'
import { recipeConfig } from '../../shared/recipes/config.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { FakeKube } from '../fakes/kube.js'
import { recordingEvents } from '../fixtures/autonomy.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team-a'

function setup(now = '2026-03-01T10:00:00Z') {
  const kube = new FakeKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  const events = recordingEvents()
  const clock = { now: new Date(now) }
  const deps: RecipeDeps = { ...testDeps(kube, { now: clock.now }), events, recipes: recipeConfig({}), now: () => clock.now }
  return { kube, deps, events, clock }
}

function recipe(spec: unknown, name = 'shop'): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: NS }, spec })
}

/** Plays the workload controllers: Deployments and StatefulSets get every replica, Jobs complete. */
function controllers(kube: FakeKube, opts: { failJobs?: boolean } = {}): void {
  for (const d of kube.children('Deployment')) {
    const replicas = (d.spec as { replicas?: number }).replicas ?? 1
    const status = { observedGeneration: d.metadata?.generation ?? 1, replicas, updatedReplicas: replicas, availableReplicas: replicas, readyReplicas: replicas }
    if (JSON.stringify(d.status) !== JSON.stringify(status)) kube.setChildStatus('Deployment', d.metadata!.namespace!, d.metadata!.name!, status)
  }
  for (const s of kube.children('StatefulSet')) {
    const replicas = (s.spec as { replicas?: number }).replicas ?? 1
    const status = { observedGeneration: s.metadata?.generation ?? 1, replicas, readyReplicas: replicas, updatedReplicas: replicas, currentRevision: 'r1', updateRevision: 'r1' }
    if (JSON.stringify(s.status) !== JSON.stringify(status)) kube.setChildStatus('StatefulSet', s.metadata!.namespace!, s.metadata!.name!, status)
  }
  for (const j of kube.children('Job')) {
    if (j.status) continue
    const type = opts.failJobs ? 'Failed' : 'Complete'
    kube.setChildStatus('Job', j.metadata!.namespace!, j.metadata!.name!, { startTime: '2026-03-01T10:00:01Z', conditions: [{ type, status: 'True', reason: opts.failJobs ? 'BackoffLimitExceeded' : 'Completed', message: 'done' }] })
  }
}

async function settle(kube: FakeKube, deps: RecipeDeps, name = 'shop', opts: { failJobs?: boolean } = {}): Promise<WorkflowRecipe> {
  for (let i = 0; i < 30; i++) {
    controllers(kube, opts)
    if ((await reconcileRecipe(deps, NS, name)).result !== 'applied') break
  }
  return kube.recipe(NS, name)!
}

const webDb = {
  workloads: [
    { name: 'db', kind: 'StatefulSet', image: 'postgres:16', ports: [{ name: 'pg', port: 5432 }] },
    { name: 'web', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['db'], ports: [{ name: 'http', port: 80 }] },
  ],
  tests: [{ name: 'smoke', image: 'curlimages/curl:8.10.1', command: ['curl', '-f', 'http://web'] }],
}

describe('reconcileRecipe on FakeKube', () => {
  it('takes a fresh recipe through Candidate, Approved, Pending, Deploying, Testing to Active', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    const r = await settle(kube, deps)
    expect(r.status?.history?.map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active'])
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.currentRevision).toBe(1)
    expect(r.metadata.finalizers).toContain('purko.io/recipe-finalizer')
  })
})
