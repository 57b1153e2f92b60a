import type { CoreV1Event } from '@kubernetes/client-node'
import type { Workflow } from '../schemas/workflow.js'
import { API_VERSION } from '../schemas/labels.js'
import { sha256Hex } from './sha256.js'
import type { Transition } from './workflow-plan.js'

/** Component name Kinetic's Kubernetes Events carry. */
export const EVENT_SOURCE = 'kinetic-workflow'

/**
 * Pure: the Kubernetes Event recording a transition. Its name is derived from the run, reason,
 * step and message, so a redelivered event re-creates the same name and is not recorded twice.
 */
export function kubernetesEventFor(workflow: Workflow, runId: string, t: Transition, now: string): CoreV1Event {
  const name = workflow.metadata.name ?? ''
  const id = sha256Hex(`${runId}|${t.reason}|${t.step ?? ''}|${t.message}`).slice(0, 16)
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${name.slice(0, 200)}.${id}`, namespace: workflow.metadata.namespace },
    involvedObject: {
      apiVersion: API_VERSION,
      kind: 'Workflow',
      name,
      namespace: workflow.metadata.namespace,
      uid: workflow.metadata.uid,
      resourceVersion: workflow.metadata.resourceVersion,
      ...(t.step ? { fieldPath: `spec.steps{${t.step}}` } : {}),
    },
    reason: t.reason,
    message: t.message.slice(0, 1024),
    type: t.type,
    source: { component: EVENT_SOURCE },
    reportingComponent: EVENT_SOURCE,
    reportingInstance: EVENT_SOURCE,
    firstTimestamp: new Date(now),
    lastTimestamp: new Date(now),
    count: 1,
  }
}
