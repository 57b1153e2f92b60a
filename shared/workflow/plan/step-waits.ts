/**
 * Steps whose turn has come but that cannot start yet (a missing or unshared agent, its
 * ServiceAccount, model credentials, a budget, an approval): what each wait says, whether it is
 * a Warning, and how a waiting step is marked in the status and announced once. Pure.
 */
import { costLimitMessage } from '../../agent/plan/cost-limit.js'
import { agentServiceAccountName } from '../../agent/plan/names.js'
import type { Agent } from '../../schemas/agent.js'
import { ANNOTATION_RESET_COST } from '../../schemas/labels.js'
import type { Workflow, WorkflowStep } from '../../schemas/workflow.js'
import type { StepState } from './step-states.js'
import type { RunBuilder } from './run-builder.js'

/** At most this many waiting steps (missing agent, approval) are marked Pending with their reason. */
const MAX_WAITING_STEPS_SHOWN = 100

/** Waits a person has to act on (create something, raise a limit); approval is the normal kind. */
const WARNING_WAITS: ReadonlySet<string> = new Set(['AgentNotFound', 'CostLimitExceeded', 'LLMCredentialsUnavailable'])

/** Why a step waits: its status message, the reason of its Event, and the Event's type. */
export interface StepWait {
  message: string
  reason: string
  type?: 'Warning' | 'Normal'
}

/**
 * Marks `step` Pending with the wait's message and announces it, unless it already says so.
 * `waitingBefore` counts the steps this plan found waiting ahead of it.
 */
export function markWaiting(run: RunBuilder, step: WorkflowStep, state: StepState, wait: StepWait, waitingBefore: number): void {
  const { message, reason } = wait
  const type = wait.type ?? (WARNING_WAITS.has(reason) ? 'Warning' : 'Normal')
  if (state.phase === 'Pending' && state.error === message) return
  // Every marked step is listed in the status with its message (and announced); a 10,000-step
  // fan-out whose agent is missing would outgrow etcd's object limit, so the rest wait unmarked.
  if (state.phase !== 'Pending' && waitingBefore >= MAX_WAITING_STEPS_SHOWN) return
  // Still waiting for the same thing (a budget whose total moved): the status follows, but
  // people were told once already.
  const sameWait = state.phase === 'Pending' && state.error !== undefined && waitSubject(state.error) === waitSubject(message)
  state.phase = 'Pending'
  state.error = message
  if (sameWait) return
  run.transition({ kind: 'step.waiting', type, reason, message, step: step.name, phase: 'Pending' })
}

/** Whether a step's error is a waiting message (which goes once the step starts), not a failure. */
export function isWaitingMessage(error: string | undefined): boolean {
  return error !== undefined && (error.startsWith('Waiting for') || error.startsWith('Agent "'))
}

/**
 * An agent of the Workflow's own namespace gets its ServiceAccount from agent-changed, usually a
 * moment after both were applied: a Normal wait (a failure to make it is a Warning on the Agent).
 * An agent of another namespace needs a person to create the account here: a Warning.
 */
export function identityWaitType(workflow: Workflow, agent: Agent): 'Warning' | 'Normal' {
  return (agent.metadata.namespace ?? workflow.metadata.namespace) === workflow.metadata.namespace ? 'Normal' : 'Warning'
}

/** Why a step of `agent` waits for its ServiceAccount, and what to do about it. */
export function identityMessage(workflow: Workflow, step: WorkflowStep, agent: Agent): string {
  const namespace = workflow.metadata.namespace ?? ''
  const account = agentServiceAccountName(agent)
  const agentName = agent.metadata.name ?? ''
  const home = agent.metadata.namespace ?? namespace
  const head = `Waiting for ServiceAccount "${account}" in namespace "${namespace}"`
  if (home !== namespace) {
    return `${head}: step "${step.name}" runs as agent ${home}/${agentName}, and a pod can only use a ServiceAccount of its own namespace; `
      + `create "${account}" in "${namespace}" (agent-changed makes it only in "${home}")`
  }
  return `${head}: step "${step.name}" runs as agent "${agentName}", whose identity agent-changed has not created yet`
}

/** purko's QuotaAvailable message, with the agent and what releases the step. */
export function budgetMessage(step: WorkflowStep, agent: Agent, totalUSD: number, limitUSD: number): string {
  return `Waiting for budget of agent "${agent.metadata.name ?? ''}": ${costLimitMessage(totalUSD, limitUSD)}; `
    + `step "${step.name}" starts once guardrails.costLimitUSD is raised or the cost is reset (annotation ${ANNOTATION_RESET_COST})`
}

/** What a waiting message waits for: the part before its first `: ` (the details may change). */
function waitSubject(message: string): string {
  const separator = message.indexOf(': ')
  return separator < 0 ? message : message.slice(0, separator)
}
