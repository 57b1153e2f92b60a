import type { Workflow } from '../../schemas/workflow.js'
import {
  ANNOTATION_APPROVE_PREFIX, ANNOTATION_CANCEL, ANNOTATION_DENY_PREFIX, ANNOTATION_RERUN, ANNOTATION_TEMPLATE,
} from '../../schemas/labels.js'
import { runIdFor } from './run-id.js'

/**
 * What a Workflow's metadata and status say about its run, without the spec: enough to drop an
 * event early. Kept apart from the planner so a function can answer an echo of its own status
 * write before loading the planner (and parsing a 10,000-step spec).
 */
export type RunView = Pick<Workflow, 'metadata' | 'status'>

const TERMINAL_RUN: ReadonlySet<string> = new Set(['Succeeded', 'CompletedWithErrors', 'Failed', 'Cancelled'])

/** Pure: true when the run phase is final. */
export const isTerminalPhase = (phase: string | undefined): boolean => phase !== undefined && TERMINAL_RUN.has(phase)

const FINISHED_STEP: ReadonlySet<string> = new Set(['Succeeded', 'Skipped', 'Failed', 'RolledBack'])
/** Whether a step phase is final for its run (compensated steps included). */
export const isFinishedStepPhase = (phase: string | undefined): boolean => phase !== undefined && FINISHED_STEP.has(phase)

/** Pure: digest of the annotations that steer a run, so echoes of our own writes are cheap to spot. */
export function runControlDigest(annotations: Readonly<Record<string, string>> | undefined): string {
  const keys = Object.keys(annotations ?? {})
    .filter((k) => k === ANNOTATION_CANCEL || k === ANNOTATION_RERUN || k.startsWith(ANNOTATION_APPROVE_PREFIX) || k.startsWith(ANNOTATION_DENY_PREFIX))
    .sort()
  return keys.map((k) => `${k}=${annotations![k]}`).join(';')
}

/** Pure: the run id the Workflow's current annotations ask for. */
export function currentRunId(workflow: RunView): string {
  return runIdFor(workflow.metadata.uid ?? '', workflow.metadata.annotations?.[ANNOTATION_RERUN])
}

/** Pure: a spec rejected by validation is retried once the user changes it (a new generation). */
export function isRetriableSpecFailure(wf: RunView): boolean {
  const invalid = wf.status?.conditions?.find((c) => c.type === 'SpecValid' && c.status === 'False')
  return invalid !== undefined && wf.status?.observedGeneration !== wf.metadata.generation
}

/** Pure: a status of a run held back by its concurrency policy (phase Pending, a queue position, no run id yet). */
export function isQueuedStatus(status: NonNullable<Workflow['status']>): boolean {
  return status.runId === undefined && status.phase === 'Pending' && status.queuePosition !== undefined
}

/** Pure: whether a Workflow (as seen in an event) may need anything done at all. */
export function mayNeedWork(workflow: RunView): boolean {
  const meta = workflow.metadata
  if (meta.deletionTimestamp || meta.annotations?.[ANNOTATION_TEMPLATE] === 'true') return false
  const status = workflow.status
  // A run queued by its concurrency policy: the echo of its queued status needs nothing, while an
  // edit or a run-control annotation does. A sibling that finishes wakes it, and every resync
  // tick re-evaluates it (the tick reconciles every unfinished run).
  if (status && isQueuedStatus(status)) {
    return status.observedGeneration !== meta.generation || status.runControl !== runControlDigest(meta.annotations)
  }
  if (!status?.runId) return true
  if (status.runId !== currentRunId(workflow)) return true
  // A finished run only moves again for a rerun or a fixed spec, as planWorkflow decides; anything
  // else (a late cancel, an edited description) would otherwise be re-planned by every resync tick.
  if (isTerminalPhase(status.phase)) return isRetriableSpecFailure(workflow)
  if (status.observedGeneration !== meta.generation) return true
  if (status.runControl !== runControlDigest(meta.annotations)) return true
  return status.phase !== 'Running' && status.phase !== 'RollingBack'
}
