/**
 * The recipe lifecycle planner (spec §7.1-§7.7, §7.10, §9, §13): from a recipe (spec,
 * annotations, status) and the facts a shell read (lifecycle-facts.ts), the next status, the one
 * action to take next and the transitions to announce. Pure: `now` is an argument, no I/O.
 *
 * The plan walks the spec §7.3 table (transition-table.ts) step by step, so transient states are
 * passed through within one plan (each passage recorded in history and announced), then completes
 * the status (conditions.ts). Idempotent: the same facts over the same status give the same plan,
 * and planning over a status this planner just produced, with the same facts, changes nothing (no
 * transition, same status).
 *
 * What happens *within* an action (deploy order, apply, prune, drift, rollback waves, deletion)
 * belongs to deploy-plan.ts, drift.ts, rollback.ts and deletion.ts; this planner decides *when*.
 */
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'
import { canonicalJson } from '../digest.js'
import type { LifecycleFacts } from '../lifecycle-facts.js'
import { readinessTimeout } from '../readiness.js'
import { isTemplate } from '../render.js'
import { FINALIZER } from './annotations.js'
import { completeStatus, setCondition } from './conditions.js'
import type { PlanningContext } from './context.js'
import { addSeconds, progressDeadlineSeconds, testTimeoutSeconds } from './deadlines.js'
import type { LifecycleAction, LifecyclePlan } from './plan-types.js'
import { notReadyWorkloads, readinessFor, testResultsFor } from './readiness-checks.js'
import { revisionEntry, rollbackTarget, snapshotsToPrune } from './revisions.js'
import { takeTransitionStep } from './transition-table.js'

/** A plan passes through at most this many transitions (the longest chain is 7). */
const MAX_STEPS = 16

/** The earliest deadline still ahead in the phase the plan left (spec §7.10), for `status.nextCheckAt`. */
function nextCheckAt(ctx: PlanningContext): string | undefined {
  const { status, recipe, facts, now } = ctx
  const since = status.phaseTransitionTime ?? now
  switch (status.phase) {
    case 'PendingApproval': {
      const timeout = facts.policy !== 'unavailable' ? (facts.policy.approval.timeoutSeconds ?? 0) : 0
      return timeout > 0 && status.approval?.requestedAt ? addSeconds(status.approval.requestedAt, timeout) : undefined
    }
    case 'Pending':
    case 'RollingBack':
      return addSeconds(since, progressDeadlineSeconds(recipe))
    case 'Deploying':
      return readinessTimeout(notReadyWorkloads(ctx, readinessFor(ctx, status.revision ?? 0)), since, progressDeadlineSeconds(recipe), now).nextCheckAt
    case 'Testing': {
      const running = testResultsFor(ctx, status.revision ?? 0).filter((t) => t.phase !== 'Succeeded' && t.phase !== 'Failed' && t.startTime)
      const deadlines = running.map((t) => Date.parse(addSeconds(t.startTime!, testTimeoutSeconds(recipe, t.name))))
      return deadlines.length > 0 ? new Date(Math.min(...deadlines)).toISOString() : undefined
    }
    default:
      return undefined
  }
}

/** The one action the phase asks of the shell; a template never gets one. */
function actionOf(status: WorkflowRecipeStatus, template: boolean, nextCheck: string | undefined): LifecycleAction {
  const current = status.currentRevision ?? 0
  if (template) return { type: 'none' }
  switch (status.phase) {
    case 'Deploying': return { type: 'deploy', revision: status.revision ?? 0 }
    case 'Testing': return { type: 'test', revision: status.revision ?? 0 }
    case 'RollingBack': return { type: 'rollback', from: current, to: rollbackTarget(status) }
    case 'Pending':
    case 'PendingApproval':
      return nextCheck ? { type: 'wait', until: nextCheck } : { type: 'wait' }
    case 'Deprecated':
    case undefined:
      return { type: 'none' }
    default:
      return current > 0 ? { type: 'maintain', revision: current } : { type: 'none' }
  }
}

/** A recipe being deleted: `Ready=False` reason `Deleting`, and the deletion planner takes over (spec §11). */
function deletionPlan(status: WorkflowRecipeStatus, previous: WorkflowRecipeStatus, generation: number, now: string): LifecyclePlan {
  status.conditions = setCondition([...(status.conditions ?? [])], { type: 'Ready', status: 'False', reason: 'Deleting', message: 'the recipe is being deleted' }, generation, now)
  delete status.nextCheckAt
  return { transitions: [], status, changed: canonicalJson(status) !== canonicalJson(previous), action: { type: 'delete' }, addFinalizer: false, pruneSnapshots: [] }
}

/**
 * Pure: the lifecycle plan of one recipe (spec §7). `now` is an ISO time. A recipe being deleted gets
 * `action: delete` and `Ready=False` reason `Deleting`; everything else walks the spec §7.3 table.
 */
export function planLifecycle(recipe: WorkflowRecipe, facts: LifecycleFacts, now: string): LifecyclePlan {
  const previous: WorkflowRecipeStatus = recipe.status ?? {}
  const status: WorkflowRecipeStatus = JSON.parse(JSON.stringify(previous)) as WorkflowRecipeStatus
  const generation = recipe.metadata.generation ?? 1
  const template = isTemplate(recipe)
  if (recipe.metadata.deletionTimestamp) return deletionPlan(status, previous, generation, now)

  const ctx: PlanningContext = { recipe, facts, now, generation, template, status, previous, transitions: [] }
  for (let i = 0; i < MAX_STEPS && takeTransitionStep(ctx); i++) { /* walk the table */ }
  completeStatus(ctx)
  const nextCheck = nextCheckAt(ctx)
  if (nextCheck) status.nextCheckAt = nextCheck
  else delete status.nextCheckAt

  const revision = status.revision ?? 0
  const needsSnapshot = !template && revision > 0 && (status.phase === 'Pending' || status.phase === 'Deploying') && !facts.snapshots.includes(revision) && revisionEntry(status, revision)?.state === 'InProgress'
  const plan: LifecyclePlan = {
    transitions: ctx.transitions,
    status,
    changed: canonicalJson(status) !== canonicalJson(previous),
    action: actionOf(status, template, nextCheck),
    addFinalizer: !template && !(recipe.metadata.finalizers ?? []).includes(FINALIZER),
    pruneSnapshots: template ? [] : snapshotsToPrune(status, recipe, facts),
    ...(nextCheck ? { nextCheckAt: nextCheck } : {}),
  }
  if (needsSnapshot) plan.writeSnapshot = revision
  if (ctx.abandonedRevision !== undefined) plan.abandon = ctx.abandonedRevision
  return plan
}
