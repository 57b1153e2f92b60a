import { randomBytes } from 'node:crypto'

/** Attribute values a span carries (OpenTelemetry's primitive values and their arrays). */
export type AttributeValue = string | number | boolean | string[] | number[]

/** Attributes by name; undefined values are left out. */
export type Attributes = Record<string, AttributeValue | undefined>

/** One finished span as plain data: what the exporter sends, built before the SDK is loaded. */
export interface SpanRecord {
  name: string
  traceId: string
  spanId: string
  /** None for a trace's root. */
  parentSpanId?: string
  kind: 'internal' | 'server' | 'client' | 'consumer' | 'producer'
  /** Epoch milliseconds (fractions allowed). */
  startMs: number
  endMs: number
  attributes: Attributes
  events?: Array<{ name: string; atMs: number; attributes?: Attributes }>
  links?: Array<{ traceId: string; spanId: string; attributes?: Attributes }>
  /** An error status with its message; unset is OpenTelemetry's UNSET. */
  error?: string
}

/** A random 16-hex span id, for spans that happen once (a model call, a handled event). */
export function randomSpanId(): string {
  return randomBytes(8).toString('hex')
}

/** A random 32-hex trace id, for work that belongs to no run. */
export function randomTraceId(): string {
  return randomBytes(16).toString('hex')
}

/** Epoch milliseconds of an RFC 3339 time, or undefined. */
export function msOf(time: string | undefined): number | undefined {
  if (time === undefined) return undefined
  const ms = Date.parse(time)
  return Number.isNaN(ms) ? undefined : ms
}

/** What the OTLP side (otlp.ts, loaded lazily by exporter.ts) offers the span sink. */
export interface SpanShipper {
  /** Sends spans; resolves to how many were lost (0 on success) and why. */
  ship(spans: readonly SpanRecord[]): Promise<{ lost: number; error?: string }>
}
