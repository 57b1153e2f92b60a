import { CloudEvent, HTTP } from 'cloudevents'
import type { Hono } from 'hono'
import { acceptedEventsOf } from '../../shared/http/app.js'

/** The CloudEvent types the ApiServerSource and PingSource send. */
export const RESOURCE_UPDATE = 'dev.knative.apiserver.resource.update'
export const RESOURCE_ADD = 'dev.knative.apiserver.resource.add'
export const PING = 'dev.knative.sources.ping'

/**
 * Delivers a CloudEvent to a function app in binary mode, exactly as the Broker sends it: without
 * a `kineticsource` in `extensions`, with the one of the first source whose Trigger passes `type`
 * to this function (as only such an event reaches it); an ApiServerSource event also gets the
 * `kind` extension Knative sets, the object's kind (or, without one in `data`, the first kind a
 * Trigger of the function passes).
 */
export async function deliver(app: Hono, type: string, data: unknown, extensions: Record<string, string> = {}): Promise<Response> {
  const accepted = (acceptedEventsOf(app) ?? [])
    .filter((a) => a.types.includes(type) && (extensions.kineticsource === undefined || a.kineticsource === extensions.kineticsource))
  const kind = extensions.kind ?? (data as { kind?: unknown } | null | undefined)?.kind
  const match = accepted.find((a) => a.kind === undefined || a.kind === kind) ?? accepted[0]
  const event = new CloudEvent({
    type,
    source: 'https://10.96.0.1:443',
    subject: '/apis/test',
    datacontenttype: 'application/json',
    data: data as Record<string, unknown>,
    ...(match ? { kineticsource: match.kineticsource } : {}),
    ...(match?.kind ? { kind: match.kind } : {}),
    ...extensions,
  })
  const message = HTTP.binary(event)
  return app.request('/', { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })
}
