/**
 * The Workflow controller's parent write: the run's annotations, then its status, each guarded
 * by the resourceVersion planned on; a status write that landed ends the spans it closes.
 */
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Workflow } from '../schemas/workflow.js'
import { recordRunProgress } from '../telemetry/run-progress.js'
import type { WorkflowWork } from './plan/run-facts.js'
import { stepOf } from './plan/transitions.js'

/** The port verbs of a run's own write: its annotations, then its status. */
export const RUN_STATUS_VERBS = ['patchWorkflowMetadata', 'patchWorkflowStatus'] as const satisfies readonly (keyof Kube)[]

export async function writeRunStatus(kube: KubeVerbs<typeof RUN_STATUS_VERBS>, workflow: Workflow, { plan, placed, now, podStarts }: WorkflowWork): Promise<void> {
  const namespace = workflow.metadata.namespace ?? 'default'
  const name = workflow.metadata.name ?? ''
  let resourceVersion = workflow.metadata.resourceVersion ?? ''
  if (plan.annotations) {
    const updated = await kube.patchWorkflowMetadata(namespace, name, resourceVersion, { annotations: plan.annotations })
    resourceVersion = updated.metadata.resourceVersion ?? resourceVersion
  }
  if (!plan.status) return
  const status = { ...plan.status }
  // Where each fresh output went is known only now that the outputs are written.
  if (placed.size > 0 && status.stepStatuses) {
    status.stepStatuses = status.stepStatuses.map((s) => (placed.has(s.name) ? { ...s, outputRef: placed.get(s.name)! } : s))
  }
  await kube.patchWorkflowStatus(namespace, name, resourceVersion, status)
  // Only a status write that landed ends spans: a lost race re-plans and writes them then.
  const approved = plan.transitions.flatMap((t) => (t.kind === 'step.approved' ? stepOf(t) ?? [] : []))
  recordRunProgress(workflow, status, { started: plan.startJobs, approved, podStarts }, now)
}
