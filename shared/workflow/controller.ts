/**
 * The Workflow controller: the hooks the shell (shared/engine/controller.ts) drives for one run.
 * Its reads are in gather.ts, its child writes in child-writes.ts, its status write in
 * status-write.ts, and what it does to the other runs of its template in cross-run.ts; the
 * planner is plan/plan-workflow.ts.
 */
import { apiMessage, ForbiddenError } from '../core/errors.js'
import { UNCHANGED } from '../core/plan.js'
import { ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Workflow } from '../schemas/workflow.js'
import { runSpanId, runTraceId, traceparentOf } from '../telemetry/ids.js'
import { templateOf } from '../template/run-builder.js'
import { ALARM_VERBS, armTickAlarm } from '../ticks/alarm.js'
import { RUN_CHILD_VERBS, writeRunChildren } from './child-writes.js'
import { cancelReplaced, CROSS_RUN_VERBS, wakeQueued, type ReconcileRun } from './cross-run.js'
import { gatherRun, RUN_GATHER_VERBS, type RunHint } from './gather.js'
import { planRun, type RunFacts, type WorkflowWork } from './plan/run-facts.js'
import { isTerminalPhase } from './plan/run-status.js'
import { NAMESPACE_NOT_ENABLED, planNamespaceBlocked } from './plan/workflow-blocked.js'
import { RUN_STATUS_VERBS, writeRunStatus } from './status-write.js'

/** The port verbs of reconciling a run: the run, its reads and writes, the other runs of its template, the resync alarm. */
export const WORKFLOW_VERBS = [
  ...ENGINE_VERBS, ...RUN_GATHER_VERBS, ...RUN_CHILD_VERBS, ...RUN_STATUS_VERBS, ...CROSS_RUN_VERBS, ...ALARM_VERBS, 'getWorkflow', 'patchWorkflowStatus',
] as const satisfies readonly (keyof Kube)[]
export type WorkflowKube = KubeVerbs<typeof WORKFLOW_VERBS>

export type { EngineDeps } from '../engine/controller.js'
export type { RunHint } from './gather.js'
export type { WorkflowWork } from './plan/run-facts.js'
export { POD_START_GRACE_MS } from './step-reports.js'

/** How one reconcile may reach beyond its own run. */
export interface ReconcileOptions {
  /**
   * After this run reaches a terminal phase, reconcile the head of its template's queue at once
   * (default true). Off for the in-process reconciles that waking and `replace` do themselves.
   */
  wake?: boolean
}

/**
 * Reads a Workflow run fresh, plans, and applies the plan: outputs and Jobs first, annotations,
 * status last (resourceVersion-guarded), then Events, then the runs its end wakes. A lost race
 * throws ConflictError so the Broker redelivers and the next attempt re-plans from fresh state.
 */
export async function reconcileWorkflow(
  deps: EngineDeps<WorkflowKube>, namespace: string, name: string, hint: RunHint, options: ReconcileOptions = {},
): Promise<Reconciled<WorkflowWork>> {
  try {
    return await reconcile(workflowController(hint, options), deps, namespace, name)
  } catch (err) {
    // The namespace did not grant the workflow functions its Jobs, pods and ConfigMaps.
    if (!(err instanceof ForbiddenError)) throw err
    return reconcile(blockedController(apiMessage(err)), deps, namespace, name)
  }
}

/** Another run of the template, reconciled in-process: a full look, waking no queue itself. */
const reconcileOther: ReconcileRun<WorkflowKube> = (deps, namespace, name) => reconcileWorkflow(deps, namespace, name, { kind: 'full' }, { wake: false })

function workflowController(hint: RunHint, options: ReconcileOptions): Controller<Workflow, RunFacts, WorkflowWork, WorkflowKube> {
  return {
    kind: 'Workflow',
    read: (deps, namespace, name) => deps.kube.getWorkflow(namespace, name),
    gather: (deps, workflow) => gatherRun(deps, workflow, hint),
    plan(workflow, facts, now) {
      // Planned already, on remembered Agents, when the facts were complete.
      const at = facts.remembered?.now ?? now
      const plan = facts.remembered?.plan ?? planRun(workflow, facts, at)
      if (plan === UNCHANGED) return UNCHANGED
      const template = templateOf(workflow)
      return {
        plan, placed: new Map(), created: [], now: at, transitions: plan.transitions,
        podStarts: new Map(facts.jobs.flatMap((j) => (j.podStartedAt ? [[j.name, j.podStartedAt] as const] : []))),
        ...(template !== undefined ? { template } : {}),
      }
    },
    async writeChildren(deps, workflow, facts, work) {
      // The runs this one replaces end (and lose their Jobs) before it starts: other runs'
      // work, but it must come before this run's own Jobs, so it cannot wait for afterParent.
      await cancelReplaced(deps, workflow.metadata.namespace ?? 'default', work.plan.cancelRuns, reconcileOther)
      return writeRunChildren(deps, workflow, facts, work)
    },
    writeParent: ({ kube }, workflow, work) => writeRunStatus(kube, workflow, work),
    async afterParent(deps, workflow, { plan, template }) {
      const finished = isTerminalPhase(plan.status?.phase)
      if (template !== undefined && options.wake !== false && finished) {
        await wakeQueued(deps, workflow.metadata.namespace ?? 'default', workflow.metadata.name ?? '', template, reconcileOther)
      }
      // A run that started (or queued) has work in flight: the resync alarm ticks every minute
      // until resync-tick finds no unfinished run (shared/ticks/alarm-plan.ts).
      if (plan.transitions.some((t) => t.kind === 'run.started' || t.kind === 'run.queued') && !finished) {
        await armTickAlarm(deps, 'resync', deps.now().toISOString())
      }
    },
    eventSeed: (_, { plan }) => plan.runId ?? '',
    traceparent: (_, { plan }) => (plan.runId ? traceparentOf(runTraceId(plan.runId), runSpanId(plan.runId)) : undefined),
  }
}

/**
 * The workflow functions may not work in the Workflow's namespace: its status and a Warning
 * Event say so with the command that grants it (the Workflow and its status are cluster-wide
 * rights; what was refused is namespaced). Nothing is redelivered: the resync tick tries again.
 */
function blockedController(refusal: string): Controller<Workflow, string, WorkflowWork, WorkflowKube> {
  return {
    kind: 'Workflow',
    read: (deps, namespace, name) => deps.kube.getWorkflow(namespace, name),
    async gather(deps, workflow) {
      deps.log.warn({ namespace: workflow.metadata.namespace, name: workflow.metadata.name, refusal }, 'The workflow functions may not work in this namespace')
      return refusal
    },
    plan(workflow, refused, now) {
      const plan = planNamespaceBlocked(workflow, refused, now)
      if (plan === UNCHANGED) return UNCHANGED
      return { plan, placed: new Map(), created: [], now, podStarts: new Map(), transitions: plan.transitions }
    },
    writeChildren: async (_deps, _workflow, _refused, work) => work,
    async writeParent({ kube }, workflow, { plan }) {
      await kube.patchWorkflowStatus(workflow.metadata.namespace ?? 'default', workflow.metadata.name ?? '', workflow.metadata.resourceVersion ?? '', plan.status!)
    },
    async afterParent(deps, _workflow, { plan }) {
      // The run waits for the grant: the resync alarm retries it every minute.
      if (!isTerminalPhase(plan.status?.phase)) await armTickAlarm(deps, 'resync', deps.now().toISOString())
    },
    eventSeed: (workflow) => `${workflow.metadata.uid ?? ''}/${NAMESPACE_NOT_ENABLED}`,
  }
}
