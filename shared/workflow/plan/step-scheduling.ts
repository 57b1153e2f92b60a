/**
 * Which steps start now: in dependency order, a step whose dependencies are done, whose retry
 * backoff is over and whose condition holds starts once its agent, identity, credentials, budget
 * and approval allow it and a slot of the run's parallelism is free. Pure.
 */
import { overBudget } from '../../agent/plan/cost-limit.js'
import { notSharedMessage } from '../../agent/plan/sharing.js'
import type { Agent } from '../../schemas/agent.js'
import type { AgentRef, WorkflowStep } from '../../schemas/workflow.js'
import { evaluateCondition, type ConditionResult } from './step-condition.js'
import { stepJobName } from './job-builder.js'
import type { OutputWrite } from './outputs.js'
import type { StepState } from './step-states.js'
import { agentKeyOf, choiceKeyOf } from './agent-keys.js'
import { announceApproval, approvalWaitMessage, denyStep, isApproved, isDenied, requiresApproval } from './approvals.js'
import { safeParse } from './json-values.js'
import type { RunBuilder } from './run-builder.js'
import { projectedCost } from './step-results.js'
import { budgetMessage, identityMessage, identityWaitType, isWaitingMessage, markWaiting, type StepWait } from './step-waits.js'
import type { WorkflowFacts } from './types.js'

/**
 * Most step Jobs one run keeps going at once, whatever `spec.parallelism` asks. Each running step
 * is a status entry and each start an API call inside one event, so an unbounded value would
 * make status and requests outgrow what the API server accepts.
 */
export const MAX_PARALLELISM = 200

/** Starts every step whose turn has come, within the parallelism cap, in dependency order. */
export function scheduleReadySteps(run: RunBuilder, facts: WorkflowFacts): void {
  const continueOnError = run.workflow.spec.failureStrategy === 'continueOnError'
  // A step backing off before its retry keeps its slot: otherwise each failure frees a slot for a
  // new step, and under a failing provider thousands of steps pile up waiting (each listed in status).
  let running = 0
  for (const state of run.states.values()) if (state.phase === 'Running' || holdsRetrySlot(state)) running++
  const cap = Math.min(run.workflow.spec.parallelism ?? 1, MAX_PARALLELISM)
  const outputs = conditionOutputs(facts.outputs, run.plan.outputWrites)
  const parameters = run.workflow.spec.parameters ?? {}
  let waiting = 0
  for (const index of run.order) {
    const step = run.steps[index]!
    const state = run.states.get(step.name)!
    if (state.phase !== undefined && state.phase !== 'Pending') continue
    if (!run.dependenciesMet(step, continueOnError)) continue
    if (isDenied(run, step)) {
      // Its turn came within this plan (a dependency just completed here); any other strategy
      // than continueOnError stops here and the caller applies it.
      denyStep(run, step, state)
      if (continueOnError) continue
      break
    }
    if (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > Date.parse(run.now)) continue
    if (step.condition && state.retryCount === 0) {
      const verdict = evaluateCondition(step.condition, { outputs: outputs.value, parameters })
      if (!verdict.ok || !verdict.value) {
        skipForCondition(run, step, state, verdict)
        continue
      }
    }
    if (!step.agentRef?.name) {
      state.phase = 'Succeeded'
      state.completionTime = run.now
      run.transition({ kind: 'step.finished', type: 'Normal', reason: 'StepSucceeded', message: `Step ${step.name} (${step.type ?? 'no agent'}) completed`, step: step.name, phase: 'Succeeded' })
      continue
    }
    const agentKey = agentKeyOf(run.workflow, step)
    const readiness = readinessOf(run, facts, step, step.agentRef, agentKey)
    if (!readiness.ready) {
      markWaiting(run, step, state, readiness.wait, waiting)
      waiting++
      continue
    }
    if (holdsRetrySlot(state)) {
      // Starts in the slot it kept.
    } else if (running >= cap) {
      // Its agent is there and approved now; it only waits for a slot, so the old reason would mislead.
      if (isWaitingMessage(state.error)) delete state.error
      continue
    } else {
      running++
    }
    startStep(run, facts, step, state, agentKey, readiness.agent)
  }
  run.summarise('StepsInProgress', `${run.countPhase('Succeeded') + run.countPhase('Skipped')}/${run.steps.length} steps completed, ${run.countPhase('Running')} running${waiting > 0 ? `, ${waiting} waiting` : ''}`)
}

