import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import {
  evaluateRecipe, namespacesOf, needsReevaluation, planPolicyStatuses, policyEvaluations, recipesAffectedBy, renderForPolicies,
} from '../../shared/recipe/plan/policy-reevaluation.js'
import { recipePolicyStatus, type NamespaceLabels } from '../../shared/recipe/plan/policy.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema, type WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'

const NOW = '2026-03-01T10:00:00.000Z'
const LATER = '2026-03-01T10:05:00.000Z'
const CONFIG = recipeConfig({})
const PINNED = `registry.acme.internal/web@sha256:${'a'.repeat(64)}`

interface RecipeOptions {
  namespace?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  image?: string
  spec?: Record<string, unknown>
  status?: WorkflowRecipeStatus
  deleting?: boolean
}

function recipe(name: string, o: RecipeOptions = {}): WorkflowRecipe {
  const r = WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'WorkflowRecipe',
    metadata: {
      name, namespace: o.namespace ?? 'team-a', uid: `uid-${name}`, generation: 1,
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.deleting ? { deletionTimestamp: NOW } : {}),
    },
    spec: o.spec ?? { workloads: [{ name: 'web', kind: 'Deployment', image: o.image ?? 'nginx:1.27' }] },
  })
  if (o.status) r.status = o.status
  return r
}

function policy(name: string, spec: Record<string, unknown>, status?: WorkflowRecipePolicy['status']): WorkflowRecipePolicy {
  const p = WorkflowRecipePolicySchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy',
    metadata: { name, generation: 1, resourceVersion: '7' },
    spec,
  })
  if (status) p.status = status
  return p
}

const digestPolicy = (extra: Record<string, unknown> = {}) => policy('pinned', { images: { requireDigest: true }, ...extra })
const LABELS: NamespaceLabels = { 'team-a': { env: 'prod' }, 'team-b': { env: 'dev' } }

function statuses(policies: WorkflowRecipePolicy[], recipes: WorkflowRecipe[], now = NOW, labels = LABELS) {
  return planPolicyStatuses(policies, renderForPolicies(recipes, CONFIG), labels, now)
}

