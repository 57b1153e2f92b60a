/**
 * What the engine reads before it plans a run: the finished Jobs whose pod logs (results) the
 * planner needs, and the agents whose ServiceAccounts it may ask about. Both stay empty for
 * finished work, so a finished run costs no reads. Pure.
 */
import type { Workflow } from '../../schemas/workflow.js'
import { stepJobName } from './job-builder.js'
import type { JobFact } from './job-facts.js'
import { currentRunId, isTerminalPhase } from './run-status.js'
import { decodeStepStates, type StepState } from './step-states.js'
import { agentKeyOf } from './agent-keys.js'

/**
 * Pure: the Jobs whose pod logs the planner needs (finished Jobs of the current attempt of a
 * step that is not finished yet). Everything else — duplicates, echoes, old attempts — costs
 * no log read.
 */
export function jobsNeedingResults(workflow: Workflow, jobs: readonly JobFact[]): JobFact[] {
  const runId = currentRunId(workflow)
  if (workflow.status?.runId === runId && isTerminalPhase(workflow.status.phase)) return []
  const states = workflow.status?.runId === runId ? decodeStepStates(workflow) : new Map<string, StepState>()
  const name = workflow.metadata.name ?? ''
  return jobs.filter((job) => {
    if (job.runId !== runId || job.state === 'Active') return false
    // A finished compensation Job always needs planning, even when it succeeded, so it is listed too.
    if (job.attempt === 'rollback') return states.get(job.step)?.phase === 'RollingBack' && states.get(job.step)?.compensationJobName === job.name
    const state = states.get(job.step) ?? { retryCount: 0 }
    if (state.phase !== undefined && state.phase !== 'Running' && state.phase !== 'Pending') return false
    return job.name === stepJobName(name, job.step, runId, state.retryCount)
  })
}

/**
 * Pure: the agents (`namespace/name`) whose identity the next plan may need: those of steps of
 * the current run that have not started, and under the rollback strategy also of steps a
 * compensation may run for. A superset of what will start, and empty once the run is over, so
 * checking identities costs nothing for finished work.
 */
export function agentsThatMayStart(workflow: Workflow): Set<string> {
  const runId = currentRunId(workflow)
  const sameRun = workflow.status?.runId === runId
  if (sameRun && isTerminalPhase(workflow.status?.phase)) return new Set()
  const states = sameRun ? decodeStepStates(workflow) : new Map<string, StepState>()
  const rollback = workflow.spec.failureStrategy === 'rollback'
  const keys = new Set<string>()
  for (const step of workflow.spec.steps) {
    if (!step.agentRef?.name) continue
    const phase = states.get(step.name)?.phase
    if (phase === undefined || phase === 'Pending' || (rollback && (phase === 'Succeeded' || phase === 'Running' || phase === 'RollingBack'))) {
      keys.add(agentKeyOf(workflow, step))
    }
  }
  return keys
}
