/**
 * What the Workflow planner reads and what it writes: the facts gathered by the engine before a
 * plan, and the plan itself (Jobs, outputs, metrics, annotations, status, events). Types only,
 * so every part of the planner can share them; a plan that writes nothing is UNCHANGED
 * (shared/core/plan.ts).
 */
import type { AttemptRecord } from '../../agent/plan/metrics.js'
import type { Transition } from '../../core/plan.js'
import type { Agent } from '../../schemas/agent.js'
import type { Workflow, WorkflowStatus } from '../../schemas/workflow.js'
import type { RunCancel } from '../../template/plan/concurrency.js'
import type { JobFact } from './job-facts.js'
import type { OutputWrite } from './outputs.js'

/** Everything the planner knows: fresh state from the API server plus facts from events. */
export interface WorkflowFacts {
  workflow: Workflow
  /** Step Jobs seen (from the event, or from a list); results filled where the planner needs them. */
  jobs: readonly JobFact[]
  /** True when `jobs` is every Job of the current run, so a missing Job really is missing. */
  jobsComplete: boolean
  /** Agents by `namespace/name`. */
  agents: ReadonlyMap<string, Agent>
  /**
   * Agents (by `namespace/name`) of other namespaces that steps name but that do not allow the
   * Workflow's namespace (`kinetic.dev/allow-workflows-from`): their steps wait, saying so.
   */
  unsharedAgents?: ReadonlySet<string>
  /**
   * Agents (by `namespace/name`) whose ServiceAccount is known to exist in the Workflow's
   * namespace; steps of any other agent wait instead of creating a Job no pod can start for.
   */
  identities: ReadonlySet<string>
  /** Step → output JSON of the current run. */
  outputs: ReadonlyMap<string, string>
  /**
   * Provider choices (by `choiceKeyOf`: the agent's `namespace/name`, plus the step's provider
   * override) whose model key no Secret of the Workflow's namespace can hold yet, with the
   * message saying how to fix it; their steps wait instead of starting a pod that would hang on
   * a missing Secret.
   */
  credentialWaits?: ReadonlyMap<string, string>
  /** Provider choices (by `choiceKeyOf`) whose starting steps carry this message in their status. */
  stepNotes?: ReadonlyMap<string, string>
  /**
   * The other runs of this run's template (same namespace), read only when its concurrency policy
   * decides whether it may start (`needsSiblings`); absent means none.
   */
  siblings?: readonly Workflow[]
}

/** A step Job the plan wants created. */
export interface StepStart {
  step: string
  attempt: number | 'rollback'
  jobName: string
  agentKey: string
}

/** A step attempt (or compensation) that finished in this plan, for its Agent's metrics. */
export interface FinishedAttempt extends AttemptRecord {
  /** The Agent it counts for, `namespace/name` (its own namespace when agentRef names one). */
  agentKey: string
}

/** What to write, in the fixed order: Jobs and outputs first, annotations, status last. */
export interface WorkflowPlan {
  /** The run planned for; null only in the report that the namespace refuses the workflow functions. */
  runId: string | null
  deleteJobs: string[]
  startJobs: StepStart[]
  outputWrites: OutputWrite[]
  /** Every attempt that finished here, retried ones included: each ran and may have cost money. */
  finishedAttempts: FinishedAttempt[]
  annotations: Record<string, string> | null
  status: WorkflowStatus | null
  transitions: Transition[]
  /** Active runs of the same template a concurrency `replace` cancels before this run starts. */
  cancelRuns: RunCancel[]
}

