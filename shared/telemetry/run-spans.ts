import { isTerminalPhase } from '../workflow/plan/run-status.js'
import { ANNOTATION_WORKFLOW_TEMPLATE } from '../schemas/labels.js'
import type { Workflow, WorkflowStatus } from '../schemas/workflow.js'
import { approvalSpanId, backoffSpanId, runSpanId, runTraceId, stepSpanId } from './ids.js'
import { msOf, type SpanRecord } from './span.js'

/**
 * A run's spans, written by whichever function instance moves the run past the moment a span
 * ends: the step attempt that finished or was retried, the approval that was given, the run that
 * reached a final phase. Their ids come from the run id and the Job (ids.ts), so a redelivered
 * event that plans the same move again writes the same span, and the executor's spans (its
 * TRACEPARENT is the attempt's span) hang below the right attempt.
 */

const MAX_ERROR = 256

/** What one status write ended, beside the spans: for the duration histograms. */
export interface EndedWork {
  spans: SpanRecord[]
  steps: Array<{ phase: string; seconds: number }>
  run?: { phase: string; seconds: number }
}

/** What the plan behind a status write did beside the status itself. */
export interface RunMoves {
  /** Steps started on a person's approval (the planner's step.approved transitions): their wait ends as they start. */
  approved?: readonly string[]
  /** When each finished attempt's container started, by Job name (read with its result). */
  podStarts?: ReadonlyMap<string, string>
}

/**
 * Pure: the spans (and durations) that end between `workflow`'s status and `next`, planned at
 * `now`. A step attempt's span runs from its Job's creation to its end, with events for when it
 * was queued, its pod started and it finished; a retried attempt is followed by a backoff span
 * until the retry is due.
 */
export function endedWork(workflow: Workflow, next: WorkflowStatus, now: string, moves: RunMoves = {}): EndedWork {
  const approved = moves.approved ?? []
  const out: EndedWork = { spans: [], steps: [] }
  const runId = next.runId
  if (!runId) return out
  const before = workflow.status?.runId === runId ? workflow.status : undefined
  const traceId = runTraceId(runId)
  const root = runSpanId(runId)
  const nowMs = msOf(now) ?? 0
  const base = {
    'k8s.namespace.name': workflow.metadata.namespace ?? 'default',
    'kinetic.workflow': workflow.metadata.name ?? '',
    'kinetic.run.id': runId,
  }
  const previous = new Map((before?.stepStatuses ?? []).map((s) => [s.name, s]))
  const finishedAt = new Map((next.stepStatuses ?? []).map((s) => [s.name, msOf(s.completionTime)]))
  const byName = new Map(workflow.spec.steps.map((s) => [s.name, s]))
  const readyAt = (name: string) => Math.max(msOf(next.startTime) ?? nowMs, ...(byName.get(name)?.dependsOn ?? []).map((d) => finishedAt.get(d) ?? 0))
  for (const step of next.stepStatuses ?? []) {
    const old = previous.get(step.name)
    if (old?.phase === 'Running' && old.jobName && (step.jobName !== old.jobName || step.phase !== 'Running')) {
      const sameAttempt = step.jobName === old.jobName
      const retried = !sameAttempt || (step.retryCount ?? 0) > (old.retryCount ?? 0)
      const phase = retried ? 'Retrying' : (step.phase ?? 'Unknown')
      const startMs = msOf(old.startTime) ?? nowMs
      const endMs = (sameAttempt && !retried ? msOf(step.completionTime) : undefined) ?? nowMs
      const failed = retried || phase === 'Failed'
      const podStartMs = msOf(moves.podStarts?.get(old.jobName))
      out.spans.push({
        name: `step ${step.name}`,
        traceId, spanId: stepSpanId(old.jobName), parentSpanId: root, kind: 'internal',
        startMs, endMs,
        attributes: {
          ...base,
          'kinetic.step.name': step.name,
          'kinetic.step.attempt': old.retryCount ?? 0,
          'kinetic.step.phase': phase,
          'kinetic.step.retries': step.retryCount ?? 0,
          'kinetic.agent': byName.get(step.name)?.agentRef?.name,
          'k8s.job.name': old.jobName,
        },
        events: [
          // A first attempt was queued once its dependencies were done (or the run began); a retry's queueing is its backoff.
          ...((old.retryCount ?? 0) === 0 ? [{ name: 'queued', atMs: Math.min(startMs, readyAt(step.name)) }] : []),
          { name: 'job.created', atMs: startMs },
          ...(podStartMs !== undefined ? [{ name: 'pod.started', atMs: Math.min(Math.max(podStartMs, startMs), endMs) }] : []),
          { name: 'finished', atMs: endMs, attributes: { 'kinetic.step.phase': phase } },
        ],
        ...(failed ? { error: (step.error ?? old.error ?? phase).slice(0, MAX_ERROR) } : {}),
      })
      out.steps.push({ phase, seconds: Math.max(0, endMs - startMs) / 1000 })
      const dueMs = msOf(step.nextAttemptAt)
      if (retried && step.phase === 'Pending' && dueMs !== undefined) {
        // The wait before the next attempt: from this failure until the retry is due (it starts
        // then, or later if it then waits for a slot).
        out.spans.push({
          name: `backoff ${step.name}`,
          traceId, spanId: backoffSpanId(runId, step.name, step.retryCount ?? 0), parentSpanId: root, kind: 'internal',
          startMs: endMs, endMs: Math.max(endMs, dueMs),
          attributes: { ...base, 'kinetic.step.name': step.name, 'kinetic.step.attempt': step.retryCount ?? 0, 'kinetic.step.backoff.seconds': Math.max(0, dueMs - endMs) / 1000 },
        })
      }
    }
    if (approved.includes(step.name) && step.phase === 'Running') {
      // The wait began when the step became ready: its last dependency finished, or the run began.
      // It ends when the step starts, which may be after the approval if the step then waited for a slot.
      const ready = readyAt(step.name)
      out.spans.push({
        name: `approval ${step.name}`,
        traceId, spanId: approvalSpanId(runId, step.name), parentSpanId: root, kind: 'internal',
        startMs: Math.min(ready, nowMs), endMs: msOf(step.startTime) ?? nowMs,
        attributes: { ...base, 'kinetic.step.name': step.name, 'kinetic.approval.outcome': 'approved' },
      })
    }
  }
  if (isTerminalPhase(next.phase) && !isTerminalPhase(before?.phase)) {
    const startMs = msOf(next.startTime) ?? msOf(workflow.metadata.creationTimestamp) ?? nowMs
    const endMs = msOf(next.completionTime) ?? nowMs
    const phase = next.phase ?? 'Unknown'
    out.spans.push({
      name: `run ${workflow.metadata.name ?? ''}`,
      traceId, spanId: root, kind: 'internal', startMs, endMs,
      attributes: {
        ...base,
        'kinetic.run.phase': phase,
        'kinetic.run.steps.total': next.totalSteps,
        'kinetic.run.steps.completed': next.completedSteps,
        'kinetic.run.steps.failed': next.failedSteps,
        'kinetic.workflow.template': workflow.metadata.annotations?.[ANNOTATION_WORKFLOW_TEMPLATE],
      },
      ...(phase === 'Failed' ? { error: (next.message ?? phase).slice(0, MAX_ERROR) } : {}),
    })
    out.run = { phase, seconds: Math.max(0, endMs - startMs) / 1000 }
  }
  return out
}
