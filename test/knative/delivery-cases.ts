// How a Broker delivers, as one scenario both the real Knative Broker (test/knative/real/delivery.ts)
// and the emulated one (test/knative/delivery-emulation.test.ts) are put through: Triggers of every
// filter dialect and of several delivery specs, subscribed to test/fixtures/event-recorder.mjs,
// and a fixed list of events sent to the Broker's ingress one after the other. What the recorder
// saw is summarised (which Trigger got which event, attempts per status, the ingress's answers,
// dead-letter attributes, replies, timeouts, and the attributes a PingSource's and the
// ApiServerSource's events carry) and both are held to OBSERVED_ON_KNATIVE, what Knative 1.23's
// MT channel-based Broker with the in-memory channel did in the Knative tier. Where the emulation
// and Knative differed, the emulation was changed: the real one wins.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { buildEvent } from '../../local/knative/apiserver-source.js'
import { Broker } from '../../local/knative/broker.js'
import type { KEvent } from '../../local/knative/cloud-event.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import type { Manifest, PingSourceSpec, TriggerSpec } from '../../local/knative/manifests.js'
import { pingEvent } from '../../local/knative/ping-source.js'
import { freePort } from '../../local/free-port.js'
import { eventually } from '../support/eventually.js'

export const NS = 'delivery-conformance'
export const RECORDER_SCRIPT = join(import.meta.dirname, '..', 'fixtures', 'event-recorder.mjs')
/** The recorder's Service as a Trigger names it. */
export const RECORDER_URL = `http://recorder.${NS}.svc.cluster.local`
const T = 'dev.kinetic.conformance'

/** Per path, the statuses the recorder answers an event's attempts with (the last repeats). */
export const PLAN: Record<string, Array<number | string>> = {
  '/retry-503': [503, 503, 202],
  '/retry-500': [500, 202],
  '/retry-404': [404, 202],
  '/retry-429': [429, 202],
  '/no-retry-400': [400],
  '/no-retry-401': [401],
  '/dead': [503],
  '/timeout': ['sleep:2500', 202],
}

const fast = { retry: 3, backoffPolicy: 'linear', backoffDelay: 'PT0.2S' } as const
const byCase = (c: string) => ({ filters: [{ exact: { kineticcase: c } }] })

/** The Triggers, by name: their filter and delivery; each subscribes to RECORDER_URL/<name>. */
export const TRIGGERS: Record<string, Omit<TriggerSpec, 'subscriber' | 'broker'>> = {
  'exact-a': { filters: [{ exact: { type: `${T}.a` } }] },
  'prefix': { filters: [{ prefix: { type: `${T}.` } }] },
  'suffix-b': { filters: [{ suffix: { type: '.b' } }] },
  'not-a': { filters: [{ not: { exact: { type: `${T}.a` } } }] },
  'any': { filters: [{ any: [{ exact: { type: `${T}.a` } }, { exact: { subject: 'two' } }] }] },
  'all': { filters: [{ all: [{ prefix: { type: `${T}.` } }, { exact: { kineticprobe: 'yes' } }] }] },
  'two-in-one-exact': { filters: [{ exact: { type: `${T}.b`, kineticprobe: 'yes' } }] },
  'empty-exact': { filters: [{ exact: { kineticprobe: '' } }] },
  'legacy': { filter: { attributes: { type: `${T}.b` } } },
  'legacy-empty': { filter: { attributes: { kineticprobe: '' } } },
  'reply': { filters: [{ exact: { type: `${T}.reply-me` } }] },
  'retry-503': { ...byCase('retry-503'), delivery: fast },
  'retry-500': { ...byCase('retry-500'), delivery: fast },
  'retry-404': { ...byCase('retry-404'), delivery: fast },
  'retry-429': { ...byCase('retry-429'), delivery: fast },
  'no-retry-400': { ...byCase('no-retry-400'), delivery: fast },
  'no-retry-401': { ...byCase('no-retry-401'), delivery: fast },
  'dead': { ...byCase('dead'), delivery: { retry: 1, backoffPolicy: 'linear', backoffDelay: 'PT0.2S', deadLetterSink: { uri: `${RECORDER_URL}/dls` } } },
  'timeout': { ...byCase('timeout'), delivery: { retry: 1, backoffPolicy: 'linear', backoffDelay: 'PT0.2S', timeout: 'PT1S' } },
  'ping': { filters: [{ exact: { type: 'dev.knative.sources.ping' } }] },
}

