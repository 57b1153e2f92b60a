/**
 * How a run ends: skipped before it starts, failed on an invalid spec or a step list edited
 * mid-run, cancelled, timed out, stopped by its failure strategy, or complete once every step has
 * finished (purko's completion table). Pure.
 */
import { ANNOTATION_CANCEL_REASON, ANNOTATION_REQUESTED_BY } from '../../schemas/labels.js'
import type { Workflow, WorkflowPhase } from '../../schemas/workflow.js'
import { setCondition } from '../../core/conditions.js'
import { formatGoDuration, parseGoDuration } from '../../core/duration.js'
import { DETAILED_STATUS_MAX_STEPS } from './step-states.js'
import { advanceRollback } from './compensation.js'
import { safeParse } from './json-values.js'
import type { RunBuilder } from './run-builder.js'
import type { WorkflowFacts, WorkflowPlan } from './types.js'
import type { UNCHANGED } from '../../core/plan.js'

/** Workflow deadline when `spec.timeout` is not set (purko's 30 minutes). */
export const DEFAULT_WORKFLOW_TIMEOUT_SECONDS = 30 * 60

/** The run ends before it starts: concurrency forbid with whenBusy skip, or replaced by a newer run. */
export function skipRun(run: RunBuilder, reason: string, message: string): WorkflowPlan | typeof UNCHANGED {
  run.resetForNewRun()
  run.status.completionTime = run.now
  run.setPhase('Cancelled', reason, message)
  run.transition({ kind: 'run.finished', type: 'Normal', reason, message, phase: 'Cancelled' })
  return run.finish()
}

/** The step graph is invalid: the run fails at once, saying what is wrong (announced once). */
export function failInvalidSpec(run: RunBuilder, issues: { reason: string; message: string }[]): WorkflowPlan | typeof UNCHANGED {
  const first = issues[0]!
  const message = issues.map((issue) => issue.message).join('; ')
  run.phase = 'Failed'
  run.killJobsOf(run.states)
  run.status.runId = run.runId
  run.status.startTime ??= run.now
  run.status.completionTime ??= run.now
  run.status.conditions = setCondition(run.status.conditions, {
    type: 'SpecValid', status: 'False', reason: first.reason, message, observedGeneration: run.workflow.metadata.generation,
  }, run.now)
  run.setPhase('Failed', 'InvalidSpec', message)
  if (run.status.message !== run.workflow.status?.message || run.workflow.status?.phase !== 'Failed') {
    run.transition({ kind: 'spec.invalid', type: 'Warning', reason: 'InvalidSpec', message })
  }
  return run.finish()
}

/** Large runs record steps by position; a step list edited mid-run cannot be matched up safely. */
export function failChangedSteps(run: RunBuilder, facts: WorkflowFacts): WorkflowPlan | typeof UNCHANGED {
  stopActiveJobs(run, facts)
  run.killJobsOf(run.states)
  run.status.completionTime = run.now
  const message = `The step list changed while this run of more than ${DETAILED_STATUS_MAX_STEPS} steps was in progress; `
    + 'set a new purko.io/rerun annotation to run the edited Workflow'
  run.setPhase('Failed', 'StepsChanged', message)
  run.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepsChanged', message, phase: 'Failed' })
  return run.finish()
}

/** `purko.io/cancel`: every Job of the run stops and every unfinished step is Skipped. */
export function cancelRun(run: RunBuilder, facts: WorkflowFacts): WorkflowPlan | typeof UNCHANGED {
  // Jobs whose start was never recorded (a crash before the status write) are stopped too.
  stopActiveJobs(run, facts)
  for (const [name, state] of run.states) {
    if (state.phase === 'Running' || state.phase === 'RollingBack') {
      run.killJobOf(state)
      run.states.set(name, { ...state, phase: 'Skipped', completionTime: run.now, error: 'Cancelled' })
    } else if (state.phase === 'Pending') {
      run.states.set(name, { ...state, phase: 'Skipped', completionTime: run.now, error: 'Cancelled' })
    }
  }
  run.status.completionTime = run.now
  const { reason, message } = cancelCause(run.annotations)
  run.setPhase('Cancelled', reason, message)
  run.transition({ kind: 'run.finished', type: 'Normal', reason, message, phase: 'Cancelled' })
  return run.finish()
}

/** True, with the run failed and its Jobs stopped, once the run is past its deadline. */
export function failIfTimedOut(run: RunBuilder): boolean {
  const limit = workflowTimeoutSeconds(run.workflow)
  const started = run.status.startTime ? Date.parse(run.status.startTime) : NaN
  const elapsed = (Date.parse(run.now) - started) / 1000
  if (!Number.isFinite(elapsed) || elapsed <= limit) return false
  run.killJobsOf(run.states)
  run.status.completionTime = run.now
  const message = `Workflow exceeded timeout of ${formatGoDuration(limit)} (elapsed: ${formatGoDuration(Math.round(elapsed))})`
  run.setPhase('Failed', 'WorkflowTimeout', message)
  run.transition({ kind: 'run.finished', type: 'Warning', reason: 'WorkflowTimeout', message, phase: 'Failed' })
  return true
}

