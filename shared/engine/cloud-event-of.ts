/**
 * The CloudEvent a Kubernetes Event of Kinetic's stands for: one mapping for `kinetic events`
 * and the console's run page, so both show the same type and id for the same transition.
 */
import type { CoreV1Event } from '@kubernetes/client-node'
import { ANNOTATION_CLOUDEVENT_ID, ANNOTATION_CLOUDEVENT_TYPE } from '../schemas/labels.js'
import { KINETIC_EVENT_PREFIX, subjectOf } from './kinetic-events.js'

/** A CloudEvent in structured mode (JSON), as `kinetic events -o json` prints one per line. */
export interface StructuredCloudEvent {
  specversion: '1.0'
  id: string
  type: string
  source: string
  subject: string
  time?: string
  datacontenttype: 'application/json'
  data: Record<string, unknown>
}

function iso(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString()
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * Pure: the CloudEvent a Kubernetes Event of Kinetic's stands for. Its type and id come from the
 * Event's kinetic.dev/cloudevent-* annotations (the ones published for the same transition);
 * an Event without them (older, or not Kinetic's) gets `dev.kinetic.<kind>.event` and its own name.
 */
export function cloudEventOf(event: CoreV1Event): StructuredCloudEvent {
  const involved = event.involvedObject
  const kind = involved.kind ?? 'Object'
  const namespace = involved.namespace ?? event.metadata?.namespace ?? ''
  const name = involved.name ?? ''
  const annotations = event.metadata?.annotations ?? {}
  const component = event.reportingComponent || event.source?.component || 'kinetic'
  const time = iso(event.lastTimestamp) ?? iso(event.eventTime) ?? iso(event.firstTimestamp) ?? iso(event.metadata?.creationTimestamp)
  return {
    specversion: '1.0',
    id: annotations[ANNOTATION_CLOUDEVENT_ID] ?? event.metadata?.name ?? '',
    type: annotations[ANNOTATION_CLOUDEVENT_TYPE] ?? `${KINETIC_EVENT_PREFIX}${kind.toLowerCase()}.event`,
    source: `/kinetic/${component}`,
    subject: subjectOf({ kind, metadata: { namespace, name } }),
    ...(time ? { time } : {}),
    datacontenttype: 'application/json',
    data: {
      namespace,
      [kind.toLowerCase()]: name,
      reason: event.reason ?? '',
      message: event.message ?? '',
      severity: event.type ?? 'Normal',
      ...(involved.fieldPath ? { fieldPath: involved.fieldPath } : {}),
      ...(event.count !== undefined && event.count > 1 ? { count: event.count } : {}),
    },
  }
}
