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
  const accepted = (acceptedEventsOf(app) ?? []).filter((a) => a.types.includes(type))
  const dataKind = typeof data === 'object' && data !== null ? (data as { kind?: unknown }).kind : undefined
  const kind = extensions.kind ?? (typeof dataKind === 'string' && accepted.some((a) => a.kind === dataKind) ? dataKind : undefined)
  const match = accepted.find((a) => extensions.kineticsource === undefined || a.kineticsource === extensions.kineticsource)
  const source = extensions.kineticsource ?? match?.kineticsource
  const kindExtension = kind ?? (match?.kind !== undefined && accepted.find((a) => a.kineticsource === source)?.kind)
  const event = new CloudEvent({
    type,
    source: 'https://10.96.0.1:443',
    subject: '/apis/test',
    datacontenttype: 'application/json',
    data: data as Record<string, unknown>,
    ...(source !== undefined ? { kineticsource: source } : {}),
    ...(typeof kindExtension === 'string' ? { kind: kindExtension } : {}),
    ...extensions,
  })
  const message = HTTP.binary(event)
  return app.request('/', { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })
}
