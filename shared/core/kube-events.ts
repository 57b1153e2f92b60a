import type { CoreV1Event } from '@kubernetes/client-node'
import { ANNOTATION_CLOUDEVENT_ID, ANNOTATION_CLOUDEVENT_TYPE, API_VERSION } from '../schemas/labels.js'
import type { ObjectMeta } from '../schemas/object-meta.js'
import { sha256Hex } from './sha256.js'

/** Component name Kinetic's Kubernetes Events about a kind carry, e.g. `kinetic-workflow`. */
export function eventSource(kind: string): string {
  return `kinetic-${kind.toLowerCase()}`
}

/** The object an Event is about: a purko.io kind and its metadata. */
export interface ObjectRef {
  kind: string
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid' | 'resourceVersion'>
}

/** The parts of a transition an Event records. */
export interface Recordable {
  type: 'Normal' | 'Warning'
  reason: string
  message: string
  fieldPath?: string
}

/**
 * Pure: the Kubernetes Event recording a transition. Its name is derived from the seed (e.g. the
 * run id), reason, field and message, so a redelivered event re-creates the same name and is
 * not recorded twice. With `cloudEvent` (the CloudEvent published for the same transition), the
 * Event carries its type and id as annotations, so `kinetic events` can show the CloudEvent.
 */
export function kubernetesEventFor(
  object: ObjectRef, seed: string, t: Recordable, now: string, cloudEvent?: { type: string; id: string },
): CoreV1Event {
  const name = object.metadata.name ?? ''
  const component = eventSource(object.kind)
  const id = sha256Hex(`${seed}|${t.reason}|${t.fieldPath ?? ''}|${t.message}`).slice(0, 16)
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `${name.slice(0, 200)}.${id}`,
      namespace: object.metadata.namespace,
      ...(cloudEvent ? { annotations: { [ANNOTATION_CLOUDEVENT_TYPE]: cloudEvent.type, [ANNOTATION_CLOUDEVENT_ID]: cloudEvent.id } } : {}),
    },
    involvedObject: {
      apiVersion: API_VERSION,
      kind: object.kind,
      name,
      namespace: object.metadata.namespace,
      uid: object.metadata.uid,
      resourceVersion: object.metadata.resourceVersion,
      ...(t.fieldPath ? { fieldPath: t.fieldPath } : {}),
    },
    reason: t.reason,
    message: t.message.slice(0, 1024),
    type: t.type,
    source: { component },
    reportingComponent: component,
    reportingInstance: component,
    firstTimestamp: new Date(now),
    lastTimestamp: new Date(now),
    count: 1,
  }
}
