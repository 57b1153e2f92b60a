/**
 * A Workflow in a namespace where the workflow functions may not work (no RoleBinding to
 * kinetic-workflow-runner there): its status says so, with the command that fixes it, instead of
 * the Broker redelivering a 403 until the event is dead-lettered. The resync tick tries again
 * every minute, so granting access starts the run. Pure.
 */
import type { Workflow, WorkflowStatus } from '../../schemas/workflow.js'
import { setCondition } from '../../core/conditions.js'
import { grantCommand, WORKFLOW_GRANT } from '../../core/namespace-access.js'
import { isTerminalPhase } from './run-status.js'
import { UNCHANGED } from '../../core/plan.js'
import { runTransition } from './transitions.js'
import type { WorkflowPlan } from './types.js'

/** The reason of the `Complete` condition and the Warning Event. */
export const NAMESPACE_NOT_ENABLED = 'NamespaceNotEnabled'

/** Pure: the message for a Workflow of `namespace` whose functions got `refusal` (the API server's words). */
export function notEnabledMessage(namespace: string, refusal: string): string {
  return `Kinetic may not run Workflows in namespace ${namespace} (${refusal}); to let it: ${grantCommand(WORKFLOW_GRANT, namespace)}`
}

/**
 * Pure: a plan that writes only the status that reports it (the phase kept, Pending before the
 * run started) and announces a Warning, or UNCHANGED when the status already says exactly this
 * or the run has finished.
 */
export function planNamespaceBlocked(wf: Workflow, refusal: string, now: string): WorkflowPlan | typeof UNCHANGED {
  if (isTerminalPhase(wf.status?.phase)) return UNCHANGED
  const message = notEnabledMessage(wf.metadata.namespace ?? '', refusal)
  if (wf.status?.message === message) return UNCHANGED
  const status: WorkflowStatus = {
    ...wf.status,
    phase: wf.status?.phase ?? 'Pending',
    message,
    conditions: setCondition(wf.status?.conditions, { type: 'Complete', status: 'False', reason: NAMESPACE_NOT_ENABLED, message }, now),
  }
  return {
    runId: null, deleteJobs: [], startJobs: [], outputWrites: [], finishedAttempts: [], annotations: null, cancelRuns: [], status,
    transitions: [runTransition(null, { kind: 'run.blocked', type: 'Warning', reason: NAMESPACE_NOT_ENABLED, message })],
  }
}
