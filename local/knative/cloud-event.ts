import { HTTP, type CloudEvent } from 'cloudevents'

/** Extension attribute values as CloudEvents allows them on the wire here. */
export type ExtensionValue = string | number | boolean

/** A CloudEvent as the emulated plumbing carries it: context attributes, extensions, data. */
export interface KEvent {
  specversion: '1.0'
  id: string
  type: string
  source: string
  subject?: string
  time?: string
  datacontenttype?: string
  dataschema?: string
  extensions: Record<string, ExtensionValue>
  /** A JSON value (sent as JSON), a string (sent as is) or bytes; undefined means no body. */
  data?: unknown
}

const CONTEXT = ['specversion', 'id', 'type', 'source', 'subject', 'time', 'datacontenttype', 'dataschema'] as const

/** The string form of a context attribute or extension (what Trigger filters compare), or undefined. */
export function attributeOf(event: KEvent, name: string): string | undefined {
  if ((CONTEXT as readonly string[]).includes(name)) {
    const v = event[name as (typeof CONTEXT)[number]]
    return v === undefined ? undefined : String(v)
  }
  if (name === 'schemaurl') return event.dataschema
  if (name === 'datamediatype') return event.datacontenttype?.split(';')[0]?.trim()
  const ext = event.extensions[name]
  return ext === undefined ? undefined : String(ext)
}

/** Every attribute of the event as strings, extensions included. */
export function attributesOf(event: KEvent): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of CONTEXT) {
    const v = event[name]
    if (v !== undefined) out[name] = String(v)
  }
  for (const [k, v] of Object.entries(event.extensions)) out[k] = String(v)
  return out
}

/** Binary content mode: `ce-*` headers plus the data as the body (Knative's default towards subscribers). */
export function toBinary(event: KEvent): { headers: Record<string, string>; body: string | Uint8Array | undefined } {
  const headers: Record<string, string> = {}
  for (const name of CONTEXT) {
    if (name === 'datacontenttype') continue
    const v = event[name]
    if (v !== undefined) headers[`ce-${name}`] = String(v)
  }
  for (const [k, v] of Object.entries(event.extensions)) headers[`ce-${k}`] = String(v)
  if (event.datacontenttype) headers['content-type'] = event.datacontenttype
  let body: string | Uint8Array | undefined
  if (event.data === undefined || event.data === null) body = undefined
  else if (typeof event.data === 'string' || event.data instanceof Uint8Array) body = event.data
  else body = JSON.stringify(event.data)
  return { headers, body }
}

/**
 * Decodes an HTTP message (binary or structured) into a validated event. Throws when the
 * message is not a CloudEvent or fails validation.
 */
export function fromHttp(headers: Record<string, string>, body: string): KEvent {
  const lower: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v
  const parsed = HTTP.toEvent({ headers: lower, body })
  if (Array.isArray(parsed)) throw new Error('Batched CloudEvents are not supported')
  const ce = parsed as CloudEvent<unknown>
  ce.validate()
  const raw = ce.toJSON() as Record<string, unknown>
  const extensions: Record<string, ExtensionValue> = {}
  for (const [k, v] of Object.entries(raw)) {
    if ((CONTEXT as readonly string[]).includes(k) || k === 'data' || k === 'data_base64') continue
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') extensions[k] = v
    else if (v !== undefined && v !== null) extensions[k] = String(v)
  }
  const event: KEvent = { specversion: '1.0', id: ce.id, type: ce.type, source: ce.source, extensions }
  if (ce.subject) event.subject = ce.subject
  if (ce.time) event.time = String(ce.time)
  if (ce.datacontenttype) event.datacontenttype = ce.datacontenttype
  if (ce.dataschema) event.dataschema = ce.dataschema
  if (ce.data !== undefined) event.data = ce.data
  else if (typeof raw.data_base64 === 'string') event.data = Buffer.from(raw.data_base64, 'base64')
  return event
}

/** True when an HTTP response carries a CloudEvent (binary `ce-specversion` or structured content type). */
export function looksLikeCloudEvent(headers: Record<string, string>): boolean {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  return 'ce-specversion' in lower || (lower['content-type'] ?? '').startsWith('application/cloudevents')
}
