/**
 * The recipe controller's one `plan` hook, pure: the drift, lifecycle and status-detail planners
 * (and, for a recipe being deleted, the deletion planner) composed into one plan the shell
 * drives. The deploy and rollback planner (deploy-plan.ts) runs where the action's children are
 * written, on the live state read for them (shared/recipe/act.ts).
 */
import type { Transition } from '../../core/plan.js'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../../schemas/workflowrecipe.js'
import { planDeletion, type DeletionInput, type DeletionPlan } from './deletion.js'
import { objectKey, readinessFromLive, type LiveObjects } from './deploy-plan.js'
import { planDrift, type DriftPlan } from './drift.js'
import type { LifecycleFacts } from './lifecycle-facts.js'
import { planLifecycle } from './lifecycle/plan.js'
import type { LifecyclePlan } from './lifecycle/plan-types.js'
import type { RevisionObjects } from './observe.js'
import type { PolicyOutcome } from './policy.js'
import { withDetails } from './status-details.js'

const SETTLED = new Set(['Active', 'Degraded'])

/** What one planning pass of a live (not deleting) recipe is told. */
export interface PassFacts {
  /** The lifecycle planner's facts, but drift (planned here from `live`). */
  lifecycle: LifecycleFacts
  /** The observed revision's objects and the live state read for them. */
  objects?: RevisionObjects
  live: LiveObjects
  /** Job workloads of the observed revision that completed (from its snapshot). */
  completedJobs: readonly string[]
  /** `Warn` policy findings of this generation, told once when its revision is created. */
  policyWarnings: PolicyOutcome['warnings']
  /** An earlier pass of this reconcile told them already. */
  policyWarned: boolean
}

/** One pass's plan: the lifecycle plan with its status detailed, and what else it tells. */
export interface PassPlan {
  lifecycle: LifecyclePlan
  /** The complete next status (the lifecycle's, with per-workload details). */
  status: WorkflowRecipeStatus
  /** Transitions of the plan itself (the children writes add their own). */
  transitions: Transition[]
  /** Drift of the current revision, planned when settled; the maintain action corrects it. */
  drift?: DriftPlan
  /** `DriftDetected` Events told after the corrections (only when Drifted was not True yet). */
  driftDetected: Transition[]
  policyWarned: boolean
}

function note(reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal'): Transition {
  return { kind: 'event', type, reason, message, record: true, publish: false }
}

/** Pure: one planning pass of a recipe that is not being deleted. */
export function planRecipePass(recipe: WorkflowRecipe, facts: PassFacts, now: string): PassPlan {
  const st = recipe.status ?? {}
  const lifecycleFacts: LifecycleFacts = { ...facts.lifecycle }
  let drift: DriftPlan | undefined
  if (facts.objects && SETTLED.has(st.phase ?? '')) {
    const { objects, live, completedJobs } = facts
    const readiness = readinessFromLive(objects, live, now, [...completedJobs])
    drift = planDrift({
      uid: recipe.metadata.uid ?? '', children: objects.workloads.flatMap((w) => w.children), live,
      driftPolicy: recipe.spec.driftPolicy ?? 'Correct', phase: st.phase ?? '', deleting: false, completedJobs: [...completedJobs],
      mcpServerWritten: (c) => c.workload === undefined || readiness[c.workload]?.mainReady === true,
      previouslyDrifted: (st.conditions ?? []).some((c) => c.type === 'Drifted'),
    })
    lifecycleFacts.drift = { detected: drift.drift.length > 0 }
  }
  const lifecycle = planLifecycle(recipe, lifecycleFacts, now)
  const status = withDetails(lifecycle.status, facts.objects, facts.live, lifecycleFacts.tests)
  const transitions: Transition[] = [...lifecycle.transitions]
  let policyWarned = facts.policyWarned
  if (!policyWarned && facts.policyWarnings.length > 0 && lifecycle.transitions.some((t) => t.kind === 'revision.created')) {
    policyWarned = true
    for (const v of facts.policyWarnings) transitions.push(note('PolicyWarning', `${v.policy}: ${v.rule}: ${v.message}`, 'Warning'))
  }
  // Told once: while the recorded status already says Drifted, it is not told again. (The planned
  // status cannot decide it: the pass that finds the drift is the one that marks Drifted True.)
  const wasDrifted = (st.conditions ?? []).find((c) => c.type === 'Drifted')?.status === 'True'
  const driftDetected = lifecycle.action.type !== 'maintain' || wasDrifted ? []
    : (drift?.events ?? []).filter((e) => e.reason === 'DriftDetected').map((e) => note('DriftDetected', e.message, 'Warning'))
  return { lifecycle, status, transitions, ...(drift ? { drift } : {}), driftDetected, policyWarned }
}

/** What the deletion planner is told, and the recipe's recorded status it reports on. */
export type DeletionFacts = DeletionInput

/** A deletion step: the deletion plan, the status to write (none once the finalizer goes) and what it tells. */
export interface DeletionStep {
  deletion: DeletionPlan
  status?: WorkflowRecipeStatus
  /** Told before the deletes of this step. */
  transitions: Transition[]
  /** Told after them (the finalizer is released). */
  last: Transition[]
}

/** Pure: spec §11 for a recipe being deleted: the deletes of one wave, or the finalizer's release. */
export function planRecipeDeletion(recipe: WorkflowRecipe, facts: DeletionFacts, now: string): DeletionStep {
  const deletion = planDeletion(facts)
  if (deletion.action === 'orphan') return { deletion, transitions: [note(deletion.event.reason, deletion.event.message)], last: [] }
  const transitions: Transition[] = deletion.deleted.map((e) => ({
    kind: 'workload.deleted', type: 'Normal', reason: 'WorkloadDeleted', message: `${objectKey(e.kind, e.namespace, e.name)} is gone`, record: true,
    data: { workload: e.workload ?? e.test ?? '', kind: e.kind, object: `${e.namespace}/${e.name}` },
  }))
  if (deletion.removeFinalizer) {
    return { deletion, transitions, last: [{ kind: 'deleted', type: 'Normal', reason: 'Deleted', message: 'every child is gone; the recipe is deleted', record: false }] }
  }
  // Ready=False reason Deleting, and what is left and what blocks it.
  const lifecycle = planLifecycle(recipe, { render: { ok: false, errors: [] }, policy: 'unavailable', prerequisites: [], snapshots: [] }, now)
  const status: WorkflowRecipeStatus = { ...lifecycle.status, deletion: { remaining: deletion.remaining, ...(deletion.blockedBy ? { blockedBy: deletion.blockedBy } : {}) } }
  status.conditions = (status.conditions ?? []).map((c) => (c.type === 'Ready' ? { ...c, message: deletion.ready.message } : c))
  return { deletion, status, transitions, last: [] }
}
