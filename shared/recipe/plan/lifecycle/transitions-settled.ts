/**
 * The transitions of the revision that runs (spec §7.3 T19-T22): Active and Degraded follow its
 * readiness (spec §7.8), and a rollback ends Active on its target or RollbackFailed (spec §7.9).
 */
import { enterPhase, type HandlerOutcome, type PlanningContext } from './context.js'
import { addSeconds, hasPassed, progressDeadlineSeconds } from './deadlines.js'
import { everyReportedWorkloadReady, readinessFor, settledProblem } from './readiness-checks.js'
import { rollbackTarget } from './revisions.js'

/** Active (spec §7.3 T19, §7.8): a missing child or a workload that is not Ready degrades the recipe. */
export function fromActive(ctx: PlanningContext): HandlerOutcome {
  const problem = settledProblem(readinessFor(ctx, ctx.status.currentRevision ?? 0))
  if (!problem) return 'stay'
  enterPhase(ctx, 'Degraded', problem.reason, problem.message)
  return 'acted'
}

/** Degraded (spec §7.3 T20): readiness reported for the current revision, with every workload Ready, recovers it. */
export function fromDegraded(ctx: PlanningContext): HandlerOutcome {
  const current = ctx.status.currentRevision ?? 0
  const readiness = readinessFor(ctx, current)
  if (!readiness || settledProblem(readiness)) return 'stay'
  enterPhase(ctx, 'Active', 'Recovered', `Every workload of revision ${current} is Ready again`)
  return 'acted'
}

/**
 * spec §7.3 T21, §7.9: the rollback's target runs, Active again and current; `UpToDate=False` says why
 * (`RolledBack` naming the failed revision, or `ManualRollback`).
 */
function completeRollback(ctx: PlanningContext, target: number, manual: boolean): HandlerOutcome {
  const { status } = ctx
  const failed = [...(status.revisions ?? [])].reverse().find((e) => e.state === 'Failed' && e.revision !== target)
  const message = manual || !failed
    ? `Rolled back to revision ${target}`
    : `revision ${failed.revision} (generation ${failed.generation ?? 0}) failed: ${failed.reason ?? 'Failed'}; running revision ${target}`
  status.revisions = (status.revisions ?? []).map((e) => (e.revision === target ? { ...e, state: 'Active' } : e.state === 'Active' ? { ...e, state: 'Superseded' } : e))
  status.currentRevision = target
  ctx.upToDate = { status: 'False', reason: manual ? 'ManualRollback' : 'RolledBack', message }
  enterPhase(ctx, 'Active', manual ? 'ManualRollback' : 'RolledBack', message)
  return 'acted'
}

/**
 * RollingBack (spec §7.3 T21, T22): a refused write fails the rollback; the target's workloads all Ready and
 * pruning done complete it; the progress deadline passing fails it.
 */
export function fromRollingBack(ctx: PlanningContext): HandlerOutcome {
  const { status, recipe, now } = ctx
  const target = rollbackTarget(status)
  const manual = status.reason === 'ManualRollback'
  const readiness = readinessFor(ctx, target)
  const applyFailed = readiness?.workloads.find((w) => w.failed?.reason === 'ApplyFailed')
  if (applyFailed?.failed) { // T22
    enterPhase(ctx, 'RollbackFailed', 'RollbackApplyFailed', applyFailed.failed.message)
    return 'acted'
  }
  if (readiness && everyReportedWorkloadReady(readiness) && readiness.pruned) return completeRollback(ctx, target, manual)
  const deadlineSeconds = progressDeadlineSeconds(recipe)
  if (hasPassed(addSeconds(status.phaseTransitionTime ?? now, deadlineSeconds), now)) { // T22
    enterPhase(ctx, 'RollbackFailed', 'RollbackTimeout', `revision ${target} was not ready within ${deadlineSeconds}s`)
    return 'acted'
  }
  return 'stay'
}