/** A PingSource of NS sending to its Broker every minute. */
export const PING_SOURCE = {
  apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name: 'probe-ping', namespace: NS },
  spec: {
    schedule: '* * * * *', contentType: 'application/json', data: '{"probe":"ping"}',
    ceOverrides: { extensions: { kineticprobe: 'ping' } },
    sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default', namespace: NS } },
  },
}

/** The object whose event Kinetic's ApiServerSource (`resources` of kinetic-system) sends: a MemoryProvider of NS. */
export const PROBE_OBJECT: KubeObject = { apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider', metadata: { name: 'probe', namespace: NS }, spec: { type: 'builtin' } }
/** The Trigger on kinetic-system's Broker that sends the ApiServerSource's events about NS to the recorder. */
export const APISERVER_TRIGGER = {
  apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', metadata: { name: 'delivery-conformance-apiserver', namespace: 'kinetic-system' },
  spec: { broker: 'default', filters: [{ exact: { kineticsource: 'resources', namespace: NS } }], subscriber: { uri: `${RECORDER_URL}/apiserver` } },
}

/** One event as sent to the ingress: its context attributes and extensions. */
export interface SentEvent { id: string; type: string; subject?: string; extensions: Record<string, string> }

/** The events, sent in this order, each after the ingress answered the one before. */
export const EVENTS: SentEvent[] = [
  { id: 'e1', type: `${T}.a`, subject: 'one', extensions: { kineticprobe: 'yes' } },
  { id: 'e2', type: `${T}.b`, subject: 'two', extensions: { kineticprobe: 'yes' } },
  { id: 'e3', type: `${T}.c`, subject: 'three', extensions: {} },
  { id: 'e4', type: `${T}.b`, extensions: { kineticprobe: '' } },
  { id: 'r1', type: `${T}.reply-me`, extensions: {} },
  ...Object.keys(PLAN).map((c) => ({ id: `f-${c.slice(1)}`, type: `${T}.case`, extensions: { kineticcase: c.slice(1) } })),
]

export const SOURCE = '/delivery-conformance'

/** Every Trigger as a Knative object in NS, on the Broker `default`. */
export function triggerObjects(): Array<{ apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: TriggerSpec }> {
  // The ApiServerSource's Trigger lives on kinetic-system's Broker: see APISERVER_TRIGGER.
  return Object.entries(TRIGGERS).map(([name, spec]) => ({
    apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', metadata: { name, namespace: NS },
    spec: { broker: 'default', ...spec, subscriber: { uri: `${RECORDER_URL}/${name}` } },
  }))
}

/** The binary-mode headers of a sent event. */
export function eventHeaders(e: SentEvent): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': e.id, 'ce-type': e.type, 'ce-source': SOURCE }
  if (e.subject !== undefined) h['ce-subject'] = e.subject
  for (const [k, v] of Object.entries(e.extensions)) h[`ce-${k}`] = v
  return h
}
export const EVENT_BODY = '{"probe":true}'

/** One attempt as the recorder logged it. */
export interface Attempt { path: string; id: string; attempt: number; status: number | string; attributes: Record<string, string>; contentType: string; body: string }

