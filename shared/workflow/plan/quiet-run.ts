import type { Agent } from '../../schemas/agent.js'
import type { Workflow } from '../../schemas/workflow.js'
import { needsSiblings } from '../../template/plan/concurrency.js'
import { recordingLookups } from './agent-lookups.js'
import type { JobFact } from './job-facts.js'
import { currentRunId } from './run-status.js'
import { jobsNeedingResults } from './plan-inputs.js'
import { planWorkflow } from './plan-workflow.js'
import { UNCHANGED } from '../../core/plan.js'

/**
 * Pure: whether a run, as listed with every step Job of the cluster, certainly needs nothing
 * from the resync tick at `now`: no finished Job is waiting for its result, no step may start,
 * nothing timed out, no Job went missing. It is the planner itself that decides, on the listed
 * run and Jobs with no Agents at all: a plan that would look up an Agent (a step may start, a
 * rollback, a metrics count) or change anything is not quiet, and the tick reconciles that run
 * from fresh reads. A quiet run costs the tick nothing beyond its two lists.
 */
export function isQuietRun(workflow: Workflow, jobs: readonly JobFact[], now: string): boolean {
  // Admission depends on the template's other runs: left to the full reconcile.
  if (needsSiblings(workflow)) return false
  const runId = currentRunId(workflow)
  const own = jobs.filter((j) => j.runId === runId)
  if (jobsNeedingResults(workflow, own).length > 0) return false
  const looked = new Set<string>()
  const agents = recordingLookups(new Map<string, Agent>(), looked)
  const plan = planWorkflow({ workflow, jobs: own, jobsComplete: true, agents, identities: new Set(), outputs: new Map() }, now)
  return plan === UNCHANGED && looked.size === 0
}
