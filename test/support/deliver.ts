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
 * to this function (as only such an event reaches it).
 */
export async function deliver(app: Hono, type: string, data: unknown, extensions: Record<string, string> = {}): Promise<Response> {
  const source = extensions.kineticsource ?? acceptedEventsOf(app)?.find((a) => a.types.includes(type))?.kineticsource
  const event = new CloudEvent({
    type,
    source: 'https://10.96.0.1:443',
    subject: '/apis/test',
    datacontenttype: 'application/json',
    data: data as Record<string, unknown>,
    ...(source !== undefined ? { kineticsource: source } : {}),
    ...extensions,
  })
  const message = HTTP.binary(event)
  return app.request('/', { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })
}