/** Applies the failure strategy; true when the run's course is decided for this plan. */
export function applyFailureStrategy(run: RunBuilder, facts: WorkflowFacts): boolean {
  const strategy = run.workflow.spec.failureStrategy ?? 'failFast'
  if (strategy === 'continueOnError') return false
  if (strategy === 'failFast') {
    run.skipUnfinished(true, 'Stopped: another step failed (failFast)')
    run.status.completionTime = run.now
    run.setPhase('Failed', 'StepFailed', 'A step failed with failFast strategy')
    run.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepFailed', message: 'A step failed with failFast strategy', phase: 'Failed' })
    return true
  }
  if (strategy === 'stop') {
    // Running steps are allowed to finish; nothing new starts.
    if (run.countPhase('Running') > 0) {
      run.summarise('StepFailed', 'A step failed with stop strategy; waiting for running steps to finish')
      return true
    }
    run.skipUnfinished(false, 'Stopped: another step failed (stop)')
    run.status.completionTime = run.now
    run.setPhase('Failed', 'StepFailed', 'A step failed with stop strategy')
    run.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepFailed', message: 'A step failed with stop strategy', phase: 'Failed' })
    return true
  }
  run.skipUnfinished(true, 'Stopped: another step failed (rollback)')
  run.phase = 'RollingBack'
  advanceRollback(run, facts)
  return true
}

/** Once every step has finished, the run's phase follows the completion table. */
export function completeIfDone(run: RunBuilder): void {
  if (run.countFinished() < run.steps.length) return
  const completed = run.countPhase('Succeeded') + run.countPhase('Skipped')
  const failed = run.countPhase('Failed')
  const { phase, reason, message } = completionPhase(completed, failed, run.steps.length, run.workflow.spec.failureStrategy ?? 'failFast')
  run.status.completionTime = run.now
  run.setPhase(phase, reason, message)
  run.transition({ kind: 'run.finished', type: phase === 'Succeeded' ? 'Normal' : 'Warning', reason, message, phase })
}

/** Pure: purko's completion table (a run's phase from its completed and failed steps and the failure strategy). */
export function completionPhase(completed: number, failed: number, total: number, strategy: string):
  { phase: WorkflowPhase; reason: string; message: string } {
  if (failed === 0) return { phase: 'Succeeded', reason: 'AllStepsCompleted', message: 'All workflow steps completed' }
  if (completed === 0) return { phase: 'Failed', reason: 'AllStepsFailed', message: `0/${total} steps succeeded, ${failed} failed` }
  if (strategy === 'continueOnError') {
    return { phase: 'CompletedWithErrors', reason: 'CompletedWithErrors', message: `${completed}/${total} steps succeeded, ${failed} failed (continueOnError)` }
  }
  return { phase: 'Failed', reason: 'StepsFailed', message: `${completed}/${total} steps succeeded, ${failed} failed` }
}

/** Pure: the workflow deadline in seconds: `spec.timeout` as a duration string or {timeoutSeconds}, else 30 minutes. */
export function workflowTimeoutSeconds(workflow: Workflow): number {
  const timeout = workflow.spec.timeout
  if (typeof timeout === 'string') {
    // Zero or negative is "not set", as for {timeoutSeconds}; taken literally it would fail every run at once.
    const seconds = parseGoDuration(timeout)
    return seconds !== null && seconds > 0 ? seconds : DEFAULT_WORKFLOW_TIMEOUT_SECONDS
  }
  if (timeout && typeof timeout.timeoutSeconds === 'number' && timeout.timeoutSeconds > 0) return timeout.timeoutSeconds
  return DEFAULT_WORKFLOW_TIMEOUT_SECONDS
}

/** Deletes every active Job of the run the facts show, recorded in the status or not. */
function stopActiveJobs(run: RunBuilder, facts: WorkflowFacts): void {
  for (const job of facts.jobs) {
    if (job.runId === run.runId && job.state === 'Active' && !run.plan.deleteJobs.includes(job.name)) run.plan.deleteJobs.push(job.name)
  }
}

/**
 * Why a run is cancelled: the controller's own reason (`kinetic.dev/cancel-reason`, written by a
 * concurrency `replace`), else who asked through run-control (`kinetic.dev/requested-by`), else
 * purko's wording for the bare annotation.
 */
function cancelCause(annotations: Readonly<Record<string, string>>): { reason: string; message: string } {
  const controller = annotations[ANNOTATION_CANCEL_REASON]?.trim()
  if (controller) return { reason: 'ReplacedByConcurrency', message: controller }
  const requested = safeParse(annotations[ANNOTATION_REQUESTED_BY] ?? '') as { action?: unknown; user?: unknown; reason?: unknown } | undefined
  // Only a cancel's own record names who cancelled (a rerun's record may still be there).
  if (requested && typeof requested === 'object' && requested.action === 'cancel' && typeof requested.user === 'string' && requested.user !== '') {
    const reason = typeof requested.reason === 'string' && requested.reason.trim() !== '' ? `: ${requested.reason.trim()}` : ''
    return { reason: 'UserCancelled', message: `Cancelled by ${requested.user}${reason}` }
  }
  return { reason: 'UserCancelled', message: 'Workflow cancelled via purko.io/cancel annotation' }
}
