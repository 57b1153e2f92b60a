/**
 * The rollback failure strategy: once a step fails, the steps that succeeded are compensated one
 * at a time, dependents before their dependencies, each by a Job of its own agent; the run fails
 * as RolledBack when none is left. Pure.
 */
import { stepJobName } from './job-builder.js'
import { agentKeyOf } from './agent-keys.js'
import type { RunBuilder } from './run-builder.js'
import { countAttempt } from './step-results.js'
import { identityMessage, identityWaitType } from './step-waits.js'
import type { WorkflowFacts } from './types.js'

/** Compensates succeeded steps one at a time, dependents before their dependencies. */
export function advanceRollback(run: RunBuilder, facts: WorkflowFacts): void {
  recordCompensations(run, facts)
  const inProgress = run.steps.find((step) => run.states.get(step.name)?.phase === 'RollingBack')
  if (inProgress) {
    // Same wording as when the compensation started, so re-planning writes nothing.
    run.summarise('RollbackInProgress', `Rolling back step ${inProgress.name}`)
    return
  }
  if (startNextCompensation(run, facts)) return
  const rolledBack = run.steps.filter((step) => run.states.get(step.name)?.phase === 'RolledBack').map((step) => step.name)
  run.status.completionTime = run.now
  const message = `Rolled back ${rolledBack.length} steps: ${rolledBack.join(', ')}`
  run.setPhase('Failed', 'RolledBack', message)
  run.transition({ kind: 'run.finished', type: 'Warning', reason: 'RolledBack', message, phase: 'Failed' })
}

/** Applies finished (or vanished) compensation Jobs: their steps are RolledBack, and counted. */
function recordCompensations(run: RunBuilder, facts: WorkflowFacts): void {
  for (const job of facts.jobs) {
    if (job.runId !== run.runId || job.attempt !== 'rollback' || job.state === 'Active') continue
    const state = run.states.get(job.step)
    if (state?.phase !== 'RollingBack' || state.compensationJobName !== job.name) continue
    state.phase = 'RolledBack'
    if (job.state === 'Failed') state.error = `Compensation failed: ${job.result && !job.result.ok ? job.result.error : 'job failed'}`
    const step = run.stepsByName.get(job.step)
    // A compensation is an invocation of the agent too, and it costs tokens like any other.
    if (step) {
      countAttempt(run, step, 'rollback', job.result ?? (job.state === 'Failed' ? { ok: false, class: 'error', error: 'job failed' } : undefined), job.startedAt, job.finishedAt)
    }
    run.transition({ kind: 'step.finished', type: job.state === 'Failed' ? 'Warning' : 'Normal', reason: 'StepRolledBack', message: `Step ${job.step} rolled back`, step: job.step, phase: 'RolledBack' })
  }
  if (!facts.jobsComplete) return
  const present = new Set(facts.jobs.filter((job) => job.runId === run.runId).map((job) => job.name))
  for (const [name, state] of run.states) {
    if (state.phase !== 'RollingBack' || !state.compensationJobName || present.has(state.compensationJobName)) continue
    state.phase = 'RolledBack'
    state.error = `Compensation failed: Job ${state.compensationJobName} disappeared before it finished`
    countAttempt(run, run.stepsByName.get(name)!, 'rollback', { ok: false, class: 'error', error: 'disappeared' }, undefined, undefined)
    run.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepRolledBack', message: `Step ${name} rolled back`, step: name, phase: 'RolledBack' })
  }
}

/**
 * Starts the compensation of the last succeeded step in dependency order, or says what it waits
 * for; true while the rollback goes on, false when no succeeded step is left to compensate.
 */
function startNextCompensation(run: RunBuilder, facts: WorkflowFacts): boolean {
  for (let position = run.order.length - 1; position >= 0; position--) {
    const step = run.steps[run.order[position]!]!
    const state = run.states.get(step.name)!
    if (state.phase !== 'Succeeded') continue
    if (!step.agentRef?.name) {
      state.phase = 'RolledBack'
      continue
    }
    const agentKey = agentKeyOf(run.workflow, step)
    const agent = facts.agents.get(agentKey)
    if (!agent) {
      // Compensation needs the agent; wait for it as a normal step would (the workflow timeout still applies).
      run.summarise('RollbackInProgress', `Agent "${step.agentRef.name}" not found to roll back step "${step.name}"`)
      return true
    }
    // Its Job runs as the agent too. A budget does not hold back a compensation: undoing
    // half-done work matters more than the cost of one more Job per step.
    if (!facts.identities.has(agentKey)) {
      const message = identityMessage(run.workflow, step, agent)
      if (run.workflow.status?.message !== message) {
        run.transition({ kind: 'step.waiting', type: identityWaitType(run.workflow, agent), reason: 'AgentIdentityPending', message, step: step.name, phase: 'Succeeded' })
      }
      run.summarise('RollbackInProgress', message)
      return true
    }
    const jobName = stepJobName(run.workflow.metadata.name ?? '', step.name, `${run.runId}-rb`, 0)
    state.phase = 'RollingBack'
    state.compensationJobName = jobName
    run.plan.startJobs.push({ step: step.name, attempt: 'rollback', jobName, agentKey })
    run.transition({ kind: 'step.started', type: 'Normal', reason: 'CompensationStarted', message: `Rolling back step ${step.name}`, step: step.name, phase: 'RollingBack' })
    run.summarise('RollbackInProgress', `Rolling back step ${step.name}`)
    run.phase = 'RollingBack'
    run.status.phase = 'RollingBack'
    return true
  }
  return false
}
