/**
 * What one run does to the other runs of its template: a concurrency `replace` ends the runs it
 * supersedes before it starts, and a finished run starts the runs queued behind it. Each other
 * run is reconciled in-process through `reconcileRun`, as its own event would.
 */
import { ConflictError } from '../core/errors.js'
import type { EngineDeps, EngineKube, Reconciled } from '../engine/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { ANNOTATION_CANCEL, ANNOTATION_CANCEL_REASON } from '../schemas/labels.js'
import type { Workflow } from '../schemas/workflow.js'
import { isActiveRun, isWaiting, queueOrder, type RunCancel } from '../template/plan/concurrency.js'
import { templateOf, templateRunSelector } from '../template/run-builder.js'
import type { WorkflowWork } from './plan/run-facts.js'

/** The port verbs cross-run work calls itself (the other runs' reconciles need their own). */
export const CROSS_RUN_VERBS = ['listWorkflowsIn', 'getWorkflow', 'patchWorkflowMetadata'] as const satisfies readonly (keyof Kube)[]
type CrossRunKube = KubeVerbs<typeof CROSS_RUN_VERBS> & EngineKube

/** A full reconcile of another run, which wakes no queue of its own. */
export type ReconcileRun<K extends CrossRunKube> = (deps: EngineDeps<K>, namespace: string, name: string) => Promise<Reconciled<WorkflowWork>>

/** Queued runs one finished run reconciles at most; the resync tick is the safety net for the rest. */
const MAX_WAKE = 10

/**
 * A run of `template` just finished: its queued siblings are reconciled at once, oldest first,
 * while they start (one freed slot usually starts one run). Best effort: failures are logged, and
 * the resync tick re-evaluates every queued run anyway.
 */
export async function wakeQueued<K extends CrossRunKube>(deps: EngineDeps<K>, namespace: string, finished: string, template: string, reconcileRun: ReconcileRun<K>): Promise<void> {
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
      const done = await reconcileRun(deps, namespace, name)
      // Still queued: every run behind it is too.
      if (done.result !== 'applied' || done.plan?.plan.status?.phase === 'Pending') return
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
export async function cancelReplaced<K extends CrossRunKube>(deps: EngineDeps<K>, namespace: string, cancels: readonly RunCancel[], reconcileRun: ReconcileRun<K>): Promise<void> {
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
      await reconcileRun(deps, namespace, cancel.name)
    } catch (err) {
      // The annotation is there: the run's own event (or the resync tick) finishes the cancel.
      deps.log.warn({ namespace, name: cancel.name, err: (err as Error).message }, `Could not cancel replaced Workflow ${namespace}/${cancel.name} at once`)
    }
  }
}
