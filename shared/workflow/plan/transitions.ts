/**
 * The transitions the Workflow planner emits, in the one shape every planner uses
 * (shared/core/plan.ts). Pure.
 */
import type { Transition } from '../../core/plan.js'

/** What can happen to a run or one of its steps; the CloudEvent type is `dev.kinetic.workflow.<kind>`. */
export type RunTransitionKind =
  | 'run.started' | 'run.queued' | 'run.blocked' | 'run.finished'
  | 'step.started' | 'step.approved' | 'step.finished' | 'step.waiting' | 'spec.invalid'

/** What a part of the planner says happened: to the run, or to `step` (which then is in `phase`). */
export type RunHappening = Pick<Transition, 'type' | 'reason' | 'message'> & { kind: RunTransitionKind; step?: string; phase?: string }

/**
 * Pure: the transition of run `runId` (null when there is no run to speak of) for `what`.
 * Routine step starts and successes go out as CloudEvents only; Kubernetes Events are kept for
 * what a person may act on, so a 10,000-step run does not write 20,000 Events.
 */
export function runTransition(runId: string | null, what: RunHappening): Transition {
  return {
    kind: what.kind,
    type: what.type,
    reason: what.reason,
    message: what.message,
    record: what.type === 'Warning' || what.kind === 'run.started' || what.kind === 'run.queued' || what.kind === 'run.finished'
      || what.kind === 'step.waiting' || what.kind === 'step.approved',
    ...(what.step ? { fieldPath: `spec.steps{${what.step}}` } : {}),
    data: { runId, ...(what.step ? { step: what.step } : {}), ...(what.phase ? { phase: what.phase } : {}) },
  }
}

/** The step a transition is about, if any. */
export function stepOf(transition: Transition): string | undefined {
  const step = transition.data?.['step']
  return typeof step === 'string' ? step : undefined
}