/** What a Broker did with EVENTS, in a form both Brokers can be compared by. */
export interface DeliverySummary {
  /** The ingress's answer per event id. */
  ingress: Record<string, number>
  /** Per Trigger, the ids it received (first attempts), in arrival order. */
  received: Record<string, string[]>
  /** `<trigger> <id>: <status>, <status>, ...` for every event a Trigger got more than once or refused. */
  attempts: string[]
  /** What the dead-letter sink got: id and the error extensions (knativeerrordata decoded). */
  deadLetters: Array<{ id: string; code?: string; data?: string; dest?: string }>
  /** The attribute names a subscriber sees on an event sent without time (e1 at exact-a), sorted. */
  attributeNames: string[]
  /** The attributes that are the same on every run: of e1 at exact-a, without the volatile ones. */
  attributes: Record<string, string>
  /** Content type and body as delivered (e1 at exact-a). */
  payload: { contentType: string; body: string }
  /** A PingSource's event as a subscriber sees it (first at /ping). */
  ping: SourceEvent
  /** The ApiServerSource's event for PROBE_OBJECT as a subscriber sees it (first at /apiserver). */
  apiserver: SourceEvent
}

/** A source's event at the subscriber: attribute names, the stable attributes, content type, body (an object's identity only). */
export interface SourceEvent { attributeNames: string[]; attributes: Record<string, string>; contentType: string; body: string }

const VOLATILE = new Set(['knativearrivaltime', 'traceparent', 'time', 'knativeerrordest'])
/** Differ per run or per cluster: ids, times, and the API server's address (the ApiServerSource's `source`). */
const SOURCE_VOLATILE = new Set([...VOLATILE, 'id', 'source'])

function sourceEvent(a: Attempt | undefined, identityOnly: boolean): SourceEvent {
  const attrs = a?.attributes ?? {}
  let body = a?.body ?? ''
  if (identityOnly && body) {
    const o = JSON.parse(body) as KubeObject
    body = JSON.stringify({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata?.name, namespace: o.metadata?.namespace })
  }
  return {
    attributeNames: Object.keys(attrs).sort(),
    attributes: Object.fromEntries(Object.entries(attrs).filter(([k]) => !SOURCE_VOLATILE.has(k)).sort(([x], [y]) => x.localeCompare(y))),
    contentType: a?.contentType ?? '', body,
  }
}

/** Pure: the summary of a recorder log and the ingress answers. */
export function summarise(log: Attempt[], ingress: Record<string, number>): DeliverySummary {
  const received: Record<string, string[]> = {}
  const byKey = new Map<string, Array<number | string>>()
  for (const a of log) {
    // The sources' events have sections of their own (a PingSource fires every minute, with new ids).
    if (a.path === '/ping' || a.path === '/apiserver' || a.attributes.type === 'dev.knative.sources.ping') continue
    const trigger = a.path.slice(1)
    if (a.attempt === 1) (received[trigger] ??= []).push(a.id)
    const key = `${trigger} ${a.id}`
    byKey.set(key, [...(byKey.get(key) ?? []), a.status])
  }
  const attempts = [...byKey].filter(([, s]) => s.length > 1 || s.some((x) => typeof x === 'string' || x >= 300)).map(([k, s]) => `${k}: ${s.join(', ')}`).sort()
  const deadLetters = log.filter((a) => a.path === '/dls').map((a) => ({
    id: a.id,
    ...(a.attributes.knativeerrorcode !== undefined ? { code: a.attributes.knativeerrorcode } : {}),
    ...(a.attributes.knativeerrordata !== undefined ? { data: Buffer.from(a.attributes.knativeerrordata, 'base64').toString('utf8') } : {}),
    ...(a.attributes.knativeerrordest !== undefined ? { dest: a.attributes.knativeerrordest.replace(/^https?:\/\/[^/]+/, '') } : {}),
  }))
  const e1 = log.find((a) => a.path === '/exact-a' && a.id === 'e1')
  const attributes = Object.fromEntries(Object.entries(e1?.attributes ?? {}).filter(([k]) => !VOLATILE.has(k)).sort(([a], [b]) => a.localeCompare(b)))
  for (const k of Object.keys(received)) received[k]!.sort((a, b) => order(a) - order(b))
  return {
    ingress, received: Object.fromEntries(Object.entries(received).sort(([a], [b]) => a.localeCompare(b))), attempts, deadLetters,
    attributeNames: Object.keys(e1?.attributes ?? {}).sort(), attributes, payload: { contentType: e1?.contentType ?? '', body: e1?.body ?? '' },
    ping: sourceEvent(log.find((a) => a.path === '/ping'), false),
    apiserver: sourceEvent(log.find((a) => a.path === '/apiserver'), true),
  }
}
const order = (id: string) => { const i = EVENTS.findIndex((e) => e.id === id); return i < 0 ? EVENTS.length : i }

