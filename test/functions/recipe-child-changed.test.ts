import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/recipe-child-changed/index.js'
import { reconcileRecipe, type RecipeDeps } from '../../shared/recipe/controller.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { WorkflowRecipeSchema } from '../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team-a'
const RESOURCE_DELETE = 'dev.knative.apiserver.resource.delete'
const CHILDREN = { kineticsource: 'resources' }

function setup(): { kube: EmbeddedKube; deps: RecipeDeps } {
  const kube = new EmbeddedKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  const deps: RecipeDeps = { ...testDeps(kube, { now: new Date('2026-03-01T10:00:00Z') }), recipes: recipeConfig({}) }
  kube.putRecipe(WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name: 'shop', namespace: NS },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] },
  }))
  return { kube, deps }
}

/** workflowrecipe-changed's share: the recipe reconciled until it waits for its children. */
async function deployed(kube: EmbeddedKube, deps: RecipeDeps) {
  for (let i = 0; i < 10 && (await reconcileRecipe(deps, NS, 'shop')).result === 'applied'; i++);
  const [deployment] = kube.children('Deployment')
  return deployment!
}

describe('recipe-child-changed', () => {
  it('a workload that became Ready moves its recipe on to Active: the owner is the one its labels name', async () => {
    const { kube, deps } = setup()
    const deployment = await deployed(kube, deps)
    expect(kube.recipe(NS, 'shop')?.status?.phase).toBe('Deploying')
    expect(deployment.metadata?.labels).toMatchObject({ 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': NS })

    const ready = kube.setChildStatus('Deployment', 'sandbox-recipes', deployment.metadata!.name!, {
      observedGeneration: deployment.metadata?.generation ?? 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1,
    })
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, ready, CHILDREN)).status).toBe(202)
    expect(kube.recipe(NS, 'shop')?.status?.phase).toBe('Active')
  })

  it('a hand-deleted workload is made again', async () => {
    const { kube, deps } = setup()
    const deployment = await deployed(kube, deps)
    const name = deployment.metadata!.name!
    kube.childObjects.delete(`Deployment/sandbox-recipes/${name}`)
    expect((await deliver(createApp(deps), RESOURCE_DELETE, deployment, CHILDREN)).status).toBe(202)
    expect(kube.child('Deployment', 'sandbox-recipes', name)?.metadata?.labels?.['purko.io/recipe']).toBe('shop')
  })

  it('an object whose labels name no recipe is answered 202 without an API call', async () => {
    const { kube, deps } = setup()
    const calls = kube.calls
    for (const labels of [undefined, { 'purko.io/recipe': 'shop' }, { 'purko.io/recipe': '', 'purko.io/recipe-namespace': NS }]) {
      const object = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'other', namespace: 'sandbox-recipes', ...(labels ? { labels } : {}) } }
      expect((await deliver(createApp(deps), RESOURCE_UPDATE, object, CHILDREN)).status, JSON.stringify(labels)).toBe(202)
    }
    expect(kube.calls).toBe(calls)
  })

  it('a child of a recipe that is gone changes nothing', async () => {
    const { kube, deps } = setup()
    const deployment = await deployed(kube, deps)
    kube.recipes.clear()
    const writes = kube.writes.length
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, deployment, CHILDREN)).status).toBe(202)
    expect(kube.writes.length).toBe(writes)
  })
})
