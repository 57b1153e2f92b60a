/**
 * People's decisions on steps: an agent with `guardrails.humanApprovalRequired` holds its steps
 * until `purko.io/approve-<step>: "true"`, and `purko.io/deny-<step>: "true"` fails a step that
 * has not started. Run-control records who decided (`kinetic.dev/decision-<step>`) for the
 * messages. Pure.
 */
import type { Agent } from '../../schemas/agent.js'
import type { WorkflowStep } from '../../schemas/workflow.js'
import { ANNOTATION_APPROVE_PREFIX, ANNOTATION_DECISION_PREFIX, ANNOTATION_DENY_PREFIX } from '../../schemas/labels.js'
import type { StepState } from './step-states.js'
import { safeParse } from './json-values.js'
import type { RunBuilder } from './run-builder.js'

/**
 * `purko.io/deny-<step>: "true"` ends a step that has not started once its turn comes (its
 * dependencies are met); the failure strategy follows. Applied earlier, a denial would fail the
 * run (failFast) or release the step's dependents (continueOnError) ahead of its own dependencies.
 */
export function applyDenials(run: RunBuilder): void {
  const continueOnError = run.workflow.spec.failureStrategy === 'continueOnError'
  // Walk the annotations, not the steps: a 10,000-step run usually has none.
  const denied = Object.keys(run.annotations)
    .filter((key) => key.startsWith(ANNOTATION_DENY_PREFIX) && run.annotations[key] === 'true')
    .map((key) => key.slice(ANNOTATION_DENY_PREFIX.length))
  for (const step of run.steps.filter((candidate) => denied.includes(candidate.name))) {
    const state = run.states.get(step.name)!
    if (state.phase !== undefined && state.phase !== 'Pending') continue
    if (!run.dependenciesMet(step, continueOnError)) continue
    denyStep(run, step, state)
  }
}

export function isDenied(run: RunBuilder, step: WorkflowStep): boolean {
  return run.annotations[`${ANNOTATION_DENY_PREFIX}${step.name}`] === 'true'
}

/** Fails a denied step, naming who denied it and why when run-control recorded it. */
export function denyStep(run: RunBuilder, step: WorkflowStep, state: StepState): void {
  const record = decisionOf(run.annotations, step.name, 'denied')
  state.phase = 'Failed'
  state.completionTime = run.now
  state.error = record ? `Denied by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : 'Denied by user'
  delete state.nextAttemptAt
  const message = record ? `Step ${step.name} denied by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : `Step ${step.name} denied`
  run.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepDenied', message, step: step.name, phase: 'Failed' })
}

export function requiresApproval(agent: Agent): boolean {
  return agent.spec.guardrails?.humanApprovalRequired === true
}

export function isApproved(run: RunBuilder, step: WorkflowStep): boolean {
  return run.annotations[`${ANNOTATION_APPROVE_PREFIX}${step.name}`] === 'true'
}

/** What a step held for approval says in its status (the console recognises this wording). */
export function approvalWaitMessage(step: WorkflowStep): string {
  return `Waiting for human approval (set annotation ${ANNOTATION_APPROVE_PREFIX}${step.name}=true)`
}

/** Announces that an approved step starts, naming who approved it when run-control recorded it. */
export function announceApproval(run: RunBuilder, step: WorkflowStep): void {
  const record = decisionOf(run.annotations, step.name, 'approved')
  run.transition({
    kind: 'step.approved', type: 'Normal', reason: 'StepApproved', step: step.name, phase: 'Running',
    message: record ? `Step ${step.name} approved by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : `Step ${step.name} approved`,
  })
}

/** A verified decision record (`kinetic.dev/decision-<step>`), as run-control writes it. */
interface DecisionRecord { verdict: 'approved' | 'denied'; user: string; time: string; reason?: string }

/**
 * The decision record of `step` when it is valid JSON of the expected shape and agrees with the
 * verdict acted on; anything else is ignored, as purko ignores what it does not know.
 */
function decisionOf(annotations: Readonly<Record<string, string>>, step: string, verdict: DecisionRecord['verdict']): DecisionRecord | null {
  const raw = annotations[`${ANNOTATION_DECISION_PREFIX}${step}`]
  if (raw === undefined) return null
  const value = safeParse(raw) as Partial<DecisionRecord> | undefined
  if (!value || typeof value !== 'object' || value.verdict !== verdict) return null
  if (typeof value.user !== 'string' || value.user === '' || typeof value.time !== 'string') return null
  const reason = typeof value.reason === 'string' && value.reason.trim() !== '' ? value.reason.trim() : undefined
  return { verdict, user: value.user, time: value.time, ...(reason ? { reason } : {}) }
}
