/**
 * What a function's Triggers can deliver, and the guard that turns away anything else before a
 * handler runs. Every function but the public ones is reachable from any pod of the cluster, so
 * an event no Trigger of ours sends (another type, `kineticsource` or `kind`) is refused with 400,
 * and a body larger than any event of ours with 413; neither is redelivered by the Broker.
 * `test/knative/wiring.test.ts` checks each function's list against its Triggers' filters.
 */
import type { MiddlewareHandler } from 'hono'
import { BadEventError, EventTooLargeError } from '../core/errors.js'
import { readBody } from './read-body.js'

/** ApiServerSource and PingSource event types (Resource mode). */
export const RESOURCE_ADD = 'dev.knative.apiserver.resource.add'
export const RESOURCE_UPDATE = 'dev.knative.apiserver.resource.update'
export const RESOURCE_DELETE = 'dev.knative.apiserver.resource.delete'
export const PING = 'dev.knative.sources.ping'

/**
 * Largest CloudEvent body: an object in Resource mode is at most etcd's 1.5 MiB, which JSON
 * escaping and a structured-mode envelope can grow, but not past this.
 */
export const MAX_EVENT_BYTES = 3 * 1024 * 1024

/** The `kineticsource` of the one ApiServerSource (knative/sources/resources.yaml). */
export const RESOURCES_SOURCE = 'resources'

/** The events of one source (and, for the ApiServerSource, one kind) a function's Trigger lets through. */
export interface AcceptedEvents {
  /** The `kineticsource` extension the source stamps. */
  kineticsource: string
  /** The `kind` extension Knative's ApiServerSource stamps (the object's kind); only for its events. */
  kind?: string
  /** The event types the Trigger's filter passes. */
  types: readonly string[]
}

/** The accepted events of the ApiServerSource: one entry per kind, each with `types`. */
export function resourceEvents(kinds: readonly string[], types: readonly string[]): AcceptedEvents[] {
  return kinds.map((kind) => ({ kineticsource: RESOURCES_SOURCE, kind, types }))
}

/** What the guard reads of an event: its type and the extensions Triggers filter on. */
export interface EventAttributes { type?: string; kineticsource?: unknown; kind?: unknown }

/** Pure: whether an event with these attributes is one a Trigger of the function sends. */
export function isAccepted(accepted: readonly AcceptedEvents[], event: EventAttributes): boolean {
  return accepted.some((a) => a.kineticsource === event.kineticsource && (a.kind === undefined || a.kind === event.kind) && event.type !== undefined && a.types.includes(event.type))
}

/**
 * Middleware for `POST /`: reads the body once, at most MAX_EVENT_BYTES (413 beyond, read no
 * further), and, when `accepted` is given, refuses with 400 an event whose type and
 * `kineticsource` (binary-mode headers, or a structured-mode envelope) no Trigger sends. The body
 * read is kept for the handler's readCloudEvent.
 */
export function guardEvents(accepted?: readonly AcceptedEvents[]): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'POST') return next()
    const text = await readCapped(c.req.raw, MAX_EVENT_BYTES)
    // Hono keeps a read body in bodyCache (promises, though typed as Body's methods): the handler's
    // c.req.text() then answers from it instead of the consumed stream.
    ;(c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text)
    if (accepted) {
      const event = attributesOf(c.req.header('content-type'), (n) => c.req.header(n), text)
      if (!isAccepted(accepted, event)) {
        const expected = accepted.map((a) => `${a.kineticsource}${a.kind ? ` ${a.kind}` : ''}: ${a.types.join(', ')}`).join('; ')
        const kind = event.kind === undefined ? '' : ` and kind ${String(event.kind)}`
        throw new BadEventError(`No Trigger sends this function a CloudEvent of type ${event.type ?? '(none)'} with kineticsource ${String(event.kineticsource ?? '(none)')}${kind} (it takes ${expected})`)
      }
    }
    return next()
  }
}

/** The type, kineticsource and kind of a binary-mode (headers) or structured-mode (JSON envelope) event. */
function attributesOf(contentType: string | undefined, header: (name: string) => string | undefined, body: string): EventAttributes {
  if ((contentType ?? '').toLowerCase().startsWith('application/cloudevents+json')) {
    try {
      const envelope = JSON.parse(body) as Record<string, unknown>
      return { ...(typeof envelope.type === 'string' ? { type: envelope.type } : {}), kineticsource: envelope.kineticsource, kind: envelope.kind }
    } catch {
      return {}
    }
  }
  const type = header('ce-type')
  return { ...(type !== undefined ? { type } : {}), kineticsource: header('ce-kineticsource'), kind: header('ce-kind') }
}

async function readCapped(req: Request, max: number): Promise<string> {
  const body = await readBody(req, max)
  if (body === 'too-large') throw tooLarge(max)
  return new TextDecoder().decode(body)
}

function tooLarge(max: number): EventTooLargeError {
  return new EventTooLargeError(`CloudEvent body larger than ${max} bytes; no event of ours is that large`)
}
