// Recipes, facts and a driver for the lifecycle planner tests (spec §7).
import { FINALIZER } from '../../shared/recipe/plan/lifecycle/annotations.js'
import { planLifecycle } from '../../shared/recipe/plan/lifecycle/plan.js'
import type { LifecyclePlan } from '../../shared/recipe/plan/lifecycle/plan-types.js'
import type { LifecycleFacts, PolicyFacts, ReadinessFacts, WorkloadFact } from '../../shared/recipe/plan/lifecycle-facts.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'

export const T0 = '2026-03-01T10:00:00.000Z'
export const at = (seconds: number): string => new Date(Date.parse(T0) + seconds * 1000).toISOString()
export const DIGEST_A = 'a'.repeat(64)
export const DIGEST_B = 'b'.repeat(64)

export const WEB = { name: 'web', kind: 'Deployment', image: 'nginx:1.27' }

export interface RecipeOptions {
  spec?: Record<string, unknown>
  generation?: number
  annotations?: Record<string, string>
  status?: WorkflowRecipeStatus
  finalizers?: string[]
  deleting?: boolean
}

export function recipe(o: RecipeOptions = {}): WorkflowRecipe {
  const r = WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'WorkflowRecipe',
    metadata: {
      name: 'shop', namespace: 'team-a', uid: 'uid-1', generation: o.generation ?? 1,
      finalizers: o.finalizers ?? [FINALIZER],
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.deleting ? { deletionTimestamp: T0 } : {}),
    },
    spec: o.spec ?? { workloads: [WEB] },
  })
  if (o.status) r.status = o.status
  return r
}

type Outcome = Exclude<PolicyFacts, 'unavailable'>

export const compliant: Outcome = {
  evaluated: [], violations: [], totalViolations: 0, compliant: true, rejected: false, reason: 'Compliant', message: '',
  approval: { required: false, requiredBy: [] },
}

export function needsApproval(timeoutSeconds?: number): Outcome {
  return { ...compliant, evaluated: ['production'], approval: { required: true, requiredBy: ['production'], ...(timeoutSeconds ? { timeoutSeconds } : {}) } }
}

export const rejecting: Outcome = {
  evaluated: ['production'],
  violations: [{ policy: 'production', mode: 'Enforce', rule: 'images.requireDigest', workload: 'web', message: 'workload "web": image "nginx:1.27" is not pinned by digest' }],
  totalViolations: 1, compliant: false, rejected: true, reason: 'PolicyViolation',
  message: 'Rejected by policy: production: images.requireDigest: workload "web": image "nginx:1.27" is not pinned by digest',
  approval: { required: false, requiredBy: [] },
}

export function web(ready: boolean, extra: Partial<WorkloadFact> = {}): WorkloadFact {
  return { name: 'web', kind: 'Deployment', namespace: 'sandbox-recipes', objectName: 'team-a-shop-web-5101637e', ready, message: ready ? '1/1 replicas available' : '0/1 replicas available', firstAppliedAt: T0, ...extra }
}

export function readiness(revision: number, ...workloads: WorkloadFact[]): ReadinessFacts {
  return { revision, applied: true, pruned: true, workloads: workloads.length > 0 ? workloads : [web(true)] }
}

export function facts(over: Partial<LifecycleFacts> = {}): LifecycleFacts {
  return {
    render: { ok: true, digest: DIGEST_A, resolved: { profile: '', inputs: {}, computed: {}, included: ['web'], excluded: [], order: ['web'] } },
    policy: compliant,
    prerequisites: [],
    snapshots: [],
    ...over,
  }
}

/** The recipe after the shell wrote what the plan says (status, finalizer). */
export function applied(r: WorkflowRecipe, plan: LifecyclePlan): WorkflowRecipe {
  const finalizers = plan.addFinalizer ? [...(r.metadata.finalizers ?? []), FINALIZER] : r.metadata.finalizers
  return { ...r, metadata: { ...r.metadata, ...(finalizers ? { finalizers } : {}) }, status: plan.status }
}

/** `<to>:<reason>` of each phase change of a plan. */
export function walk(plan: LifecyclePlan): string[] {
  return plan.transitions.filter((t) => t.kind === 'phase.changed').map((t) => `${String(t.data?.to)}:${t.reason}`)
}

/** Other (non phase) Event reasons of a plan. */
export function notes(plan: LifecyclePlan): string[] {
  return plan.transitions.filter((t) => t.kind !== 'phase.changed').map((t) => t.reason)
}

export function condition(plan: LifecyclePlan, type: string) {
  return plan.status.conditions?.find((c) => c.type === type)
}

/** Plans, applies, and checks echo safety: planning again over the result with the same facts changes nothing. */
export function settle(r: WorkflowRecipe, f: LifecycleFacts, now: string): { plan: LifecyclePlan; next: WorkflowRecipe; echo: LifecyclePlan } {
  const plan = planLifecycle(r, f, now)
  const next = applied(r, plan)
  const echo = planLifecycle(next, f, now)
  return { plan, next, echo }
}

/** Drives a recipe from scratch to Active on revision 1 (digest A). */
export function activeRecipe(o: RecipeOptions = {}, digest = DIGEST_A): WorkflowRecipe {
  const r = recipe({ ...o, status: undefined })
  const results = (r.spec.tests ?? []).map((t) => ({ name: t.name, jobName: `team-a-shop-test-${t.name}-r1`, phase: 'Succeeded' as const, startTime: T0, completionTime: T0 }))
  const f = facts({ readiness: readiness(1), snapshots: [1], tests: { revision: 1, results } })
  if (f.render.ok) f.render.digest = digest
  const plan = planLifecycle(r, f, T0)
  if (plan.status.phase !== 'Active') throw new Error(`fixture did not reach Active: ${plan.status.phase}`)
  return applied(recipe({ ...o, status: undefined }), plan)
}

