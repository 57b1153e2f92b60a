import { parseTraceparent, runSpanId, runTraceId, stepSpanId } from './ids.js'
import { randomSpanId, randomTraceId, type SpanRecord } from './span.js'
import type { Work } from './work.js'

/** The CloudEvent attributes a function span names (binary mode headers). */
export interface HandledEvent {
  id?: string
  type?: string
  source?: string
  subject?: string
  time?: string
  traceparent?: string
}

/**
 * Pure: the span of one handled CloudEvent. Work that advanced a run joins that run's trace below
 * the step it advanced (the run's root when it started none), and the event's own `traceparent`
 * becomes a link; other work continues the event's trace, or starts one when the traceparent is
 * missing or malformed.
 */
export function functionSpan(fn: string, event: HandledEvent, status: number, work: Work, startMs: number, endMs: number): SpanRecord {
  const incoming = parseTraceparent(event.traceparent)
  const [first, ...others] = work.advanced
  const links: NonNullable<SpanRecord['links']> = others.map((a) => ({
    traceId: runTraceId(a.runId), spanId: a.jobName ? stepSpanId(a.jobName) : runSpanId(a.runId),
  }))
  let traceId: string
  let parentSpanId: string | undefined
  if (first) {
    traceId = runTraceId(first.runId)
    parentSpanId = first.jobName ? stepSpanId(first.jobName) : runSpanId(first.runId)
    if (incoming && incoming.traceId !== traceId) links.push({ traceId: incoming.traceId, spanId: incoming.spanId, attributes: { 'kinetic.link': 'cloudevent' } })
  } else if (incoming) {
    traceId = incoming.traceId
    parentSpanId = incoming.spanId
  } else {
    traceId = randomTraceId()
  }
  const eventMs = event.time ? Date.parse(event.time) : Number.NaN
  return {
    name: `${fn} ${event.type ?? 'event'}`,
    traceId, spanId: randomSpanId(), ...(parentSpanId ? { parentSpanId } : {}), kind: 'consumer', startMs, endMs,
    attributes: {
      'faas.name': fn,
      'faas.trigger': 'pubsub',
      'cloudevents.event_id': event.id,
      'cloudevents.event_type': event.type,
      'cloudevents.event_source': event.source,
      'cloudevents.event_subject': event.subject,
      'http.response.status_code': status,
      'kinetic.api_calls': work.apiCalls,
      'kinetic.runs.advanced': work.advanced.length,
      ...(Number.isNaN(eventMs) ? {} : { 'kinetic.event.lag_ms': Math.max(0, Math.round(startMs - eventMs)) }),
    },
    ...(links.length > 0 ? { links } : {}),
    ...(status >= 400 ? { error: `answered ${status}` } : {}),
  }
}
