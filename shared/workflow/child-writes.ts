/**
 * The Workflow controller's child writes, in their fixed order: step outputs before anything
 * that may read them, the Agents' memories, then the Jobs (deleted, then created) beside the
 * Agents' metrics. Deterministic names let a redelivery find what a crash left behind.
 */
import type { V1ConfigMap, V1Job } from '@kubernetes/client-node'
import { mcpVisibilityOf } from '../config.js'
import { ConflictError } from '../core/errors.js'
import type { EngineDeps } from '../engine/controller.js'
import { forEachLimited } from '../engine/limited.js'
import type { EngineMemo } from '../engine/memo.js'
import { recordAgentMetrics, RECORD_METRICS_VERBS } from '../agent/record-metrics.js'
import { applyChildWrite } from '../kube/apply.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { appendMemory, memoryConfigMapName, memoryUpdateFrom, recallFrom } from '../memory/plan/agent-memory.js'
import { memoryBehavior } from '../memory/plan/memory-env.js'
import type { Agent } from '../schemas/agent.js'
import type { Workflow } from '../schemas/workflow.js'
import { stepTraceparent } from '../telemetry/ids.js'
import { runKey } from './gather.js'
import { agentKeyOf, choiceKeyOf } from './plan/agent-keys.js'
import { stepJobManifest, stepTimeoutSeconds } from './plan/job-builder.js'
import { planOutputWrites } from './plan/outputs.js'
import { holdsWithFresh, type RunFacts, type StartFacts, type WorkflowWork } from './plan/run-facts.js'
import { buildStepInput } from './plan/step-input.js'
import { lazyOutputs, markRollback, rollbackInput } from './plan/step-jobs.js'
import type { StepStart, WorkflowPlan } from './plan/types.js'
import { loadStartFacts, START_FACTS_VERBS } from './start-facts.js'

/** The port verbs of a run's child writes: outputs and memories, step Jobs, attempts recorded on agents. */
export const RUN_CHILD_VERBS = [
  ...RECORD_METRICS_VERBS, ...START_FACTS_VERBS, 'getConfigMap', 'createConfigMap', 'replaceConfigMap', 'createJob', 'deleteJob',
] as const satisfies readonly (keyof Kube)[]
type RunChildKube = KubeVerbs<typeof RUN_CHILD_VERBS>

/**
 * Job creations in flight at once: a fan-out of 200 steps one after another takes longer than a
 * delivery may (the Trigger's timeout), while the API server's own limits are far above this.
 */
const JOB_CREATES_IN_FLIGHT = 16

/** Writes the run's children; returns the work with where outputs went and which Jobs were created. */
export async function writeRunChildren(deps: EngineDeps<RunChildKube>, workflow: Workflow, facts: RunFacts, work: WorkflowWork): Promise<WorkflowWork> {
  const { kube } = deps
  const { plan } = work
  const namespace = workflow.metadata.namespace ?? 'default'
  // Outputs before anything that may read them, then Jobs.
  const placed = await writeOutputs(kube, deps.memo, workflow, facts.runId, facts.shards, plan)
  await writeMemories(kube, workflow, facts.runId, plan, facts.agents)
  const created: string[] = []
  const jobs = async () => {
    for (const job of plan.deleteJobs) await kube.deleteJob(namespace, job)
    if (plan.startJobs.length === 0) return
    const start = facts.start ?? await loadStartFacts(deps, workflow, facts.agents, plan.startJobs.map((s) => s.agentKey))
    const manifests = await buildJobs(deps, workflow, facts.runId, plan.startJobs, facts.agents, facts.outputs, plan, start!)
    const results = await createJobs(kube, manifests)
    for (const [i, manifest] of manifests.entries()) if (results[i] === 'created') created.push(manifest.metadata?.name ?? '')
  }
  const metrics = () => recordAgentMetrics(deps, plan.finishedAttempts, facts.agents, facts.remembered
    ? (fresh) => stillHolds(workflow, facts, work, fresh)
    : undefined)
  if (facts.remembered) {
    // The plan rests on remembered Agents: their guarded metrics writes prove them current,
    // so no Job starts before those writes have landed.
    await metrics()
    await jobs()
    return { ...work, placed, created }
  }
  // Metrics before the status: once a result is in status it is never planned again, so a
  // metrics write after it that was lost would be lost for good. Beside the Jobs, not before
  // them: the planner already counted this plan's costs against budgets, and the next step
  // need not wait for the Agent write.
  const [metricsWritten, started] = await Promise.allSettled([metrics(), jobs()])
  if (metricsWritten.status === 'rejected') throw metricsWritten.reason
  if (started.status === 'rejected') throw started.reason
  return { ...work, placed, created }
}

/**
 * A remembered Agent lost its guarded write and was read again: the plan stands if it still
 * holds on the fresh copy; otherwise the event goes back to the Broker (409) and the
 * redelivery plans from fresh reads.
 */
function stillHolds(workflow: Workflow, facts: RunFacts, work: WorkflowWork, fresh: Agent): void {
  const key = `${fresh.metadata.namespace}/${fresh.metadata.name}`
  if (!holdsWithFresh(workflow, facts, work, fresh)) {
    throw new ConflictError(`Agent ${key} changed since this instance last saw it; the step is planned again from fresh reads`)
  }
  // The Jobs about to be built read the Agent too: from here on, the fresh copy.
  facts.agents.set(key, fresh)
}