/** A step of an agent either may start, with that agent, or waits for something. */
type Readiness = { ready: true; agent: Agent } | { ready: false; wait: StepWait }

/** The first thing, in a fixed order, that holds back a step of `agentRef` whose turn has come. */
function readinessOf(run: RunBuilder, facts: WorkflowFacts, step: WorkflowStep, agentRef: AgentRef, agentKey: string): Readiness {
  const workflow = run.workflow
  const agent = facts.agents.get(agentKey)
  if (!agent && facts.unsharedAgents?.has(agentKey)) {
    const message = notSharedMessage(agentRef.namespace ?? '', agentRef.name, step.name, workflow.metadata.namespace ?? '')
    return { ready: false, wait: { message, reason: 'AgentNotShared' } }
  }
  if (!agent) return { ready: false, wait: { message: `Agent "${agentRef.name}" not found for step "${step.name}"`, reason: 'AgentNotFound' } }
  if (!facts.identities.has(agentKey)) {
    return { ready: false, wait: { message: identityMessage(workflow, step, agent), reason: 'AgentIdentityPending', type: identityWaitType(workflow, agent) } }
  }
  const credentialWait = facts.credentialWaits?.get(choiceKeyOf(workflow, step))
  if (credentialWait) return { ready: false, wait: { message: credentialWait, reason: 'LLMCredentialsUnavailable' } }
  const budget = overBudget({ spec: agent.spec, status: { metrics: { totalCostUSD: projectedCost(run, agentKey, agent) } } })
  if (budget.over) return { ready: false, wait: { message: budgetMessage(step, agent, budget.totalUSD, budget.limitUSD), reason: 'CostLimitExceeded' } }
  if (requiresApproval(agent) && !isApproved(run, step)) return { ready: false, wait: { message: approvalWaitMessage(step), reason: 'ApprovalRequired' } }
  return { ready: true, agent }
}

/** A step whose condition is false, or cannot be evaluated, is skipped (the latter says why). */
function skipForCondition(run: RunBuilder, step: WorkflowStep, state: StepState, verdict: ConditionResult): void {
  state.phase = 'Skipped'
  state.completionTime = run.now
  if (!verdict.ok) state.error = `Condition error: ${verdict.error}`
  run.transition({
    kind: 'step.finished',
    type: verdict.ok ? 'Normal' : 'Warning',
    reason: verdict.ok ? 'StepSkipped' : verdict.reason === 'CostLimitExceeded' ? 'ConditionCostLimitExceeded' : 'ConditionError',
    message: verdict.ok ? `Step ${step.name} skipped: condition is false` : `Step ${step.name} skipped: ${verdict.error}`,
    step: step.name,
    phase: 'Skipped',
  })
}

/** Moves a step to Running and asks for its Job (the attempt number is its retry count). */
function startStep(run: RunBuilder, facts: WorkflowFacts, step: WorkflowStep, state: StepState, agentKey: string, agent: Agent): void {
  const jobName = stepJobName(run.workflow.metadata.name ?? '', step.name, run.runId, state.retryCount)
  state.phase = 'Running'
  state.jobName = jobName
  state.startTime = run.now
  delete state.nextAttemptAt
  delete state.completionTime
  if (isWaitingMessage(state.error)) delete state.error
  const note = facts.stepNotes?.get(choiceKeyOf(run.workflow, step))
  if (note) state.message = note
  else delete state.message
  run.plan.startJobs.push({ step: step.name, attempt: state.retryCount, jobName, agentKey })
  if (requiresApproval(agent) && state.retryCount === 0) announceApproval(run, step)
  run.transition({ kind: 'step.started', type: 'Normal', reason: 'StepStarted', message: `Started step ${step.name} as Job ${jobName}`, step: step.name, phase: 'Running' })
}

/** A step backing off before its retry: it keeps its parallelism slot. */
function holdsRetrySlot(state: StepState): boolean {
  return state.phase === 'Pending' && state.nextAttemptAt !== undefined
}

/** The outputs a condition may read: stored ones and those this plan writes, parsed on first use. */
function conditionOutputs(stored: ReadonlyMap<string, string>, fresh: readonly OutputWrite[]): { value: Record<string, unknown> } {
  // Parsed lazily: most plans evaluate no condition, and large runs have many outputs.
  let cache: Record<string, unknown> | undefined
  return {
    get value() {
      if (cache) return cache
      cache = {}
      for (const [step, json] of stored) cache[step] = safeParse(json)
      for (const write of fresh) cache[write.step] = safeParse(write.json)
      return cache
    },
  }
}
