import { afterEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { Broker, MAX_TTL, type DeliveryRecord } from '../../../local/knative/broker.js'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import type { DeliverySpec, Destination } from '../../../local/knative/delivery.js'
import type { Manifest, TriggerSpec } from '../../../local/knative/manifests.js'
import { captureLog, startSubscriber } from './subscriber.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => { while (closers.length > 0) await closers.pop()?.() })

async function subscriber(...args: Parameters<typeof startSubscriber>) {
  const s = await startSubscriber(...args)
  closers.push(s.close)
  return s
}

function trigger(name: string, service: string, spec: Partial<TriggerSpec> = {}): Manifest<TriggerSpec> {
  return {
    apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', file: `${name}.yaml`, raw: {},
    metadata: { name, namespace: 'kinetic-system' },
    spec: { broker: 'default', subscriber: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: service } }, ...spec },
  }
}

function anEvent(overrides: Partial<KEvent> = {}): KEvent {
  return {
    specversion: '1.0', id: 'evt-1', type: 'dev.knative.apiserver.resource.update', source: 'http://127.0.0.1:1',
    subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/wf', datacontenttype: 'application/json',
    extensions: { kind: 'Workflow', kineticsource: 'workflows' }, data: { hello: 'world' }, ...overrides,
  }
}

function brokerWith(triggers: Manifest<TriggerSpec>[], urls: Record<string, string>, logSink = captureLog()) {
  const resolve = (dest: Destination) => (dest.ref ? urls[dest.ref.name] ?? null : dest.uri ?? null)
  const broker = new Broker('default', 'kinetic-system', undefined, triggers, resolve, pino({ level: 'info' }, logSink))
  const records: DeliveryRecord[] = []
  broker.feed.on('delivery', (r) => records.push(r))
  closers.push(async () => broker.close())
  return { broker, records, logSink }
}

const fast: DeliverySpec = { retry: 3, backoffPolicy: 'exponential', backoffDelay: 'PT0.001S' }