describe('policy statuses (spec §10.5)', () => {
  it('counts each policy\'s own violations over the recipes it matches, recipes by namespace then name', () => {
    const prodOnly = policy('prod-replicas', { namespaceSelector: { matchLabels: { env: 'prod' } }, maxReplicas: 1 })
    const recipes = [
      recipe('shop', { namespace: 'team-b' }),
      recipe('zoo', { spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', replicas: 3 }] } }),
      recipe('blog', { image: PINNED }),
      recipe('api', { namespace: 'team-a' }),
    ]
    const writes = statuses([digestPolicy(), prodOnly], recipes)
    expect(writes).toEqual([
      {
        name: 'pinned', resourceVersion: '7',
        status: {
          observedGeneration: 1,
          conditions: [{ type: 'Ready', status: 'True', reason: 'Valid', message: 'The policy is well formed', observedGeneration: 1, lastTransitionTime: NOW }],
          totalViolations: 3,
          violations: [
            { namespace: 'team-a', recipe: 'api', rule: 'images.requireDigest', message: 'workload "web": image "nginx:1.27" is not pinned by digest' },
            { namespace: 'team-a', recipe: 'zoo', rule: 'images.requireDigest', message: 'workload "web": image "nginx:1.27" is not pinned by digest' },
            { namespace: 'team-b', recipe: 'shop', rule: 'images.requireDigest', message: 'workload "web": image "nginx:1.27" is not pinned by digest' },
          ],
          lastEvaluationTime: NOW,
        },
      },
      {
        name: 'prod-replicas', resourceVersion: '7',
        status: expect.objectContaining({
          totalViolations: 1,
          violations: [{ namespace: 'team-a', recipe: 'zoo', rule: 'replicas.max', message: 'workload "web": replicas 3 exceeds the maximum 1' }],
        }),
      },
    ])
  })

  it('lists at most 20 violations and counts them all in totalViolations', () => {
    const recipes = Array.from({ length: 25 }, (_, i) => recipe(`r${String(i).padStart(2, '0')}`))
    const [write] = statuses([digestPolicy()], recipes)
    expect(write?.status.totalViolations).toBe(25)
    expect(write?.status.violations).toHaveLength(20)
    expect(write?.status.violations?.map((v) => v.recipe).at(-1)).toBe('r19')
  })

  it('reports a malformed policy as Ready=False InvalidSpec and still counts its findings', () => {
    const malformed = policy('caps', { security: { allowedCapabilities: ['KILL'], forbiddenCapabilities: ['KILL'] } })
    const [write] = statuses([malformed], [recipe('shop', { spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', security: { addCapabilities: ['KILL'] } }] } })])
    expect(write?.status.conditions).toEqual([{
      type: 'Ready', status: 'False', reason: 'InvalidSpec', observedGeneration: 1, lastTransitionTime: NOW,
      message: 'spec.security: KILL both allowed and forbidden',
    }])
    expect(write?.status.violations?.map((v) => v.rule)).toEqual(['capabilities.forbidden'])
  })

  it('writes a status only when it changed: not again for the same state later, but when a recipe is fixed', () => {
    const recipes = [recipe('shop'), recipe('blog', { image: PINNED })]
    const [first] = statuses([digestPolicy()], recipes)
    const written = digestPolicy()
    written.status = first!.status
    expect(statuses([written], recipes, LATER)).toEqual([])

    const fixed = [recipe('shop', { image: PINNED }), recipe('blog', { image: PINNED })]
    const [second] = statuses([written], fixed, LATER)
    expect(second?.status).toMatchObject({ totalViolations: 0, violations: [], lastEvaluationTime: LATER })
    expect(second?.status.conditions?.[0]?.lastTransitionTime).toBe(NOW)
  })

  it('counts templates with their own values, and neither recipes being deleted nor invalid generations', () => {
    const recipes = [
      recipe('tmpl', { annotations: { 'purko.io/template': 'true' } }),
      recipe('going', { deleting: true }),
      recipe('broken', { spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['nope'] }] } }),
    ]
    const [write] = statuses([digestPolicy()], recipes)
    expect(write?.status.violations?.map((v) => v.recipe)).toEqual(['tmpl'])
  })

  it('never attributes the built-in Pod Security findings to a policy named pod-security', () => {
    const audit = policy('pod-security', { mode: 'Audit', maxReplicas: 5 })
    const r = recipe('shop', { spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', security: { addCapabilities: ['KILL'] } }] } })
    const labels: NamespaceLabels = { 'sandbox-recipes': { 'pod-security.kubernetes.io/enforce': 'restricted' } }
    const rendered = renderForPolicies([r], CONFIG)
    expect(evaluateRecipe(rendered[0]!, [audit], labels).violations.map((v) => v.rule)).toEqual(['capabilities.podSecurity'])
    expect(policyEvaluations(audit, rendered, labels)).toEqual([{ namespace: 'team-a', recipe: 'shop', violations: [] }])
  })
})

describe('which recipes a policy change re-plans (spec §10.4)', () => {
  const selective = policy('shop-only', { recipeSelector: { matchLabels: { app: 'shop' } } })
  const recipes = [
    recipe('blog', { labels: { app: 'blog' } }),
    recipe('shop', { labels: { app: 'shop' } }),
    recipe('old', { labels: { app: 'old' }, status: { policy: { compliant: true, evaluated: ['shop-only'], violations: [], totalViolations: 0 } } }),
    recipe('gone', { labels: { app: 'shop' }, deleting: true }),
  ]
  const names = (rs: WorkflowRecipe[]) => rs.map((r) => r.metadata.name)

  it('those it matches now and those whose last evaluation listed it, not those being deleted', () => {
    expect(names(recipesAffectedBy('shop-only', [selective], recipes, LABELS))).toEqual(['old', 'shop'])
  })

  it('after a delete, those the last copy of the policy matched', () => {
    expect(names(recipesAffectedBy('shop-only', [], recipes, LABELS))).toEqual(['old'])
    expect(names(recipesAffectedBy('shop-only', [selective], recipes, LABELS))).toEqual(['old', 'shop'])
  })

  it('by namespace labels, including the name label the API server sets', () => {
    const byName = policy('team-b', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-b' } } })
    expect(names(recipesAffectedBy('team-b', [byName], [...recipes, recipe('other', { namespace: 'team-b' })], LABELS))).toEqual(['other'])
  })
})

describe('which recipes the resync tick re-plans', () => {
  const pinned = digestPolicy()
  const outcomeOf = (r: WorkflowRecipe) => evaluateRecipe(renderForPolicies([r], CONFIG)[0]!, [pinned], LABELS)
  const recorded = (r: WorkflowRecipe) => recipePolicyStatus(outcomeOf(r))

  it('not one whose recorded outcome is the fresh one', () => {
    const r = recipe('shop')
    const settled = recipe('shop', { status: { phase: 'Active', policy: recorded(r) } })
    expect(needsReevaluation(settled, outcomeOf(settled))).toBe(false)
  })

  it.each<[string, WorkflowRecipeStatus]>([
    ['a new violation', { phase: 'Active', policy: { compliant: true, evaluated: [], violations: [], totalViolations: 0 } }],
    ['never evaluated', { phase: 'Active' }],
    ['policies unavailable last time', { phase: 'Active', conditions: [{ type: 'PolicyCompliant', status: 'Unknown', reason: 'PolicyUnavailable', message: 'x', lastTransitionTime: NOW }] }],
  ])('one with %s', (_, status) => {
    const r = recipe('shop', { status })
    expect(needsReevaluation(r, outcomeOf(r))).toBe(true)
  })

  it.each<[string, WorkflowRecipeStatus['phase'], string]>([
    ['Rejected by policy', 'Rejected', 'PolicyViolation'],
    ['waiting for approval', 'PendingApproval', 'ApprovalRequired'],
  ])('one %s, even when its record matches', (_, phase, reason) => {
    const base = recipe('shop')
    const r = recipe('shop', { status: { phase, reason, policy: recorded(base) } })
    expect(needsReevaluation(r, outcomeOf(r))).toBe(true)
  })

  it('not one rejected by a human', () => {
    const base = recipe('shop')
    const r = recipe('shop', { status: { phase: 'Rejected', reason: 'ApprovalRejected', policy: recorded(base) } })
    expect(needsReevaluation(r, outcomeOf(r))).toBe(false)
  })
})

describe('namespaces to read', () => {
  it('each recipe namespace and every target namespace, once', () => {
    const recipes = [
      recipe('shop', { spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }, { name: 'tools', kind: 'Deployment', image: 'mcp:1', transport: 'http', port: 8080 }] } }),
      recipe('blog', { namespace: 'team-b' }),
    ]
    expect(namespacesOf(recipes, renderForPolicies(recipes, CONFIG))).toEqual(['mcp-server', 'sandbox-recipes', 'team-a', 'team-b'])
  })
})
