import type { Workflow, WorkflowStatus } from '../schemas/workflow.js'
import { spanSink } from './exporter.js'
import { dashboardMetrics } from './metrics.js'
import { endedWork, type RunMoves } from './run-spans.js'
import { noteAdvanced } from './work.js'

/**
 * After a run's status write landed: records the spans and durations it ended (run-spans.ts) and
 * tells the current function span which run and steps it advanced.
 */
export function recordRunProgress(
  workflow: Workflow, next: WorkflowStatus, moves: RunMoves & { started: ReadonlyArray<{ jobName: string }> }, now: string,
): void {
  const runId = next.runId
  if (!runId) return
  const ended = endedWork(workflow, next, now, moves)
  for (const step of ended.steps) dashboardMetrics.stepDuration.observe({ phase: step.phase }, step.seconds)
  if (ended.run) dashboardMetrics.runDuration.observe({ phase: ended.run.phase }, ended.run.seconds)
  const sink = spanSink()
  if (!sink.enabled) return
  for (const span of ended.spans) sink.record(span)
  for (const start of moves.started) noteAdvanced(runId, start.jobName)
  for (const span of ended.spans) {
    const job = span.attributes['k8s.job.name']
    if (typeof job === 'string') noteAdvanced(runId, job)
  }
  noteAdvanced(runId)
}

/** The queue of a template's runs as this reconcile saw it (a gauge: the last look wins). */
export function recordQueueDepth(namespace: string, template: string, waiting: number): void {
  dashboardMetrics.queued.set({ namespace, template }, waiting)
}
