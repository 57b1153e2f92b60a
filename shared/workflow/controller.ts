import type { V1ConfigMap, V1Job } from '@kubernetes/client-node'
import { armTickAlarm } from '../ticks/alarm.js'
import { apiMessage, ConflictError, ForbiddenError } from '../core/errors.js'
import { podWaitingDetail } from '../kube/pod-waiting.js'
import type { Kube } from '../kube/port.js'
import type { Agent } from '../schemas/agent.js'
import { ANNOTATION_CANCEL, ANNOTATION_CANCEL_REASON, LABEL_ATTEMPT, LABEL_RUN_ID, LABEL_WORKFLOW } from '../schemas/labels.js'
import type { Workflow } from '../schemas/workflow.js'
import { failureFromLog, jobFactFrom, resultFromLog, type JobFact } from './plan/job-facts.js'
import { labelValue, stepJobManifest, stepTimeoutSeconds } from './plan/job-builder.js'
import { outputShardSelector, planOutputWrites, readOutputs } from './plan/outputs.js'
import { decodeStepStates } from './plan/step-states.js'
import { NAMESPACE_NOT_ENABLED, planNamespaceBlocked } from './plan/workflow-blocked.js'
import { recordingLookups } from './plan/agent-lookups.js'
import { buildStepInput } from './plan/step-input.js'
import { agentKeyOf, choiceKeyOf } from './plan/agent-keys.js'
import { agentsThatMayStart, jobsNeedingResults } from './plan/plan-inputs.js'
import { planWorkflow } from './plan/plan-workflow.js'
import type { StepStart, WorkflowPlan } from './plan/types.js'
import { stepOf } from './plan/transitions.js'
import { appendMemory, memoryConfigMapName, memoryUpdateFrom, recallFrom } from '../memory/plan/agent-memory.js'
import { chooseProvider, type ProviderChoice } from './plan/credentials.js'
import { mcpToolWarning, needsToolLookup, serverKey } from './plan/step-mcp.js'
import { isOptedIn, LLM_CREDENTIALS_SECRET } from '../llm/plan/credential-copies.js'
import { parseRegistry, REGISTRY_CONFIGMAP, REGISTRY_KEY, type RegistryEntry } from '../mcp/plan/registry.js'
import { stepMcpView } from '../mcp/plan/visibility.js'
import { mcpVisibilityOf } from '../config.js'
import { memoryBehavior } from '../memory/plan/memory-env.js'
import { agentServiceAccountName } from '../agent/plan/names.js'
import { allowsWorkflowsFrom } from '../agent/plan/sharing.js'
import { admitRun, isActiveRun, isWaiting, needsSiblings, queueOrder, type RunCancel } from '../template/plan/concurrency.js'
import { templateOf, templateRunSelector } from '../template/run-builder.js'
import { currentRunId, isTerminalPhase } from './plan/run-status.js'
import { recordAttempts } from '../agent/plan/metrics.js'
import { recordAgentMetrics } from '../agent/record-metrics.js'
import { forEachLimited } from '../engine/limited.js'
import { providersKey, registryKey, rememberedConfig, type EngineMemo } from '../engine/memo.js'
import { providersVisibleFrom } from '../llm/providers.js'
import { recordQueueDepth, recordRunProgress } from '../telemetry/run-progress.js'
import { runSpanId, runTraceId, stepTraceparent, traceparentOf } from '../telemetry/ids.js'
import { announce, reconcile, type Controller, type EngineDeps } from '../engine/controller.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'

export type { EngineDeps } from '../engine/controller.js'

/** How the caller learned about the change: one Job from an event, or a full look at the run. */
export type Trigger = { kind: 'job'; job: JobFact } | { kind: 'full' }

/** What one reconcile did, for logs and tests. */
export interface ReconcileOutcome {
  result: 'gone' | 'unchanged' | 'applied'
  created: string[]
  deleted: string[]
  phase?: string
}

