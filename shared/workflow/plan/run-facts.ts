/**
 * What the Workflow controller gathers for one reconcile (the facts of the planner, in the form
 * the shell reads them), the work it carries from the plan to the writes, and the planning on
 * those facts it repeats: the plan itself, whether a plan made on remembered Agents may stand,
 * and whether it still does once a fresh copy of one is read. Pure.
 */
import type { V1ConfigMap } from '@kubernetes/client-node'
import { UNCHANGED, type ControllerPlan } from '../../core/plan.js'
import { recordAttempts } from '../../agent/plan/metrics.js'
import type { RegistryEntry } from '../../mcp/plan/registry.js'
import type { Agent } from '../../schemas/agent.js'
import type { Workflow } from '../../schemas/workflow.js'
import type { ProviderChoice } from './credentials.js'
import type { JobFact } from './job-facts.js'
import { planWorkflow } from './plan-workflow.js'
import type { WorkflowPlan } from './types.js'

/** What the workflow planner reads besides the Workflow itself. */
export interface RunFacts {
  runId: string
  jobs: JobFact[]
  /** True when `jobs` is every Job of the run (a full look), false when it is the one an event named. */
  jobsComplete: boolean
  agents: Map<string, Agent>
  /** Agents of other namespaces that steps name but that do not allow this Workflow's namespace. */
  unshared?: Set<string>
  identities: Set<string>
  shards: V1ConfigMap[]
  outputs: Map<string, string>
  /** What a step about to start needs (provider, key, registry); null when no step may start. */
  start: StartFacts | null
  /** The other runs of the template, listed only when the concurrency policy must admit this run. */
  siblings?: Workflow[]
  /**
   * Set when the Agents are this instance's last known copies, not a fresh read: the plan made on
   * them holds only if every Agent it read is written (its metrics) guarded by that copy.
   */
  remembered?: { plan: WorkflowPlan | typeof UNCHANGED; now: string }
}

/** Read once per reconcile in which a step may start, for the planner and the Job builder. */
export interface StartFacts {
  /** Per provider choice (`choiceKeyOf`: agent `namespace/name`, plus a step's provider override): the provider its steps use and where the key comes from. */
  choices: Map<string, ProviderChoice>
  /** Per provider choice: what its starting steps' status says (fallback, unregistered MCP servers). */
  notes: Map<string, string>
  registry: RegistryEntry[]
}

/** The workflow planner's plan, plus what the shell and the parent write need. */
export interface WorkflowWork extends ControllerPlan {
  plan: WorkflowPlan
  /** Where each fresh output went (`outputRef` of its step status). */
  placed: Map<string, string>
  /** Names of the step Jobs created here (a Job found already there is not among them). */
  created: string[]
  /** The run's template (`purko.io/workflow-template`), whose queue a finished run wakes. */
  template?: string
  /** The moment planned at (a lost metrics race re-plans at the same moment to compare). */
  now: string
  /** When each finished attempt's container started, by Job (the step spans' pod.started). */
  podStarts: ReadonlyMap<string, string>
}

/** Pure: the workflow planner on the gathered facts. */
export function planRun(workflow: Workflow, facts: RunFacts, now: string): WorkflowPlan | typeof UNCHANGED {
  const credentialWaits = new Map<string, string>()
  for (const [key, choice] of facts.start?.choices ?? []) if (choice.wait) credentialWaits.set(key, choice.wait)
  return planWorkflow({
    workflow, jobs: facts.jobs, jobsComplete: facts.jobsComplete, agents: facts.agents, identities: facts.identities, outputs: facts.outputs,
    ...(facts.unshared && facts.unshared.size > 0 ? { unsharedAgents: facts.unshared } : {}), credentialWaits, stepNotes: facts.start?.notes ?? new Map(), ...(facts.siblings ? { siblings: facts.siblings } : {}),
  }, now)
}

/**
 * Pure: whether a plan made on remembered Agents may stand: every Agent it looked up, and every
 * Agent whose step attempt finished, gets a metrics write in this plan, guarded by the remembered copy.
 */
export function holdsOnRemembered(agents: ReadonlyMap<string, Agent>, plan: WorkflowPlan | typeof UNCHANGED, read: ReadonlySet<string>, now: string): boolean {
  if (plan === UNCHANGED) return false
  const attempts = new Map<string, WorkflowPlan['finishedAttempts']>()
  for (const a of plan.finishedAttempts) attempts.set(a.agentKey, [...(attempts.get(a.agentKey) ?? []), a])
  const written = new Set([...attempts].filter(([key, list]) => {
    const agent = agents.get(key)
    return agent !== undefined && recordAttempts(agent.status?.metrics, list, now) !== null
  }).map(([key]) => key))
  return [...read, ...attempts.keys()].every((key) => written.has(key))
}

/**
 * Pure: whether a plan made on a remembered Agent that lost its guarded write still stands on
 * the `fresh` copy read since: its spec is the one planned on, and the same facts with the
 * fresh Agent plan exactly the same.
 */
export function holdsWithFresh(workflow: Workflow, facts: RunFacts, work: Pick<WorkflowWork, 'plan' | 'now'>, fresh: Agent): boolean {
  const key = `${fresh.metadata.namespace}/${fresh.metadata.name}`
  const planned = facts.agents.get(key)
  const again = planRun(workflow, { ...facts, agents: new Map(facts.agents).set(key, fresh) }, work.now)
  return planned?.metadata.generation === fresh.metadata.generation && JSON.stringify(again) === JSON.stringify(work.plan)
}
