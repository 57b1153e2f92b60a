// Item 8 of issue 27: the internal functions are reachable from any pod of the cluster, so they
// take only the CloudEvents their Triggers send (400 otherwise) and no body larger than any event
// of ours (413), before a handler runs; dead-letter, which takes whatever failed, keeps the limit.
import { CloudEvent, HTTP } from 'cloudevents'
import type { Hono } from 'hono'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { baseApp } from '../../shared/http/app.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { MAX_EVENT_BYTES, PING, RESOURCE_ADD, RESOURCE_UPDATE, type AcceptedEvents } from '../../shared/http/event-guard.js'

const silent = pino({ level: 'silent' })
const EVENTS: AcceptedEvents[] = [{ kineticsource: 'workflows', types: [RESOURCE_ADD, RESOURCE_UPDATE] }, { kineticsource: 'resync', types: [PING] }, { kineticsource: 'resources', kind: 'Job', types: [RESOURCE_UPDATE] }]

/** An app that records what its handler read. */
function appWith(events?: AcceptedEvents[]): { app: Hono; seen: unknown[] } {
  const seen: unknown[] = []
  const app = baseApp(silent, undefined, events)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, z.unknown())
    seen.push(event.data)
    return c.body(null, 202)
  })
  return { app, seen }
}

function binary(type: string, data: unknown, ext: Record<string, string> = {}) {
  const m = HTTP.binary(new CloudEvent({ type, source: 'test', datacontenttype: 'application/json', data: data as object, ...ext }))
  return { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string }
}

function structured(type: string, data: unknown, ext: Record<string, string> = {}) {
  const m = HTTP.structured(new CloudEvent({ type, source: 'test', datacontenttype: 'application/json', data: data as object, ...ext }))
  return { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string }
}

describe('the event guard of the internal functions', () => {
  it('passes an event a Trigger sends, binary or structured, with its body intact for the handler', async () => {
    const { app, seen } = appWith(EVENTS)
    expect((await app.request('/', binary(RESOURCE_UPDATE, { a: 1 }, { kineticsource: 'workflows' }))).status).toBe(202)
    expect((await app.request('/', structured(PING, { reason: 'resync' }, { kineticsource: 'resync' }))).status).toBe(202)
    expect((await app.request('/', binary(RESOURCE_UPDATE, { a: 1 }, { kineticsource: 'resources', kind: 'Job' }))).status).toBe(202)
    expect((await app.request('/', structured(RESOURCE_UPDATE, { a: 1 }, { kineticsource: 'resources', kind: 'Job' }))).status).toBe(202)
    expect(seen).toEqual([{ a: 1 }, { reason: 'resync' }, { a: 1 }, { a: 1 }])
  })

  it.each([
    ['another type', binary('dev.knative.apiserver.resource.delete', {}, { kineticsource: 'workflows' })],
    ['a type of another of its sources', binary(PING, {}, { kineticsource: 'workflows' })],
    ['another kineticsource', binary(RESOURCE_UPDATE, {}, { kineticsource: 'jobs' })],
    ['no kineticsource', binary(RESOURCE_UPDATE, {})],
    ['another kind of the ApiServerSource', binary(RESOURCE_UPDATE, {}, { kineticsource: 'resources', kind: 'Deployment' })],
    ['no kind from the ApiServerSource', binary(RESOURCE_UPDATE, {}, { kineticsource: 'resources' })],
    ['a structured event of another kind', structured(RESOURCE_UPDATE, {}, { kineticsource: 'resources', kind: 'Workflow' })],
    ['one of Kinetic\'s own events', binary('dev.kinetic.workflow.run.started', {})],
    ['a structured event of another type', structured('com.example.anything', {}, { kineticsource: 'resync' })],
  ])('refuses %s with 400 before the handler runs', async (_, request) => {
    const { app, seen } = appWith(EVENTS)
    const res = await app.request('/', request)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toContain('No Trigger sends this function')
    expect(seen).toEqual([])
  })

  it('refuses a body over the limit with 413: at once when Content-Length says so, or once the stream passes it', async () => {
    const { app, seen } = appWith(EVENTS)
    const big = binary(RESOURCE_UPDATE, { blob: 'x'.repeat(MAX_EVENT_BYTES) }, { kineticsource: 'workflows' })
    expect((await app.request('/', big)).status).toBe(413)
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({ pull(controller) { pulled++; controller.enqueue(new Uint8Array(256 * 1024)) } })
    const streamed = await app.request('/', { method: 'POST', body, headers: binary(RESOURCE_UPDATE, {}, { kineticsource: 'workflows' }).headers, duplex: 'half' } as RequestInit)
    expect(streamed.status).toBe(413)
    expect(pulled).toBeLessThan(MAX_EVENT_BYTES / (256 * 1024) + 3)
    expect(seen).toEqual([])
  })

  it('a function without a list (dead-letter, the sink of whatever failed) takes any type, but not any size', async () => {
    const { app, seen } = appWith()
    expect((await app.request('/', binary('com.example.anything', { a: 1 }))).status).toBe(202)
    expect((await app.request('/', binary('com.example.anything', { blob: 'x'.repeat(MAX_EVENT_BYTES) }))).status).toBe(413)
    expect(seen).toEqual([{ a: 1 }])
  })
})