describe('Broker delivery', () => {
  it('counts a delivery as in flight from its first attempt until its last, retries included', async () => {
    const sub = await subscriber((n) => ({ status: n === 0 ? 503 : 202 }))
    const { broker } = brokerWith([trigger('t', 'fn', { delivery: { retry: 1, backoffPolicy: 'linear', backoffDelay: 'PT0.3S' } })], { fn: sub.url })
    const done = broker.ingress(anEvent())
    while (sub.received.length === 0) await new Promise((r) => setTimeout(r, 5))
    expect(broker.stats.inFlight).toBe(1)
    expect(await done).toBe(202)
    expect(sub.received).toHaveLength(2)
    expect(broker.stats.inFlight).toBe(0)
  })

  it('delivers in binary mode with Prefer: reply, an arrival time and no broker TTL', async () => {
    const sub = await subscriber(() => ({ status: 202 }))
    const { broker, records } = brokerWith([trigger('t', 'fn')], { fn: sub.url })

    expect(await broker.ingress(anEvent())).toBe(202)

    const h = sub.received[0]?.headers ?? {}
    expect(h['ce-id']).toBe('evt-1')
    expect(h['ce-type']).toBe('dev.knative.apiserver.resource.update')
    expect(h['ce-subject']).toBe('/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/wf')
    expect(h['ce-kind']).toBe('Workflow')
    expect(h['content-type']).toBe('application/json')
    expect(h.prefer).toBe('reply')
    expect(Date.parse(h['ce-knativearrivaltime'] ?? '')).not.toBeNaN()
    expect(h['ce-knativebrokerttl']).toBeUndefined()
    expect(JSON.parse(sub.received[0]?.body ?? '')).toEqual({ hello: 'world' })
    expect(records).toMatchObject([{ trigger: 't', outcome: 'delivered', status: 202, attempts: 1 }])
  })

  it('only delivers to Triggers whose filter matches', async () => {
    const jobs = await subscriber(() => ({ status: 202 }))
    const wfs = await subscriber(() => ({ status: 202 }))
    const { broker } = brokerWith([
      trigger('jobs', 'jobs', { filters: [{ exact: { kineticsource: 'jobs' } }] }),
      trigger('wfs', 'wfs', { filter: { attributes: { kineticsource: 'workflows' } } }),
    ], { jobs: jobs.url, wfs: wfs.url })

    await broker.ingress(anEvent())

    expect(jobs.received).toHaveLength(0)
    expect(wfs.received).toHaveLength(1)
  })

  it('retries a failing subscriber with the same event id until it succeeds', async () => {
    const sub = await subscriber((n) => ({ status: n < 2 ? 503 : 202 }))
    const { broker, records } = brokerWith([trigger('t', 'fn', { delivery: fast })], { fn: sub.url })

    expect(await broker.ingress(anEvent())).toBe(202)

    expect(sub.received.map((r) => r.headers['ce-id'])).toEqual(['evt-1', 'evt-1', 'evt-1'])
    expect(records).toMatchObject([{ outcome: 'delivered', attempts: 3 }])
    expect(broker.stats.retried).toBe(2)
  })

  it.each([404, 408, 409, 429, 500, 502])('retries on %i', async (status) => {
    const sub = await subscriber((n) => ({ status: n === 0 ? status : 204 }))
    const { broker } = brokerWith([trigger('t', 'fn', { delivery: fast })], { fn: sub.url })
    await broker.ingress(anEvent())
    expect(sub.received).toHaveLength(2)
  })

  it('treats a 2xx with a body that is not a CloudEvent as a failure and retries it', async () => {
    const sub = await subscriber((n) => (n === 0 ? { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' } : { status: 202 }))
    const { broker, records } = brokerWith([trigger('t', 'fn', { delivery: fast })], { fn: sub.url })
    await broker.ingress(anEvent())
    expect(sub.received).toHaveLength(2)
    expect(records[0]?.attempts).toBe(2)
  })

  it('does not retry a 400 and sends the event to the dead-letter sink with the error extensions', async () => {
    const sub = await subscriber(() => ({ status: 400, body: 'bad data at spec.steps' }))
    const dls = await subscriber(() => ({ status: 202 }))
    const delivery = { ...fast, deadLetterSink: { ref: { kind: 'Service', name: 'dead-letter' } } }
    const { broker, records, logSink } = brokerWith([trigger('t', 'fn', { delivery })], { fn: sub.url, 'dead-letter': dls.url })

    expect(await broker.ingress(anEvent())).toBe(202)

    expect(sub.received).toHaveLength(1)
    const h = dls.received[0]?.headers ?? {}
    expect(h['ce-id']).toBe('evt-1')
    expect(h['ce-knativeerrorcode']).toBe('400')
    expect(h['ce-knativeerrordest']).toBe(sub.url)
    expect(Buffer.from(h['ce-knativeerrordata'] ?? '', 'base64').toString()).toBe('bad data at spec.steps')
    expect(records).toMatchObject([{ outcome: 'dead-lettered', status: 400, attempts: 1 }])
    expect(logSink.lines.find((l) => l.msg === 'Delivery failed, sent the event to the dead-letter sink')).toMatchObject({ ceId: 'evt-1', trigger: 't', subject: anEvent().subject })
  })

  it('truncates knativeerrordata to 1024 characters of the body', async () => {
    const sub = await subscriber(() => ({ status: 422, body: 'x'.repeat(5000) }))
    const dls = await subscriber(() => ({ status: 202 }))
    const { broker } = brokerWith([trigger('t', 'fn', { delivery: { deadLetterSink: { uri: dls.url } } })], { fn: sub.url })
    await broker.ingress(anEvent())
    expect(Buffer.from(dls.received[0]?.headers['ce-knativeerrordata'] ?? '', 'base64').toString()).toHaveLength(1024)
  })

  it('drops the event after the last attempt with a log line naming it, and the ingress answers 500', async () => {
    const sub = await subscriber(() => ({ status: 503 }))
    const { broker, records, logSink } = brokerWith([trigger('t', 'fn', { delivery: { retry: 2, backoffPolicy: 'linear', backoffDelay: 'PT0.001S' } })], { fn: sub.url })

    expect(await broker.ingress(anEvent())).toBe(500)

    expect(sub.received).toHaveLength(3)
    expect(records).toMatchObject([{ outcome: 'dropped', status: 503, attempts: 3 }])
    expect(logSink.lines.find((l) => l.msg === 'Dropped event after the last delivery attempt')).toMatchObject({
      ceId: 'evt-1', ceType: 'dev.knative.apiserver.resource.update', subject: anEvent().subject, trigger: 't', attempts: 3,
    })
  })

  it('counts a subscriber that is not running as a network failure and drops the event loudly', async () => {
    const { broker, records, logSink } = brokerWith([trigger('t', 'missing')], {})
    expect(await broker.ingress(anEvent())).toBe(500)
    expect(records[0]).toMatchObject({ outcome: 'dropped', status: 0 })
    expect(logSink.lines.some((l) => l.msg === 'Dropped event after the last delivery attempt' && l.ceId === 'evt-1')).toBe(true)
  })

  it('feeds a CloudEvent reply back into the Broker, where another Trigger picks it up', async () => {
    const replier = await subscriber(() => ({
      status: 200,
      headers: { 'ce-specversion': '1.0', 'ce-id': 'reply-1', 'ce-type': 'dev.kinetic.test.reply', 'ce-source': '/fn', 'content-type': 'application/json' },
      body: '{"n":1}',
    }))
    const display = await subscriber(() => ({ status: 202 }))
    const { broker } = brokerWith([
      trigger('first', 'replier', { filters: [{ exact: { kineticsource: 'workflows' } }] }),
      trigger('display', 'display', { filters: [{ exact: { type: 'dev.kinetic.test.reply' } }] }),
    ], { replier: replier.url, display: display.url })

    await broker.ingress(anEvent())

    expect(display.received).toHaveLength(1)
    expect(display.received[0]?.headers['ce-id']).toBe('reply-1')
    expect(JSON.parse(display.received[0]?.body ?? '')).toEqual({ n: 1 })
    expect(broker.stats.replies).toBe(1)
  })

  it('stops a reply loop when the broker TTL runs out, with a log line', async () => {
    let n = 0
    const looper = await subscriber(() => ({
      status: 200,
      headers: { 'ce-specversion': '1.0', 'ce-id': `loop-${n++}`, 'ce-type': 'dev.kinetic.test.loop', 'ce-source': '/fn' },
    }))
    const { broker, logSink } = brokerWith([trigger('loop', 'looper', { filters: [{ exact: { type: 'dev.kinetic.test.loop' } }] })], { looper: looper.url })

    await broker.ingress(anEvent({ type: 'dev.kinetic.test.loop' }))

    expect(looper.received).toHaveLength(MAX_TTL)
    expect(broker.stats.ttlExhausted).toBe(1)
    expect(logSink.lines.some((l) => l.msg === 'Dropped event: broker TTL exhausted (a reply loop?)')).toBe(true)
  }, 60_000)
})

describe('Broker fault hook', () => {
  it('loses, duplicates or delivers each delivery as the hook decides, per Trigger', async () => {
    const a = await subscriber(() => ({ status: 202 }))
    const b = await subscriber(() => ({ status: 202 }))
    const { broker, records } = brokerWith([trigger('lossy', 'a'), trigger('twice', 'b')], { a: a.url, b: b.url })
    broker.fault = ({ trigger: t }) => (t === 'lossy' ? 'lose' : 'duplicate')

    expect(await broker.ingress(anEvent({ id: 'e1' }))).toBe(202)

    expect(a.received).toHaveLength(0)
    expect(b.received.map((r) => r.headers['ce-id'])).toEqual(['e1', 'e1'])
    expect(records.filter((r) => r.trigger === 'lossy').map((r) => r.outcome)).toEqual(['lost'])
    expect(records.filter((r) => r.trigger === 'twice').map((r) => r.outcome)).toEqual(['delivered', 'delivered'])
    expect(broker.stats).toMatchObject({ faultLost: 1, faultDuplicated: 1, delivered: 2 })

    broker.fault = undefined
    await broker.ingress(anEvent({ id: 'e2' }))
    expect(a.received.map((r) => r.headers['ce-id'])).toEqual(['e2'])
    expect(b.received).toHaveLength(3)
  })
})
