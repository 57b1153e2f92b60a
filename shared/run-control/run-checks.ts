/**
 * What may be asked of a Workflow run from outside, and the annotations a rerun writes: one
 * reading for run-control and the CLI, which word the refusals their own way (an HTTP answer, a
 * message on stderr). Pure.
 */
import { currentRunId, isTerminalPhase } from '../workflow/plan/run-status.js'
import { decodeStepStates } from '../workflow/plan/step-states.js'
import {
  ANNOTATION_APPROVE_PREFIX, ANNOTATION_CANCEL, ANNOTATION_CANCEL_REASON, ANNOTATION_DECISION_PREFIX,
  ANNOTATION_DENY_PREFIX, ANNOTATION_REQUESTED_BY, ANNOTATION_RERUN, ANNOTATION_TEMPLATE,
} from '../schemas/labels.js'
import type { Workflow, WorkflowStatus } from '../schemas/workflow.js'

/** Why a decision, a cancel or a rerun cannot take effect. */
export type RunRefusal =
  /** `purko.io/template: "true"`: it never runs itself (a scheduled Workflow without it does). */
  | { kind: 'template' }
  | { kind: 'unknown-step'; steps: string[] }
  | { kind: 'run-finished'; phase: string }
  /** The step is past the point where a decision counts (Running, or finished). */
  | { kind: 'step-started'; phase: string }

/** Pure: whether the Workflow is annotated as a template, so it has no run of its own. */
export function hasNoRunOfItsOwn(wf: Workflow): boolean {
  return wf.metadata.annotations?.[ANNOTATION_TEMPLATE] === 'true'
}

/** Pure: the status of the Workflow's current run, or undefined when the run has not started (or a rerun is about to start). */
export function currentRunStatus(wf: Workflow): WorkflowStatus | undefined {
  const status = wf.status
  if (!status) return undefined
  if (status.runId !== undefined && status.runId !== currentRunId(wf)) return undefined
  return status
}

/** Pure: why a step cannot be approved or denied now; a step not reached yet may be decided ahead of its turn. */
export function decisionRefusal(wf: Workflow, step: string): RunRefusal | undefined {
  if (hasNoRunOfItsOwn(wf)) return { kind: 'template' }
  const steps = wf.spec.steps.map((s) => s.name)
  if (!steps.includes(step)) return { kind: 'unknown-step', steps }
  const status = currentRunStatus(wf)
  if (!status) return undefined
  if (isTerminalPhase(status.phase)) return { kind: 'run-finished', phase: status.phase ?? '' }
  const phase = decodeStepStates({ ...wf, status }).get(step)?.phase
  if (phase !== undefined && phase !== 'Pending') return { kind: 'step-started', phase }
  return undefined
}

/** Pure: why the Workflow's run cannot be cancelled. */
export function cancelRefusal(wf: Workflow): RunRefusal | undefined {
  if (hasNoRunOfItsOwn(wf)) return { kind: 'template' }
  const status = currentRunStatus(wf)
  if (status && isTerminalPhase(status.phase)) return { kind: 'run-finished', phase: status.phase ?? '' }
  return undefined
}

/** Pure: why the Workflow cannot be rerun (a template's rerun is a new run of it). */
export function rerunRefusal(wf: Workflow): RunRefusal | undefined {
  return hasNoRunOfItsOwn(wf) ? { kind: 'template' } : undefined
}

/**
 * Pure: the annotations of a rerun: `purko.io/rerun=<now>` (a fresh run id; a millisecond later
 * when that is the value already there), and every annotation that steered the previous run
 * removed: cancel, its reason and requester, and each step's approve/deny/decision.
 */
export function rerunAnnotations(wf: Workflow, now: string): Record<string, string | null> {
  const annotations: Record<string, string | null> = {}
  for (const key of Object.keys(wf.metadata.annotations ?? {})) {
    if (key === ANNOTATION_CANCEL || key === ANNOTATION_CANCEL_REASON || key === ANNOTATION_REQUESTED_BY
      || key.startsWith(ANNOTATION_APPROVE_PREFIX) || key.startsWith(ANNOTATION_DENY_PREFIX) || key.startsWith(ANNOTATION_DECISION_PREFIX)) {
      annotations[key] = null
    }
  }
  const previous = wf.metadata.annotations?.[ANNOTATION_RERUN]
  annotations[ANNOTATION_RERUN] = previous === now ? new Date(Date.parse(now) + 1).toISOString() : now
  return annotations
}