/** What the workflow planner reads besides the Workflow itself. */
interface WorkflowFacts {
  runId: string
  jobs: JobFact[]
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
interface StartFacts {
  /** Per provider choice (`choiceKeyOf`: agent `namespace/name`, plus a step's provider override): the provider its steps use and where the key comes from. */
  choices: Map<string, ProviderChoice>
  /** Per provider choice: what its starting steps' status says (fallback, unregistered MCP servers). */
  notes: Map<string, string>
  registry: RegistryEntry[]
}

/** The workflow planner's plan, plus what the shell and the parent write need. */
interface WorkflowWork extends ControllerPlan {
  plan: WorkflowPlan
  /** Where each fresh output went (`outputRef` of its step status). */
  placed: Map<string, string>
  created: string[]
  /** The run's template (`purko.io/workflow-template`), whose queue a finished run wakes. */
  template?: string
  /** The moment planned at (a lost metrics race re-plans at the same moment to compare). */
  now: string
  /** When each finished attempt's container started, by Job (the step spans' pod.started). */
  podStarts: ReadonlyMap<string, string>
}

/** How one reconcile may reach beyond its own run. */
export interface ReconcileOptions {
  /**
   * After this run reaches a terminal phase, reconcile the head of its template's queue at once
   * (default true). Off for the in-process reconciles that waking and `replace` do themselves.
   */
  wake?: boolean
}

/**
 * Job creations in flight at once: a fan-out of 200 steps one after another takes longer than a
 * delivery may (the Trigger's timeout), while the API server's own limits are far above this.
 */
const JOB_CREATES_IN_FLIGHT = 16

/** Queued runs one finished run reconciles at most; the resync tick is the safety net for the rest. */
const MAX_WAKE = 10

/**
 * Reads a Workflow run fresh, plans, and applies the plan: outputs and Jobs first, annotations,
 * status last (resourceVersion-guarded), then Events. A lost race throws ConflictError so the
 * Broker redelivers and the next attempt re-plans from fresh state.
 */
export async function reconcileWorkflow(
  deps: EngineDeps, namespace: string, name: string, trigger: Trigger, options: ReconcileOptions = {},
): Promise<ReconcileOutcome> {
  let done
  try {
    done = await reconcile(workflowController(trigger), deps, namespace, name)
  } catch (err) {
    // The namespace did not grant the workflow functions its Jobs, pods and ConfigMaps.
    if (!(err instanceof ForbiddenError)) throw err
    return reportBlocked(deps, namespace, name, apiMessage(err))
  }
  if (done.result !== 'applied' || !done.plan) return { result: done.result, created: [], deleted: [] }
  const { plan, created, template } = done.plan
  if (template !== undefined && options.wake !== false && isTerminalPhase(plan.status?.phase)) {
    await wakeQueued(deps, namespace, name, template)
  }
  // A run that started (or queued) has work in flight: the resync alarm ticks every minute
  // until resync-tick finds no unfinished run (shared/ticks/alarm-plan.ts).
  if (plan.transitions.some((t) => t.kind === 'run.started' || t.kind === 'run.queued') && !isTerminalPhase(plan.status?.phase)) {
    await armTickAlarm(deps, 'resync', deps.now().toISOString())
  }
  return { result: 'applied', created, deleted: plan.deleteJobs, ...(plan.status?.phase ? { phase: plan.status.phase } : {}) }
}

/**
 * The workflow functions may not work in the Workflow's namespace: its status and a Warning
 * Event say so with the command that grants it (the Workflow and its status are cluster-wide
 * rights; what was refused is namespaced). Nothing is redelivered: the resync tick tries again.
 */
async function reportBlocked(deps: EngineDeps, namespace: string, name: string, refusal: string): Promise<ReconcileOutcome> {
  const workflow = await deps.kube.getWorkflow(namespace, name)
  if (!workflow) return { result: 'gone', created: [], deleted: [] }
  const blocked = planNamespaceBlocked(workflow, refusal, deps.now().toISOString())
  deps.log.warn({ namespace, name, refusal }, 'The workflow functions may not work in this namespace')
  if (blocked === UNCHANGED) return { result: 'unchanged', created: [], deleted: [] }
  await deps.kube.patchWorkflowStatus(namespace, name, workflow.metadata.resourceVersion ?? '', blocked.status!)
  // The run waits for the grant: the resync alarm retries it every minute.
  if (!isTerminalPhase(blocked.status?.phase)) await armTickAlarm(deps, 'resync', deps.now().toISOString())
  await announce(deps, 'Workflow', workflow, `${workflow.metadata.uid ?? ''}/${NAMESPACE_NOT_ENABLED}`, blocked.transitions)
  return { result: 'applied', created: [], deleted: [], ...(blocked.status?.phase ? { phase: blocked.status.phase } : {}) }
}

/**
 * A run of `template` just finished: its queued siblings are reconciled at once, oldest first,
 * while they start (one freed slot usually starts one run). Best effort: failures are logged, and
 * the resync tick re-evaluates every queued run anyway.
 */
async function wakeQueued(deps: EngineDeps, namespace: string, finished: string, template: string): Promise<void> {
  let queue: Workflow[]
  try {
    queue = (await deps.kube.listWorkflowsIn(namespace, templateRunSelector(template)))
      .filter((w) => w.metadata.name !== finished && templateOf(w) === template && isWaiting(w))
      .sort(queueOrder)
      .slice(0, MAX_WAKE)
  } catch (err) {
    deps.log.warn({ namespace, name: finished, err: (err as Error).message }, `Could not list the queued runs of template ${namespace}/${template}`)
    return
  }
  for (const run of queue) {
    const name = run.metadata.name ?? ''
    try {
      const outcome = await reconcileWorkflow(deps, namespace, name, { kind: 'full' }, { wake: false })
      // Still queued: every run behind it is too.
      if (outcome.result !== 'applied' || outcome.phase === 'Pending') return
    } catch (err) {
      deps.log.warn({ namespace, name, err: (err as Error).message }, `Could not start queued Workflow ${namespace}/${name}`)
    }
  }
}

/**
 * Cancels the active runs a concurrency `replace` supersedes, as a cancel annotation would, and
 * reconciles each at once so its Jobs are deleted before this run's start. A lost race re-reads
 * the run once (it may have finished meanwhile); a second loss reaches the Broker as a 409.
 */
async function cancelReplaced(deps: EngineDeps, namespace: string, cancels: readonly RunCancel[]): Promise<void> {
  for (const cancel of cancels) {
    const patch = { annotations: { [ANNOTATION_CANCEL]: 'true', [ANNOTATION_CANCEL_REASON]: cancel.reason } }
    try {
      await deps.kube.patchWorkflowMetadata(namespace, cancel.name, cancel.resourceVersion, patch)
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err
      const fresh = await deps.kube.getWorkflow(namespace, cancel.name)
      if (!fresh || !isActiveRun(fresh)) continue
      const annotations = fresh.metadata.annotations ?? {}
      if (annotations[ANNOTATION_CANCEL] !== 'true' || annotations[ANNOTATION_CANCEL_REASON] !== cancel.reason) {
        await deps.kube.patchWorkflowMetadata(namespace, cancel.name, fresh.metadata.resourceVersion ?? '', patch)
      }
    }
    try {
      await reconcileWorkflow(deps, namespace, cancel.name, { kind: 'full' }, { wake: false })
    } catch (err) {
      // The annotation is there: the run's own event (or the resync tick) finishes the cancel.
      deps.log.warn({ namespace, name: cancel.name, err: (err as Error).message }, `Could not cancel replaced Workflow ${namespace}/${cancel.name} at once`)
    }
  }
}

function workflowController(trigger: Trigger): Controller<Workflow, WorkflowFacts, WorkflowWork> {
  return {
    kind: 'Workflow',
    read: (deps, namespace, name) => deps.kube.getWorkflow(namespace, name),
    async gather(deps, workflow) {
      const { kube } = deps
      const namespace = workflow.metadata.namespace ?? 'default'
      const name = workflow.metadata.name ?? ''
      const runId = currentRunId(workflow)
      // Only a run its concurrency policy must admit pays for this list; one that has to keep
      // waiting needs nothing else (it has no Jobs, and no step starts), so a queued run costs
      // each resync tick a GET and a list.
      const siblings = needsSiblings(workflow) ? await kube.listWorkflowsIn(namespace, templateRunSelector(templateOf(workflow)!)) : undefined
      if (siblings) recordQueueDepth(namespace, templateOf(workflow)!, siblings.filter((w) => w.metadata.name !== workflow.metadata.name).filter(isWaiting).length + (isWaiting(workflow) ? 1 : 0))
      if (siblings && admitRun(workflow, siblings).kind === 'wait') {
        return { runId, jobs: [], agents: new Map(), identities: new Set(), shards: [], outputs: new Map(), start: null, siblings }
      }
      const queue = siblings ? { siblings } : {}
      const jobs = trigger.kind === 'job'
        ? [trigger.job].filter((j) => j.runId === runId)
        : (await kube.listJobs(namespace, { [LABEL_WORKFLOW]: labelValue(name), [LABEL_RUN_ID]: runId }))
          .flatMap((job) => jobFactFrom(job) ?? [])
      // A duplicate, a late event about a step already recorded, or a Job of an older run:
      // one GET was all it cost.
      if (trigger.kind === 'job' && jobsNeedingResults(workflow, jobs).length === 0) return UNCHANGED
      await attachResults(kube, namespace, workflow, jobs)
      if (trigger.kind === 'full') await notePodsNotStarting(kube, namespace, jobs, deps.now())
      // A step-finished event of a busy run may plan on what this instance last wrote: the next
      // writes are guarded by those copies, so a stale one costs a re-plan, never a wrong write.
      const memo = trigger.kind === 'job' ? deps.memo : undefined
      const shards = rememberedShards(memo, workflow, runId) ?? await listShards(kube, deps.memo, workflow, runId)
      const outputs = readOutputs(shards, runId)
      const remembered = rememberedAgents(memo, workflow)
      if (remembered) {
        const facts = await factsWith(deps, workflow, { runId, jobs, agents: remembered, shards, outputs, ...queue })
        const now = deps.now().toISOString()
        const read = new Set<string>()
        const trial = planFor(workflow, { ...facts, agents: recordingLookups(remembered, read) }, trigger, now)
        if (holdsOnRemembered(facts.agents, trial, read, now)) return { ...facts, remembered: { plan: trial, now } }
      }
      const { agents, unshared } = await loadAgents(kube, workflow, deps.memo)
      return factsWith(deps, workflow, { runId, jobs, agents, unshared, shards, outputs, ...queue })
    },
    plan(workflow, facts, now) {
      // Planned already, on remembered Agents, when the facts were complete.
      const at = facts.remembered?.now ?? now
      const plan = facts.remembered?.plan ?? planFor(workflow, facts, trigger, at)
      if (plan === UNCHANGED) return UNCHANGED
      const template = templateOf(workflow)
      return {
        plan, placed: new Map(), created: [], now: at, transitions: plan.transitions,
        podStarts: new Map(facts.jobs.flatMap((j) => (j.podStartedAt ? [[j.name, j.podStartedAt] as const] : []))),
        ...(template !== undefined ? { template } : {}),
      }
    },
    async writeChildren(deps, workflow, facts, work) {
      const { kube } = deps
      const { plan } = work
      const namespace = workflow.metadata.namespace ?? 'default'
      // The runs this one replaces end (and lose their Jobs) before it starts.
      await cancelReplaced(deps, namespace, plan.cancelRuns)
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
        ? (fresh) => stillHolds(workflow, facts, trigger, work, fresh)
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
    },
    async writeParent({ kube }, workflow, { plan, placed, now, podStarts }) {
      const namespace = workflow.metadata.namespace ?? 'default'
      const name = workflow.metadata.name ?? ''
      let resourceVersion = workflow.metadata.resourceVersion ?? ''
      if (plan.annotations) {
        const updated = await kube.patchWorkflowMetadata(namespace, name, resourceVersion, { annotations: plan.annotations })
        resourceVersion = updated.metadata.resourceVersion ?? resourceVersion
      }
      if (plan.status) {
        const status = { ...plan.status }
        if (placed.size > 0 && status.stepStatuses) {
          status.stepStatuses = status.stepStatuses.map((s) => (placed.has(s.name) ? { ...s, outputRef: placed.get(s.name)! } : s))
        }
        await kube.patchWorkflowStatus(namespace, name, resourceVersion, status)
        // Only a status write that landed ends spans: a lost race re-plans and writes them then.
        const approved = plan.transitions.flatMap((t) => (t.kind === 'step.approved' ? stepOf(t) ?? [] : []))
        recordRunProgress(workflow, status, { started: plan.startJobs, approved, podStarts }, now)
      }
    },
    eventSeed: (_, { plan }) => plan.runId ?? '',
    traceparent: (_, { plan }) => (plan.runId ? traceparentOf(runTraceId(plan.runId), runSpanId(plan.runId)) : undefined),
  }
}

/** Identities and start facts, which follow from the Agents read. */
async function factsWith(deps: EngineDeps, workflow: Workflow, base: Omit<WorkflowFacts, 'identities' | 'start'>): Promise<WorkflowFacts> {
  const [identities, start] = await Promise.all([loadIdentities(deps.kube, workflow, base.agents), loadStartFacts(deps, workflow, base.agents)])
  return { ...base, identities, start }
}

/** The pure workflow planner on the given facts. */
function planFor(workflow: Workflow, facts: WorkflowFacts, trigger: Trigger, now: string): WorkflowPlan | typeof UNCHANGED {
  const credentialWaits = new Map<string, string>()
  for (const [key, choice] of facts.start?.choices ?? []) if (choice.wait) credentialWaits.set(key, choice.wait)
  return planWorkflow({
    workflow, jobs: facts.jobs, jobsComplete: trigger.kind === 'full', agents: facts.agents, identities: facts.identities, outputs: facts.outputs,
    ...(facts.unshared && facts.unshared.size > 0 ? { unsharedAgents: facts.unshared } : {}), credentialWaits, stepNotes: facts.start?.notes ?? new Map(), ...(facts.siblings ? { siblings: facts.siblings } : {}),
  }, now)
}

/**
 * Whether a plan made on remembered Agents may stand: every Agent it looked up, and every Agent
 * whose step attempt finished, gets a metrics write in this plan, guarded by the remembered copy.
 */
function holdsOnRemembered(agents: ReadonlyMap<string, Agent>, plan: WorkflowPlan | typeof UNCHANGED, read: ReadonlySet<string>, now: string): boolean {
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
 * A remembered Agent lost its guarded write and was read again: the plan stands if its spec is
 * the one planned on and the same facts with the fresh Agent plan exactly the same; otherwise
 * the event goes back to the Broker (409) and the redelivery plans from fresh reads.
 */
function stillHolds(workflow: Workflow, facts: WorkflowFacts, trigger: Trigger, work: WorkflowWork, fresh: Agent): void {
  const key = `${fresh.metadata.namespace}/${fresh.metadata.name}`
  const planned = facts.agents.get(key)
  const agents = new Map(facts.agents).set(key, fresh)
  const again = planFor(workflow, { ...facts, agents }, trigger, work.now)
  if (planned?.metadata.generation !== fresh.metadata.generation || JSON.stringify(again) !== JSON.stringify(work.plan)) {
    throw new ConflictError(`Agent ${key} changed since this instance last saw it; the step is planned again from fresh reads`)
  }
  // The Jobs about to be built read the Agent too: from here on, the fresh copy.
  ;(facts.agents as Map<string, Agent>).set(key, fresh)
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

async function listShards(kube: Kube, memo: EngineMemo | undefined, workflow: Workflow, runId: string): Promise<V1ConfigMap[]> {
  const shards = await kube.listConfigMaps(workflow.metadata.namespace ?? 'default', outputShardSelector(workflow.metadata.name ?? ''))
  memo?.outputs.set(runKey(workflow), { uid: workflow.metadata.uid ?? '', runId, shards })
  return shards
}

const runKey = (workflow: Workflow) => `${workflow.metadata.namespace}/${workflow.metadata.name}`

/** Creates the Jobs, JOB_CREATES_IN_FLIGHT at a time; the first failure is thrown once all have been tried. */
async function createJobs(kube: Kube, manifests: readonly V1Job[]): Promise<Array<'created' | 'exists'>> {
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

async function attachResults(kube: Kube, namespace: string, workflow: Workflow, jobs: JobFact[]): Promise<void> {
  for (const job of jobsNeedingResults(workflow, jobs)) {
    // A success needs only its OUTPUT line; a failure's message comes from the log's last lines.
    const report = await kube.readStepReport(namespace, job.name, job.state === 'Succeeded' ? 'output' : 'log')
    const log = report?.text ?? null
    if (report?.startedAt) job.podStartedAt = report.startedAt
    job.result = job.state === 'Succeeded'
      ? (log === null ? { ok: false, class: 'error', error: `job ${job.name} completed but its pod log is gone` } : resultFromLog(log))
      : failureFromLog(log, job.failureReason, job.deadlineSeconds)
  }
}

/** How long a step's pod may take to start (scheduling, an image pull) before a resync asks why it has not. */
export const POD_START_GRACE_MS = 60_000

/**
 * On a resync: for each Job still without a ready pod a while after it started, the kubelet's
 * reason its pod waits (an image it cannot pull, a missing Secret), which the planner shows on the
 * step. A list call per such Job, only then: a healthy run pays nothing.
 */
async function notePodsNotStarting(kube: Kube, namespace: string, jobs: JobFact[], now: Date): Promise<void> {
  for (const job of jobs) {
    if (job.state !== 'Active' || job.attempt === 'rollback' || (job.readyPods ?? 0) > 0) continue
    const started = Date.parse(job.startedAt ?? '')
    if (!Number.isFinite(started) || now.getTime() - started < POD_START_GRACE_MS) continue
    const waiting = podWaitingDetail(await kube.listPods(namespace, { 'job-name': job.name }))
    if (waiting) job.podWaiting = waiting
  }
}

/**
 * The Agents the run's steps may use: those of its namespace, and those of other namespaces that
 * allow it (`kinetic.dev/allow-workflows-from`); the others are only named in `unshared`, so
 * nothing of them reaches a pod, and the run never counts metrics or autonomy on them.
 */
async function loadAgents(kube: Kube, workflow: Workflow, memo?: EngineMemo): Promise<{ agents: Map<string, Agent>; unshared: Set<string> }> {
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
async function loadIdentities(kube: Kube, workflow: Workflow, agents: ReadonlyMap<string, Agent>): Promise<Set<string>> {
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

async function writeOutputs(
  kube: Kube, memo: EngineMemo | undefined, workflow: Workflow, runId: string, shards: readonly V1ConfigMap[], plan: WorkflowPlan,
): Promise<Map<string, string>> {
  if (plan.outputWrites.length === 0) return new Map()
  const { configMaps, placement } = planOutputWrites(workflow, runId, shards, plan.outputWrites)
  const after = new Map(shards.map((s) => [s.metadata?.name ?? '', s]))
  // A shard created here has a resourceVersion this instance does not know: list next time.
  let known = true
  try {
    for (const configMap of configMaps) {
      if (configMap.metadata?.resourceVersion) {
        after.set(configMap.metadata.name ?? '', await kube.replaceConfigMap(configMap))
      } else if ((await kube.createConfigMap(configMap)) === 'exists') {
        // Another replica created this shard since we listed: re-plan from fresh state.
        throw new ConflictError(`ConfigMap ${configMap.metadata?.namespace}/${configMap.metadata?.name} appeared concurrently`)
      } else {
        known = false
      }
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
async function writeMemories(kube: Kube, workflow: Workflow, runId: string, plan: WorkflowPlan, agents: ReadonlyMap<string, Agent>): Promise<void> {
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
    if (existing) await kube.replaceConfigMap(next)
    else if ((await kube.createConfigMap(next)) === 'exists') {
      throw new ConflictError(`ConfigMap ${namespace}/${memoryConfigMapName(agentName)} appeared concurrently`)
    }
  }
}

/** The recalled memory of each persistent Agent among the steps about to start. */
async function recallMemories(kube: Kube, namespace: string, starts: readonly StepStart[], agents: ReadonlyMap<string, Agent>): Promise<Map<string, string>> {
  const recalled = new Map<string, string>()
  for (const key of new Set(starts.filter((s) => s.attempt !== 'rollback').map((s) => s.agentKey))) {
    const agent = agents.get(key)
    if (!agent || memoryBehavior(agent) !== 'persistent') continue
    recalled.set(key, recallFrom(agent, await kube.getConfigMap(namespace, memoryConfigMapName(agent.metadata.name ?? ''))))
  }
  return recalled
}

async function buildJobs(
  deps: EngineDeps, workflow: Workflow, runId: string, starts: readonly StepStart[],
  agents: ReadonlyMap<string, Agent>, stored: ReadonlyMap<string, string>, plan: WorkflowPlan, ready: StartFacts,
): Promise<V1Job[]> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const recalled = await recallMemories(deps.kube, namespace, starts, agents)
  const outputs = lazyOutputs(stored, plan)
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

/** Step outputs parsed on first access: a step reads a few of them, a large run holds thousands. */
function lazyOutputs(stored: ReadonlyMap<string, string>, plan: WorkflowPlan): Record<string, unknown> {
  const fresh = new Map(plan.outputWrites.map((w) => [w.step, w.json]))
  const parsed = new Map<string, unknown>()
  const jsonOf = (step: string) => fresh.get(step) ?? stored.get(step)
  return new Proxy({} as Record<string, unknown>, {
    get(_, step) {
      if (typeof step !== 'string') return undefined
      if (!parsed.has(step)) {
        const json = jsonOf(step)
        parsed.set(step, json === undefined ? undefined : JSON.parse(json))
      }
      return parsed.get(step)
    },
    has: (_, step) => typeof step === 'string' && jsonOf(step) !== undefined,
    ownKeys: () => [...new Set([...stored.keys(), ...fresh.keys()])],
    getOwnPropertyDescriptor: (_, step) => (typeof step === 'string' && jsonOf(step) !== undefined
      ? { enumerable: true, configurable: true, value: undefined } : undefined),
  })
}

/**
 * What steps about to start need, read only when one may: the providers visible from the
 * Workflow's namespace, the Namespace's opt-in label (only when a platform provider's key is
 * needed), the `mcp-servers` registry, and MCPServers' discovered tools (only when an agent names
 * an MCP tool that is not a registered server). `only` limits it to those agents.
 */
async function loadStartFacts(deps: EngineDeps, workflow: Workflow, agents: ReadonlyMap<string, Agent>, only?: readonly string[]): Promise<StartFacts | null> {
  const keys = [...(only ? new Set(only) : agentsThatMayStart(workflow))].filter((k) => agents.has(k))
  if (keys.length === 0) return null
  const { kube, config } = deps
  const namespace = workflow.metadata.namespace ?? 'default'
  const now = deps.now()
  const [providers, registryMap] = await Promise.all([
    rememberedConfig(deps.memo, providersKey(namespace), now, () => providersVisibleFrom(kube, namespace, config.platformNamespace)),
    rememberedConfig(deps.memo, registryKey(config.agentNamespace, REGISTRY_CONFIGMAP), now, () => kube.getConfigMap(config.agentNamespace, REGISTRY_CONFIGMAP)),
  ])
  const ctx = { workflowNamespace: namespace, platformNamespace: config.platformNamespace, optedIn: true }
  // One choice per agent and provider override of its steps (choiceKeyOf, spec §5.10).
  const wanted = new Set(keys)
  const choiceKeys = new Map<string, { agentKey: string; provider?: string }>()
  for (const step of workflow.spec.steps) {
    if (!step.agentRef?.name) continue
    const agentKey = agentKeyOf(workflow, step)
    if (!wanted.has(agentKey)) continue
    choiceKeys.set(choiceKeyOf(workflow, step), { agentKey, ...(step.model?.provider !== undefined ? { provider: step.model.provider } : {}) })
  }
  const choose = () => new Map([...choiceKeys].map(([k, c]) => [k, chooseProvider(agents.get(c.agentKey)!, providers, ctx, c)] as const))
  let choices = choose()
  // The Namespace is read only when some step needs a key only the platform's copy can hold.
  const usesCopy = (c: ProviderChoice) => c.credentials.apiKey?.secret === LLM_CREDENTIALS_SECRET || c.credentials.gcp?.secret === LLM_CREDENTIALS_SECRET
  if ([...choices.values()].some(usesCopy) && !isOptedIn(await kube.getNamespace(namespace))) {
    ctx.optedIn = false
    choices = choose()
  }
  const registry = parseRegistry(registryMap?.data?.[REGISTRY_KEY])
  const where = `${config.agentNamespace}/${REGISTRY_CONFIGMAP}`
  // What a step of this Workflow may use: the Job builder lists exactly these servers.
  const view = stepMcpView(registry.entries, namespace, mcpVisibilityOf(config))
  const knownTools = new Map<string, string[]>()
  if (!registry.error && keys.some((k) => needsToolLookup(agents.get(k)!, view))) {
    const usable = new Set(view.servers.map((s) => serverKey(s.namespace, s.entry.name)))
    for (const server of await kube.listAllMCPServers()) {
      const key = serverKey(server.metadata.namespace ?? '', server.metadata.name ?? '')
      if (!usable.has(key) || !server.status?.tools) continue
      knownTools.set(key, server.status.tools.map((t) => t.name))
    }
  }
  const notes = new Map<string, string>()
  for (const [key, { agentKey }] of choiceKeys) {
    const agent = agents.get(agentKey)!
    const choice = choices.get(key)!
    const warning = mcpToolWarning(agent, namespace, view, registry.error, knownTools, where)
    const text = [...choice.notes, ...(warning ? [warning] : [])].join('; ')
    // 1 KiB per step, like errors: 200 listed steps must keep the status far below etcd's limit.
    if (text) notes.set(key, text.length > 1024 ? `${text.slice(0, 1021)}...` : text)
  }
  return { choices, notes, registry: registry.error ? [] : registry.entries }
}

function markRollback(job: V1Job): void {
  if (job.metadata?.labels) job.metadata.labels[LABEL_ATTEMPT] = 'rollback'
  const template = job.spec?.template.metadata
  if (template?.labels) template.labels[LABEL_ATTEMPT] = 'rollback'
}

/** STEP_INPUT of a compensation Job (purko's shape, keys in alphabetical order). */
function rollbackInput(step: string, originalOutput: string): string {
  return JSON.stringify({
    action: 'rollback',
    originalOutput,
    task: `Rollback step "${step}": undo the actions taken in the original execution. Original output is provided.`,
  })
}
