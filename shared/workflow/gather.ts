/**
 * The Workflow controller's reads: everything the planner needs besides the run itself, and the
 * one place where how the controller learned of the change (one Job from an event, or a full
 * look) turns into facts. A step-finished event of a busy run may plan on what this instance
 * last wrote or read (shared/engine/memo.ts): the writes that follow are guarded by those
 * copies, so a stale one costs a re-plan, never a wrong write.
 */
import type { V1ConfigMap } from '@kubernetes/client-node'
import { UNCHANGED } from '../core/plan.js'
import type { EngineDeps } from '../engine/controller.js'
import type { EngineMemo } from '../engine/memo.js'
import { agentServiceAccountName } from '../agent/plan/names.js'
import { allowsWorkflowsFrom } from '../agent/plan/sharing.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Agent } from '../schemas/agent.js'
import { LABEL_RUN_ID, LABEL_WORKFLOW } from '../schemas/labels.js'
import type { Workflow } from '../schemas/workflow.js'
import { recordQueueDepth } from '../telemetry/run-progress.js'
import { admitRun, isWaiting, needsSiblings } from '../template/plan/concurrency.js'
import { templateOf, templateRunSelector } from '../template/run-builder.js'
import { agentKeyOf } from './plan/agent-keys.js'
import { recordingLookups } from './plan/agent-lookups.js'
import { labelValue } from './plan/job-builder.js'
import { jobFactFrom, type JobFact } from './plan/job-facts.js'
import { outputShardSelector, readOutputs } from './plan/outputs.js'
import { agentsThatMayStart, jobsNeedingResults } from './plan/plan-inputs.js'
import { holdsOnRemembered, planRun, type RunFacts } from './plan/run-facts.js'
import { currentRunId } from './plan/run-status.js'
import { decodeStepStates } from './plan/step-states.js'
import { loadStartFacts, START_FACTS_VERBS } from './start-facts.js'
import { attachResults, notePodsNotStarting, STEP_REPORT_VERBS } from './step-reports.js'

/** The port verbs of a run's reads. */
export const RUN_GATHER_VERBS = [
  ...STEP_REPORT_VERBS, ...START_FACTS_VERBS, 'listWorkflowsIn', 'listJobs', 'listConfigMaps', 'listAgents', 'getAgent', 'getServiceAccount',
] as const satisfies readonly (keyof Kube)[]
type RunGatherKube = KubeVerbs<typeof RUN_GATHER_VERBS>

/** A hint of what changed (events are hints, state is truth): one Job from an event, or "look at the whole run". */
export type RunHint = { kind: 'job'; job: JobFact } | { kind: 'full' }

/**
 * Everything the planner reads besides the Workflow; UNCHANGED when the event's Job alone shows
 * there is nothing to do (a duplicate, a late event about a step already recorded, a Job of an
 * older run), which costs one GET.
 */
export async function gatherRun(deps: EngineDeps<RunGatherKube>, workflow: Workflow, hint: RunHint): Promise<RunFacts | typeof UNCHANGED> {
  const { kube } = deps
  const namespace = workflow.metadata.namespace ?? 'default'
  const name = workflow.metadata.name ?? ''
  const runId = currentRunId(workflow)
  // Only a full look knows every Job of the run, so only then is a missing Job really missing.
  const jobsComplete = hint.kind === 'full'
  // Only a run its concurrency policy must admit pays for this list; one that has to keep
  // waiting needs nothing else (it has no Jobs, and no step starts), so a queued run costs
  // each resync tick a GET and a list.
  const siblings = needsSiblings(workflow) ? await kube.listWorkflowsIn(namespace, templateRunSelector(templateOf(workflow)!)) : undefined
  if (siblings) recordQueueDepth(namespace, templateOf(workflow)!, siblings.filter((w) => w.metadata.name !== workflow.metadata.name).filter(isWaiting).length + (isWaiting(workflow) ? 1 : 0))
  if (siblings && admitRun(workflow, siblings).kind === 'wait') {
    return { runId, jobs: [], jobsComplete, agents: new Map(), identities: new Set(), shards: [], outputs: new Map(), start: null, siblings }
  }
  const queue = siblings ? { siblings } : {}
  const jobs = hint.kind === 'job'
    ? [hint.job].filter((j) => j.runId === runId)
    : (await kube.listJobs(namespace, { [LABEL_WORKFLOW]: labelValue(name), [LABEL_RUN_ID]: runId }))
      .flatMap((job) => jobFactFrom(job) ?? [])
  if (hint.kind === 'job' && jobsNeedingResults(workflow, jobs).length === 0) return UNCHANGED
  await attachResults(kube, namespace, workflow, jobs)
  if (hint.kind === 'full') await notePodsNotStarting(kube, namespace, jobs, deps.now())
  const memo = hint.kind === 'job' ? deps.memo : undefined
  const shards = rememberedShards(memo, workflow, runId) ?? await listShards(kube, deps.memo, workflow, runId)
  const outputs = readOutputs(shards, runId)
  const remembered = rememberedAgents(memo, workflow)
  if (remembered) {
    const facts = await factsWith(deps, workflow, { runId, jobs, jobsComplete, agents: remembered, shards, outputs, ...queue })
    const now = deps.now().toISOString()
    const read = new Set<string>()
    const trial = planRun(workflow, { ...facts, agents: recordingLookups(remembered, read) }, now)
    if (holdsOnRemembered(facts.agents, trial, read, now)) return { ...facts, remembered: { plan: trial, now } }
  }
  const { agents, unshared } = await loadAgents(kube, workflow, deps.memo)
  return factsWith(deps, workflow, { runId, jobs, jobsComplete, agents, unshared, shards, outputs, ...queue })
}

