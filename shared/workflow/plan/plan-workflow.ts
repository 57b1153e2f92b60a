/**
 * The Workflow planner's entry point: from a run's fresh state and the facts of its Jobs and
 * agents, the next state of the run and the writes that get there. The folder beside it holds
 * the parts: scheduling, results and retries, approvals, run endings and compensation.
 * Pure: no I/O and no clock, the time comes in as `now`.
 */
import type { WorkflowStatus } from '../../schemas/workflow.js'
import { ANNOTATION_CANCEL, ANNOTATION_RERUN, ANNOTATION_TEMPLATE } from '../../schemas/labels.js'
import { admitRun, type Admission } from '../../template/plan/concurrency.js'
import { setCondition } from '../../core/conditions.js'
import { topologicalOrder, validateSteps } from './dag.js'
import { runIdFor } from './run-id.js'
import { isQueuedStatus, isRetriableSpecFailure, isTerminalPhase, runControlDigest } from './run-status.js'
import { decodeStepStates, stepListChanged } from './step-states.js'
import { applyDenials } from './approvals.js'
import { advanceRollback } from './compensation.js'
import { sameJson } from './json-values.js'
import { RunBuilder, templateFields } from './run-builder.js'
import { applyFailureStrategy, cancelRun, completeIfDone, failChangedSteps, failIfTimedOut, failInvalidSpec, skipRun } from './run-endings.js'
import { observeJobs } from './step-results.js'
import { scheduleReadySteps } from './step-scheduling.js'
import { UNCHANGED } from '../../core/plan.js'
import type { WorkflowFacts, WorkflowPlan } from './types.js'

/**
 * Pure: the next state of a Workflow run and the writes that get there. Re-planning on the
 * plan's own result gives UNCHANGED, so duplicate and echoed events write nothing.
 */
export function planWorkflow(facts: WorkflowFacts, now: string): WorkflowPlan | typeof UNCHANGED {
  const workflow = facts.workflow
  const meta = workflow.metadata
  const annotations = meta.annotations ?? {}
  if (meta.deletionTimestamp || annotations[ANNOTATION_TEMPLATE] === 'true') return UNCHANGED

  const runId = runIdFor(meta.uid ?? '', annotations[ANNOTATION_RERUN])
  const previous = workflow.status ?? {}
  const sameRun = previous.runId === runId && !isRetriableSpecFailure(workflow)
  if (sameRun && isTerminalPhase(previous.phase)) return UNCHANGED

  const order = topologicalOrder(workflow.spec.steps)
  const run = new RunBuilder(workflow, runId, sameRun ? previous : templateFields(previous), now, order ?? [])
  const issues = validateSteps(workflow.spec.steps, order)
  if (issues.length > 0) return failInvalidSpec(run, issues)

  if (!sameRun) {
    const rerun = previous.runId !== undefined && previous.runId !== runId
    // A rerun supersedes a run still in progress: its Jobs would only burn resources now.
    if (rerun && !isTerminalPhase(previous.phase)) run.killJobsOf(decodeStepStates({ ...workflow, status: previous }))
    // A cancelled run is not held back: it starts only to end at once.
    const admission: Admission = annotations[ANNOTATION_CANCEL] === 'true' ? { kind: 'start' } : admitRun(workflow, facts.siblings ?? [])
    if (admission.kind === 'wait') return queueRun(run, admission.position, admission.message)
    if (admission.kind === 'skip') return skipRun(run, admission.reason, admission.message)
    if (admission.kind === 'replace') run.plan.cancelRuns.push(...admission.cancel)
    run.start(rerun, admission.kind === 'start' ? admission.warning : undefined)
  }
  if (annotations[ANNOTATION_CANCEL] === 'true') return cancelRun(run, facts)
  if (sameRun && stepListChanged(workflow)) return failChangedSteps(run, facts)

  observeJobs(run, facts)
  if (failIfTimedOut(run)) return run.finish()
  applyDenials(run)

  if (run.phase === 'RollingBack') {
    advanceRollback(run, facts)
    return run.finish()
  }
  if (run.failedCount() > 0 && applyFailureStrategy(run, facts)) return run.finish()
  scheduleReadySteps(run, facts)
  // A denial whose turn came during scheduling is handled now, so re-planning changes nothing.
  if (run.failedCount() > 0 && applyFailureStrategy(run, facts)) return run.finish()
  completeIfDone(run)
  return run.finish()
}

/**
 * The run waits for its template's concurrency policy: phase Pending with its queue position
 * and no run id yet. Announced once; a new position only updates the status.
 */
function queueRun(run: RunBuilder, position: number, message: string): WorkflowPlan | typeof UNCHANGED {
  const previous = run.workflow.status ?? {}
  const wasQueued = isQueuedStatus(previous)
  const status: WorkflowStatus = {
    ...templateFields(previous),
    phase: 'Pending',
    message,
    queuePosition: position,
    observedGeneration: run.workflow.metadata.generation,
    runControl: runControlDigest(run.annotations),
    conditions: setCondition(wasQueued ? previous.conditions : undefined, { type: 'Complete', status: 'False', reason: 'Queued', message }, run.now),
  }
  if (!wasQueued) run.transition({ kind: 'run.queued', type: 'Normal', reason: 'Queued', message, phase: 'Pending' })
  const unchanged = sameJson(status, run.workflow.status)
  if (unchanged && run.plan.deleteJobs.length === 0) return UNCHANGED
  return { ...run.plan, status: unchanged ? null : status }
}
