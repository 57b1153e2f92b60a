import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/recipe-policy-changed/index.js'
import { reconcileRecipe, type RecipeDeps } from '../../shared/recipe/controller.js'
import { TransientError } from '../../shared/core/errors.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema, type WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team-a'
const RESOURCE_DELETE = 'dev.knative.apiserver.resource.delete'
const POLICIES = { kineticsource: 'resources', kind: 'WorkflowRecipePolicy' }
const TICK = { kineticsource: 'recipepolicyresync' }

function setup(): { kube: EmbeddedKube; deps: RecipeDeps } {
  const kube = new EmbeddedKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  const deps: RecipeDeps = { ...testDeps(kube, { now: new Date('2026-03-01T10:00:00Z') }), recipes: recipeConfig({}) }
  return { kube, deps }
}

function shop(image = 'nginx:1.27'): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name: 'shop', namespace: NS },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image }] },
  })
}

function pinned(mode: 'Enforce' | 'Audit' = 'Enforce'): WorkflowRecipePolicy {
  return WorkflowRecipePolicySchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy',
    metadata: { name: 'pinned' },
    spec: { mode, images: { requireDigest: true } },
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

/** Plays workflowrecipe-changed and recipe-child-changed until the recipe stops moving. */
async function settle(kube: EmbeddedKube, deps: RecipeDeps, name = 'shop'): Promise<WorkflowRecipe> {
  for (let i = 0; i < 30; i++) {
    makeDeploymentsReady(kube)
    if ((await reconcileRecipe(deps, NS, name)).result !== 'applied') break
  }
  return kube.recipe(NS, name)!
}

const condition = (r: WorkflowRecipe | undefined, type: string) => r?.status?.conditions?.find((c) => c.type === type)

describe('recipe-policy-changed', () => {
  it('a new Enforce policy marks an Active recipe ViolatesCurrentPolicy and keeps its workloads running', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status?.phase).toBe('Active')
    const deployments = kube.children('Deployment').map((d) => d.metadata?.name)
    expect(deployments).toHaveLength(1)
    kube.writes.length = 0

    const policy = kube.putRecipePolicy(pinned())
    expect((await deliver(createApp(deps), RESOURCE_ADD, policy, POLICIES)).status).toBe(202)

    const recipe = kube.recipe(NS, 'shop')
    expect(recipe?.status?.phase).toBe('Active')
    expect(condition(recipe, 'PolicyCompliant')).toMatchObject({ status: 'False', reason: 'ViolatesCurrentPolicy' })
    expect(recipe?.status?.policy).toMatchObject({ compliant: false, evaluated: ['pinned'], totalViolations: 1 })
    expect(kube.events.filter((e) => e.reason === 'PolicyViolation').map((e) => e.type)).toEqual(['Warning'])
    expect(kube.children('Deployment').map((d) => d.metadata?.name)).toEqual(deployments)
    expect(kube.writes.filter((w) => w.startsWith('delete'))).toEqual([])
    expect(kube.recipePolicies.get('pinned')?.status).toMatchObject({
      observedGeneration: 1, totalViolations: 1,
      violations: [{ namespace: NS, recipe: 'shop', rule: 'images.requireDigest', message: 'workload "web": image "nginx:1.27" is not pinned by digest' }],
    })
  })

  it('deleting the policy that rejected a recipe sends it back to Candidate and on to Active (T25)', async () => {
    const { kube, deps } = setup()
    const policy = kube.putRecipePolicy(pinned())
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status).toMatchObject({ phase: 'Rejected', reason: 'PolicyViolation' })
    expect(kube.children('Deployment')).toEqual([])

    kube.recipePolicies.delete('pinned')
    expect((await deliver(createApp(deps), RESOURCE_DELETE, policy, POLICIES)).status).toBe(202)

    const moved = kube.recipe(NS, 'shop')!
    expect(moved.status?.history?.map((h) => [h.from, h.to, h.reason])).toContainEqual(['Rejected', 'Candidate', 'PolicyChanged'])
    expect(moved.status?.phase).not.toBe('Rejected')
    expect(condition(moved, 'PolicyCompliant')).toMatchObject({ status: 'True' })
    expect((await settle(kube, deps)).status?.phase).toBe('Active')
  })

  it('a recipe waiting for a policy\'s approval moves on once the policy stops requiring it (T25)', async () => {
    const { kube, deps } = setup()
    const gate = WorkflowRecipePolicySchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'gate' }, spec: { requireApproval: true } })
    kube.putRecipePolicy(gate)
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status?.phase).toBe('PendingApproval')

    const relaxed = kube.putRecipePolicy({ ...gate, spec: { ...gate.spec, requireApproval: false } })
    expect(relaxed.metadata.generation).toBe(2)
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, relaxed, POLICIES)).status).toBe(202)
    expect(kube.recipe(NS, 'shop')?.status?.history?.map((h) => [h.from, h.to, h.reason])).toContainEqual(['PendingApproval', 'Candidate', 'PolicyChanged'])
    expect((await settle(kube, deps)).status?.phase).toBe('Active')
  })

  it('the tick makes up for a lost delete event: the rejected recipe is re-planned', async () => {
    const { kube, deps } = setup()
    kube.putRecipePolicy(pinned())
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status?.phase).toBe('Rejected')

    kube.recipePolicies.delete('pinned')
    expect((await deliver(createApp(deps), PING, {}, TICK)).status).toBe(202)
    expect(kube.recipe(NS, 'shop')?.status?.history?.map((h) => [h.from, h.to, h.reason])).toContainEqual(['Rejected', 'Candidate', 'PolicyChanged'])
  })

  it('answers 400 to an event that names no policy', async () => {
    const { kube, deps } = setup()
    expect((await deliver(createApp(deps), RESOURCE_UPDATE, { spec: { mode: 'Enforce' } }, POLICIES)).status).toBe(400)
    expect(kube.writes).toEqual([])
  })

  it('a tick writes each policy status once; the next tick writes nothing', async () => {
    const { kube, deps } = setup()
    kube.putRecipePolicy(pinned('Audit'))
    kube.putRecipe(shop())
    expect((await settle(kube, deps)).status?.phase).toBe('Active')
    kube.writes.length = 0
    const app = createApp(deps)

    expect((await deliver(app, PING, {}, TICK)).status).toBe(202)
    expect(kube.writes).toEqual(['status WorkflowRecipePolicy/pinned'])
    expect(kube.recipePolicies.get('pinned')?.status).toMatchObject({ totalViolations: 1, lastEvaluationTime: '2026-03-01T10:00:00.000Z' })

    const before = kube.calls
    expect((await deliver(app, PING, {}, TICK)).status).toBe(202)
    expect(kube.writes).toEqual(['status WorkflowRecipePolicy/pinned'])
    // Two LISTs and the labels of team-a and sandbox-recipes: the settled recipe is not re-planned.
    expect(kube.calls - before).toBe(4)
  })

  it('skips the echo of its own status write without reading anything', async () => {
    const { kube, deps } = setup()
    const app = createApp(deps)
    expect((await deliver(app, RESOURCE_ADD, kube.putRecipePolicy(pinned()), POLICIES)).status).toBe(202)
    const echo = kube.recipePolicies.get('pinned')!
    expect(echo.status?.observedGeneration).toBe(1)
    const calls = kube.calls
    expect((await deliver(app, RESOURCE_UPDATE, echo, POLICIES)).status).toBe(202)
    expect(kube.calls).toBe(calls)
  })

  it('answers 503 when the status write meets an outage, and converges on the redelivery', async () => {
    const { kube, deps } = setup()
    const policy = kube.putRecipePolicy(pinned())
    kube.failNext('replaceRecipePolicyStatus', new TransientError('etcd timeout'))
    const app = createApp(deps)
    expect((await deliver(app, RESOURCE_ADD, policy, POLICIES)).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, policy, POLICIES)).status).toBe(202)
    expect(kube.writes).toEqual(['status WorkflowRecipePolicy/pinned'])
    expect(kube.recipePolicies.get('pinned')?.status).toMatchObject({ totalViolations: 0, violations: [] })
  })
})