/** The key of a run in the memo's outputs. */
export const runKey = (workflow: Workflow) => `${workflow.metadata.namespace}/${workflow.metadata.name}`

/** Identities and start facts, which follow from the Agents read. */
async function factsWith(deps: EngineDeps<RunGatherKube>, workflow: Workflow, base: Omit<RunFacts, 'identities' | 'start'>): Promise<RunFacts> {
  const [identities, start] = await Promise.all([loadIdentities(deps.kube, workflow, base.agents), loadStartFacts(deps, workflow, base.agents)])
  return { ...base, identities, start }
}

/** The remembered copies of the Agents this run's steps name, or null when none is remembered. */
function rememberedAgents(memo: EngineMemo | undefined, workflow: Workflow): Map<string, Agent> | null {
  if (!memo) return null
  const agents = new Map<string, Agent>()
  for (const step of workflow.spec.steps) {
    if (!step.agentRef?.name) continue
    const key = agentKeyOf(workflow, step)
    const agent = memo.agents.get(key)
    if (agent && allowsWorkflowsFrom(agent, workflow.metadata.namespace ?? 'default')) agents.set(key, agent)
  }
  return agents.size > 0 ? agents : null
}

/**
 * The run's output shards as this instance last wrote or listed them, when they hold every
 * output the fresh status says is stored (status is written after the shards, so an output
 * another instance stored and recorded would be missing here, and the shards are listed).
 */
function rememberedShards(memo: EngineMemo | undefined, workflow: Workflow, runId: string): V1ConfigMap[] | null {
  const entry = memo?.outputs.get(runKey(workflow))
  if (!entry || entry.uid !== workflow.metadata.uid || entry.runId !== runId || workflow.status?.runId !== runId) return null
  const data = new Map(entry.shards.map((s) => [s.metadata?.name ?? '', s.data ?? {}]))
  for (const [step, state] of decodeStepStates(workflow)) {
    if (state.outputRef && data.get(state.outputRef)?.[step] === undefined) return null
  }
  return entry.shards
}

async function listShards(kube: RunGatherKube, memo: EngineMemo | undefined, workflow: Workflow, runId: string): Promise<V1ConfigMap[]> {
  const shards = await kube.listConfigMaps(workflow.metadata.namespace ?? 'default', outputShardSelector(workflow.metadata.name ?? ''))
  memo?.outputs.set(runKey(workflow), { uid: workflow.metadata.uid ?? '', runId, shards })
  return shards
}

/**
 * The Agents the run's steps may use: those of its namespace, and those of other namespaces that
 * allow it (`kinetic.dev/allow-workflows-from`); the others are only named in `unshared`, so
 * nothing of them reaches a pod, and the run never counts metrics or autonomy on them.
 */
async function loadAgents(kube: RunGatherKube, workflow: Workflow, memo?: EngineMemo): Promise<{ agents: Map<string, Agent>; unshared: Set<string> }> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const agents = new Map<string, Agent>()
  const unshared = new Set<string>()
  for (const agent of await kube.listAgents(namespace)) agents.set(`${namespace}/${agent.metadata.name}`, agent)
  const elsewhere = new Set(
    workflow.spec.steps
      .filter((s) => s.agentRef?.name && s.agentRef.namespace && s.agentRef.namespace !== namespace)
      .map((s) => `${s.agentRef!.namespace}/${s.agentRef!.name}`),
  )
  for (const key of elsewhere) {
    const [ns, agentName] = key.split('/') as [string, string]
    const agent = await kube.getAgent(ns, agentName)
    if (!agent) continue
    if (allowsWorkflowsFrom(agent, namespace)) agents.set(key, agent)
    else unshared.add(key)
  }
  for (const [key, agent] of agents) memo?.agents.set(key, agent)
  for (const key of unshared) memo?.agents.delete(key)
  return { agents, unshared }
}

/**
 * The agents of steps that may start whose ServiceAccount exists in the Workflow's namespace.
 * agent-changed's status says so for an agent of this namespace; any other is looked up, once
 * per agent per reconcile (an agent of another namespace always: its own account is elsewhere).
 */
async function loadIdentities(kube: RunGatherKube, workflow: Workflow, agents: ReadonlyMap<string, Agent>): Promise<Set<string>> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const ready = new Set<string>()
  const unknown = new Map<string, Agent>()
  for (const [key, agent] of agents) {
    if (agent.metadata.namespace === namespace && agent.status?.serviceAccountName === agentServiceAccountName(agent)) ready.add(key)
    else unknown.set(key, agent)
  }
  // The usual case, every agent known from its status, needs no look at the (maybe 10,000) steps.
  if (unknown.size === 0) return ready
  const lookups = [...agentsThatMayStart(workflow)].filter((key) => unknown.has(key))
  await Promise.all(lookups.map(async (key) => {
    if (await kube.getServiceAccount(namespace, agentServiceAccountName(unknown.get(key)!))) ready.add(key)
  }))
  return ready
}