/** The verb of the ApiServerSource's event in a summary (`dev.knative.apiserver.resource.<verb>`). */
export function apiserverVerb(s: DeliverySummary): 'add' | 'update' {
  return s.apiserver.attributes.type?.endsWith('.update') ? 'update' : 'add'
}

/** Starts the recorder on 127.0.0.1; resolves with its base URL and a stop function. */
export async function startLocalRecorder(): Promise<{ url: string; log: () => Promise<Attempt[]>; stop: () => void }> {
  const port = await freePort()
  const child = spawn(process.execPath, [RECORDER_SCRIPT], { env: { ...process.env, PORT: String(port), PLAN: JSON.stringify(PLAN) }, stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  const log = async () => (await (await fetch(`${url}/log`)).json()) as Attempt[]
  await eventually('the local event recorder', async () => (await log().catch(() => undefined)) !== undefined, 10_000, 100)
  return { url, log, stop: () => child.kill() }
}

/**
 * EVENTS through the emulated Broker (local/knative/broker.ts) to a local recorder, then one
 * event of the emulated PingSource and one of the emulated ApiServerSource (for PROBE_OBJECT,
 * with the verb real Knative's event had): the summary.
 */
export async function runEmulated(apiserverVerb: 'add' | 'update'): Promise<DeliverySummary> {
  const recorder = await startLocalRecorder()
  const quiet = { info() {}, warn() {}, error() {}, debug() {} }
  try {
    const manifests = triggerObjects().map((t) => ({ ...t, file: 'delivery-cases', raw: t as unknown as Record<string, unknown> })) as Manifest<TriggerSpec>[]
    const broker = new Broker('default', NS, undefined, manifests, (dest) => dest.uri?.replace(RECORDER_URL, recorder.url) ?? null, quiet as never)
    const ingress: Record<string, number> = {}
    for (const e of EVENTS) {
      const event: KEvent = { specversion: '1.0', id: e.id, type: e.type, source: SOURCE, ...(e.subject !== undefined ? { subject: e.subject } : {}), datacontenttype: 'application/json', extensions: { ...e.extensions }, data: JSON.parse(EVENT_BODY) }
      ingress[e.id] = await broker.ingress(event)
    }
    await broker.ingress(pingEvent({ ...PING_SOURCE, file: 'delivery-cases', raw: PING_SOURCE } as unknown as Manifest<PingSourceSpec>, new Date()))
    broker.close()
    const system = new Broker('default', 'kinetic-system', undefined, [{ ...APISERVER_TRIGGER, file: 'delivery-cases', raw: APISERVER_TRIGGER }] as unknown as Manifest<TriggerSpec>[],
      (dest) => dest.uri?.replace(RECORDER_URL, recorder.url) ?? null, quiet as never)
    await system.ingress(buildEvent('https://10.96.0.1:443', 'Resource', apiserverVerb, PROBE_OBJECT, { kineticsource: 'resources' }))
    system.close()
    return summarise(await recorder.log(), ingress)
  } finally {
    recorder.stop()
  }
}