async function writeOutputs(
  kube: RunChildKube, memo: EngineMemo | undefined, workflow: Workflow, runId: string, shards: readonly V1ConfigMap[], plan: WorkflowPlan,
): Promise<Map<string, string>> {
  if (plan.outputWrites.length === 0) return new Map()
  const { configMaps, placement } = planOutputWrites(workflow, runId, shards, plan.outputWrites)
  const after = new Map(shards.map((s) => [s.metadata?.name ?? '', s]))
  // A shard created here has a resourceVersion this instance does not know: list next time.
  let known = true
  try {
    for (const configMap of configMaps) {
      // A shard another replica created since we listed is a lost race: re-plan from fresh state.
      const op = configMap.metadata?.resourceVersion ? 'replace' : 'create'
      await applyChildWrite(kube, { op, kind: 'ConfigMap', object: configMap }, { stored: (shard) => after.set(configMap.metadata?.name ?? '', shard as V1ConfigMap) })
      if (op === 'create') known = false
    }
  } catch (err) {
    memo?.outputs.delete(runKey(workflow))
    throw err
  }
  if (known) memo?.outputs.set(runKey(workflow), { uid: workflow.metadata.uid ?? '', runId, shards: [...after.values()] })
  else memo?.outputs.delete(runKey(workflow))
  return placement
}

/** Appends each finished step's `_memory_update` to its Agent's `<agent>-memory` ConfigMap. */
async function writeMemories(kube: RunChildKube, workflow: Workflow, runId: string, plan: WorkflowPlan, agents: ReadonlyMap<string, Agent>): Promise<void> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const byName = new Map(workflow.spec.steps.map((s) => [s.name, s]))
  for (const write of plan.outputWrites) {
    const step = byName.get(write.step)
    const agent = step?.agentRef?.name ? agents.get(agentKeyOf(workflow, step)) : undefined
    if (!step || !agent) continue
    const update = memoryUpdateFrom(agent, write.json, workflow.metadata.name ?? '', step.name)
    if (update === null) continue
    // The memory lives beside the Workflow, as purko keeps it, even for an Agent of another namespace.
    const agentName = agent.metadata.name ?? ''
    const existing = await kube.getConfigMap(namespace, memoryConfigMapName(agentName))
    const next = appendMemory(existing, agentName, namespace, update, `${runId}/${step.name}`)
    if (next === null) continue
    await applyChildWrite(kube, { op: existing ? 'replace' : 'create', kind: 'ConfigMap', object: next })
  }
}

/** The recalled memory of each persistent Agent among the steps about to start. */
async function recallMemories(kube: RunChildKube, namespace: string, starts: readonly StepStart[], agents: ReadonlyMap<string, Agent>): Promise<Map<string, string>> {
  const recalled = new Map<string, string>()
  for (const key of new Set(starts.filter((s) => s.attempt !== 'rollback').map((s) => s.agentKey))) {
    const agent = agents.get(key)
    if (!agent || memoryBehavior(agent) !== 'persistent') continue
    recalled.set(key, recallFrom(agent, await kube.getConfigMap(namespace, memoryConfigMapName(agent.metadata.name ?? ''))))
  }
  return recalled
}

async function buildJobs(
  deps: EngineDeps<RunChildKube>, workflow: Workflow, runId: string, starts: readonly StepStart[],
  agents: ReadonlyMap<string, Agent>, stored: ReadonlyMap<string, string>, plan: WorkflowPlan, ready: StartFacts,
): Promise<V1Job[]> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const recalled = await recallMemories(deps.kube, namespace, starts, agents)
  const outputs = lazyOutputs(stored, plan.outputWrites)
  const parameters = workflow.spec.parameters ?? {}
  const byName = new Map(workflow.spec.steps.map((s) => [s.name, s]))
  return starts.map((start) => {
    const step = byName.get(start.step)!
    const agent = agents.get(start.agentKey)!
    const rollback = start.attempt === 'rollback'
    const input = rollback
      ? { stepInput: rollbackInput(start.step, stored.get(start.step) ?? '{}'), env: [] }
      : buildStepInput(step, { outputs, parameters })
    const job = stepJobManifest({
      workflow, runId, step, attempt: rollback ? 0 : (start.attempt as number), agent,
      provider: ready.choices.get(choiceKeyOf(workflow, step))?.provider,
      credentials: ready.choices.get(choiceKeyOf(workflow, step))?.credentials ?? {},
      mcpServers: ready.registry, mcpVisibility: mcpVisibilityOf(deps.config),
      stepInput: input.stepInput, inputFromEnv: input.env,
      executorImage: deps.config.executorImage, hostNetwork: deps.config.executorHostNetwork,
      traceparent: stepTraceparent(runId, start.jobName),
      ...(deps.config.stepTelemetryEnv?.length ? { telemetryEnv: deps.config.stepTelemetryEnv } : {}),
      activeDeadlineSeconds: stepTimeoutSeconds(step, agent),
      ...(recalled.has(start.agentKey) ? { recalledMemory: recalled.get(start.agentKey)! } : {}),
    })
    job.metadata = { ...job.metadata, name: start.jobName }
    if (rollback) markRollback(job)
    return job
  })
}

/** Creates the Jobs, JOB_CREATES_IN_FLIGHT at a time; the first failure is thrown once all have been tried. */
async function createJobs(kube: RunChildKube, manifests: readonly V1Job[]): Promise<Array<'created' | 'exists'>> {
  const results: Array<'created' | 'exists'> = []
  const failures: unknown[] = []
  await forEachLimited([...manifests.keys()], JOB_CREATES_IN_FLIGHT, async (i) => {
    try {
      results[i] = await kube.createJob(manifests[i]!)
    } catch (err) {
      failures.push(err)
    }
  })
  if (failures.length > 0) throw failures[0]
  return results
}
