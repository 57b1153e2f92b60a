import { createHash } from 'node:crypto'
import { CloudEvent, HTTP } from 'cloudevents'
import type { Logger } from '../log.js'
import { API_VERSION } from '../schemas/labels.js'
import type { ObjectRef } from '../core/kube-events.js'

/** Prefix of every CloudEvent type Kinetic emits; no Trigger of ours subscribes to these. */
export const KINETIC_EVENT_PREFIX = 'dev.kinetic.'

/** What a CloudEvent says about one transition. */
export interface Announceable {
  kind: string
  reason: string
  message: string
  fieldPath?: string
  data?: Record<string, unknown>
  /** False: no CloudEvent for this one. */
  publish?: boolean
}

/**
 * How a kind's CloudEvents are named when its event catalogue fixes more than the defaults
 * (recipes: `dev.kinetic.recipe.*`, `data.recipe`, `generation` and `revision` in every event,
 * ids scoped by uid and revision, docs/recipes/lifecycle-spec.md §13).
 */
export interface CloudEventNaming {
  /** The kind's name in the type (`dev.kinetic.<name>.<transition>`) and in `data`; default: the kind in lower case. */
  name?: string
  /** Data every event carries, under the transition's own. */
  data?: Record<string, unknown>
  /** Hashed ahead of the type and the seed into each id (default: the id hashes the seed and the transition only). */
  idScope?: string
}

/** Publishes Kinetic's own CloudEvents (run started, agent promoted, ...) for `kn` and event-display users. */
export interface KineticEvents {
  publish(object: ObjectRef, seed: string, transitions: readonly Announceable[], traceparent?: string, naming?: CloudEventNaming): Promise<void>
}

/** Resource path of a purko.io object, e.g. `/apis/purko.io/v1alpha1/namespaces/ns/workflows/wf`. */
export function subjectOf(object: ObjectRef): string {
  return `/apis/${API_VERSION}/namespaces/${object.metadata.namespace ?? ''}/${pluralOf(object.kind)}/${object.metadata.name ?? ''}`
}

function pluralOf(kind: string): string {
  const lower = kind.toLowerCase()
  return lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s`
}

/**
 * Pure: the CloudEvents of the transitions that publish one (all but `publish: false`), typed
 * `dev.kinetic.<kind>.<transition kind>`; ids are derived from the seed and the transition, so
 * retries repeat them and consumers can dedupe.
 */
export function kineticEventsFor(
  source: string, object: ObjectRef, seed: string, transitions: readonly Announceable[], traceparent?: string, naming: CloudEventNaming = {},
): CloudEvent<Record<string, unknown>>[] {
  const namespace = object.metadata.namespace ?? ''
  const name = object.metadata.name ?? ''
  const kind = naming.name ?? object.kind.toLowerCase()
  return transitions.filter((t) => t.publish !== false).map((t) => {
    const type = `${KINETIC_EVENT_PREFIX}${kind}.${t.kind}`
    const what = `${t.reason}|${t.fieldPath ?? ''}|${t.message}`
    const hashed = naming.idScope === undefined ? `${seed}|${t.kind}|${what}` : `${naming.idScope}|${type}|${seed}|${what}`
    return new CloudEvent<Record<string, unknown>>({
      id: createHash('sha256').update(hashed).digest('hex').slice(0, 32),
      type,
      source,
      subject: subjectOf(object),
      datacontenttype: 'application/json',
      data: { namespace, [kind]: name, reason: t.reason, message: t.message, ...(naming.data ?? {}), ...(t.data ?? {}) },
      // CloudEvents' distributed tracing extension: the run's trace, so consumers' spans join it.
      ...(traceparent ? { traceparent } : {}),
    })
  })
}

/** Sends events to `sink` (a Broker URL) in binary mode; without a sink they are only logged. */
export function httpKineticEvents(sink: string | undefined, source: string, log: Logger): KineticEvents {
  const send = async (events: readonly CloudEvent<Record<string, unknown>>[]): Promise<void> => {
    if (!sink) return
    for (const event of events) {
      const message = HTTP.binary(event)
      // The W3C header too, so the Broker's own spans (where Knative exports them) join the trace.
      const headers = { ...(message.headers as Record<string, string>), ...(typeof event.traceparent === 'string' ? { traceparent: event.traceparent } : {}) }
      try {
        const res = await fetch(sink, { method: 'POST', headers, body: message.body as string })
        if (!res.ok) log.warn({ ceId: event.id, ceType: event.type, status: res.status }, 'Event sink refused a Kinetic event')
      } catch (err) {
        log.warn({ ceId: event.id, ceType: event.type, err: (err as Error).message }, 'Could not deliver a Kinetic event')
      }
    }
  }
  return {
    async publish(object, seed, transitions, traceparent, naming) {
      if (!sink || transitions.length === 0) return
      await send(kineticEventsFor(source, object, seed, transitions, traceparent, naming))
    },
  }
}

/** A publisher that drops everything (tests, and processes without a sink). */
export const noKineticEvents: KineticEvents = { publish: async () => {} }
