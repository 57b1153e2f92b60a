import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/workflowrecipe-changed/index.js'
import type { RecipeDeps } from '../../shared/recipe/controller.js'
import { ConflictError } from '../../shared/core/errors.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team-a'
const RESOURCE_DELETE = 'dev.knative.apiserver.resource.delete'
const RECIPES = { kineticsource: 'resources', kind: 'WorkflowRecipe' }
const TICK = { kineticsource: 'recipesresync' }

function setup(clock = { now: new Date('2026-03-01T10:00:00Z') }): { kube: EmbeddedKube; deps: RecipeDeps; clock: { now: Date } } {
  const kube = new EmbeddedKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  return { kube, deps: { ...testDeps(kube, clock), recipes: recipeConfig({}) }, clock }
}

function shop(annotations: Record<string, string> = {}, image = 'nginx:1.27'): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name: 'shop', namespace: NS, annotations },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image }] },
  })
}

/** Plays the Deployment controller: every Deployment of a recipe has all its replicas up. */
function makeDeploymentsReady(kube: EmbeddedKube): void {
  for (const d of kube.children('Deployment')) {
    const replicas = (d.spec as { replicas?: number } | undefined)?.replicas ?? 1
    const status = { observedGeneration: d.metadata?.generation ?? 1, replicas, updatedReplicas: replicas, availableReplicas: replicas, readyReplicas: replicas }
    if (JSON.stringify(d.status) !== JSON.stringify(status)) kube.setChildStatus('Deployment', d.metadata?.namespace ?? '', d.metadata?.name ?? '', status)
  }
}

/** Delivers the stored recipe as the source would after each write, until the function stops writing. */
async function settle(kube: EmbeddedKube, deps: RecipeDeps): Promise<WorkflowRecipe> {
  const app = createApp(deps)
  for (let i = 0; i < 30; i++) {
    makeDeploymentsReady(kube)
    const before = kube.writes.length
    expect((await deliver(app, RESOURCE_UPDATE, kube.recipe(NS, 'shop'), RECIPES)).status).toBe(202)
    if (kube.writes.length === before) break
  }
  return kube.recipe(NS, 'shop')!
}

/** Changes the stored recipe's annotations as `kubectl annotate` would (no new generation). */
function annotate(kube: EmbeddedKube, annotations: Record<string, string>): WorkflowRecipe {
  const live = kube.recipe(NS, 'shop')!
  return kube.putRecipe({ ...live, metadata: { ...live.metadata, annotations: { ...live.metadata.annotations, ...annotations } } })
}

describe('workflowrecipe-changed', () => {
  it('takes a new recipe to Active with its Deployment in the sandbox namespace, and drops the echoes of its own writes without an API call', async () => {
    const { kube, deps } = setup()
    const added = kube.putRecipe(shop())
    expect((await deliver(createApp(deps), RESOURCE_ADD, added, RECIPES)).status).toBe(202)
    expect(kube.recipe(NS, 'shop')?.metadata.finalizers).toEqual(['purko.io/recipe-finalizer'])
    expect(kube.children('Deployment').map((d) => d.metadata?.namespace)).toEqual(['sandbox-recipes'])

    const active = await settle(kube, deps)
    expect(active.status?.phase).toBe('Active')

    // The source sends the status write back: nothing is read, nothing written.
    const calls = kube.calls
    const writes = kube.writes.length
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, active, RECIPES)).status).toBe(202)
    expect(kube.calls).toBe(calls)
    expect(kube.writes.length).toBe(writes)
  })

  it('acts on a user action that the status has not recorded yet, even with the generation observed', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status?.phase).toBe('Active')

    const deprecated = annotate(kube, { 'purko.io/deprecate': 'true' })
    expect(deprecated.metadata.generation).toBe(deprecated.status?.observedGeneration)
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, deprecated, RECIPES)).status).toBe(202)
    expect(kube.recipe(NS, 'shop')?.status?.phase).toBe('Deprecated')

    // Once recorded, the same annotation is an echo again.
    const calls = kube.calls
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, kube.recipe(NS, 'shop'), RECIPES)).status).toBe(202)
    expect(kube.calls).toBe(calls)

    // An unrecorded retry or rollback value is not an echo either.
    for (const annotations of [{ 'purko.io/retry': '1' }, { 'purko.io/rollback': '1' }] as Array<Record<string, string>>) {
      const before = kube.calls
      expect((await deliver(createApp(deps), RESOURCE_UPDATE, annotate(kube, annotations), RECIPES)).status).toBe(202)
      expect(kube.calls, JSON.stringify(annotations)).toBeGreaterThan(before)
    }
  })

  it('a spec change re-plans the recipe and rolls out the new image', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(shop())
    await settle(kube, deps)
    const changed = kube.putRecipe({ ...shop({}, 'nginx:1.28'), status: kube.recipe(NS, 'shop')!.status })
    expect(changed.metadata.generation).toBe(2)
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, changed, RECIPES)).status).toBe(202)
    const images = kube.children('Deployment').map((d) => (d.spec as { template: { spec: { containers: Array<{ image: string }> } } }).template.spec.containers[0]!.image)
    expect(images).toEqual(['nginx:1.28'])
    expect((await settle(kube, deps)).status).toMatchObject({ phase: 'Active', observedGeneration: 2 })
  })

  it('a deleted recipe (deletionTimestamp) has its children deleted before the finalizer goes; a delete event (which no Trigger sends here) is refused', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(shop())
    await settle(kube, deps)
    const deleting = kube.markRecipeDeleted(NS, 'shop', '2026-03-01T10:05:00Z')!
    const app = createApp(deps)
    for (let i = 0; i < 10 && kube.recipe(NS, 'shop'); i++) {
      expect((await deliver(app, RESOURCE_UPDATE, kube.recipe(NS, 'shop') ?? deleting, RECIPES)).status).toBe(202)
      for (const d of kube.children('Deployment')) kube.releaseChild('Deployment', d.metadata?.namespace ?? '', d.metadata?.name ?? '')
    }
    expect(kube.children('Deployment')).toEqual([])
    const recipe = kube.recipe(NS, 'shop')
    expect(recipe?.metadata.finalizers ?? []).toEqual([])

    const calls = kube.calls
    expect((await deliver(app, RESOURCE_DELETE, deleting, RECIPES)).status).toBe(400)
    expect(kube.calls).toBe(calls)
  })

  it('the resync tick reconciles the recipes that need it, so a recipe whose events were lost still reaches Active', async () => {
    const clock = { now: new Date('2026-03-01T10:00:00Z') }
    const { kube, deps } = setup(clock)
    kube.putRecipe(shop())
    const app = createApp(deps)
    for (let i = 0; i < 10; i++) {
      makeDeploymentsReady(kube)
      expect((await deliver(app, PING, { reason: 'recipes-resync' }, TICK)).status).toBe(202)
      clock.now = new Date(clock.now.getTime() + 60_000)
    }
    expect(kube.recipe(NS, 'shop')?.status?.phase).toBe('Active')
  })

  it('a lost race reaches the Broker as 409, so the event is redelivered', async () => {
    const { kube, deps } = setup()
    const added = kube.putRecipe(shop())
    for (let i = 0; i < 8; i++) kube.failNext('patchRecipeMetadata', new ConflictError('the object has been modified'))
    expect((await deliver(createApp(deps), RESOURCE_ADD, added, RECIPES)).status).toBe(409)
  })

  it('refuses an event that names no recipe with 400, so it is dead-lettered instead of retried', async () => {
    const { deps } = setup()
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, { spec: {} }, RECIPES)).status).toBe(400)
  })
})
