import { Hono } from 'hono'
import { statusFor } from '../core/errors.js'
import type { Logger } from '../log.js'
import { guardEvents, type AcceptedEvents } from './event-guard.js'
import { FunctionMetrics } from './metrics.js'
import { spanSink } from '../telemetry/exporter.js'
import { functionSpan } from '../telemetry/function-span.js'
import { parseTraceparent } from '../telemetry/ids.js'
import { dashboardMetrics } from '../telemetry/metrics.js'
import { withWork, type Work } from '../telemetry/work.js'

/**
 * The Hono app every function starts from: health routes and the one place where an error
 * becomes a status code (400 / 409 / 413 / 503 / 500, see docs/architecture/errors.md).
 */
/** Readiness answers name the process that gives them. */
export const PID_HEADER = 'x-kinetic-pid'

/**
 * `events`: what the function's Triggers deliver; any other CloudEvent posted to `/` is refused
 * with 400 (see event-guard.ts). Every `POST /` body is limited to MAX_EVENT_BYTES (413).
 */
export function baseApp(log: Logger, ready: () => boolean = () => true, events?: readonly AcceptedEvents[]): Hono {
  const app = new Hono()
  if (events) acceptedByApp.set(app, events)
  const metrics = new FunctionMetrics(String(log.bindings().function ?? 'function'))
  // The pid lets a local plane tell its own function from another process on the same port.
  app.get('/health/readiness', (c) => c.body(null, ready() ? 204 : 503, { [PID_HEADER]: String(process.pid) }))
  app.get('/health/liveness', (c) => c.body(null, 204))
  app.get('/healthz', (c) => c.body(null, 204))
  app.get('/metrics', (c) => c.text(metrics.render(), 200, { 'content-type': 'text/plain; version=0.0.4' }))
  const fn = String(log.bindings().function ?? 'function')
  const sink = spanSink()
  app.use('/', async (c, next) => {
    if (c.req.method !== 'POST') return next()
    const start = performance.now()
    const startMs = Date.now()
    const type = c.req.header('ce-type') ?? 'unknown'
    const time = c.req.header('ce-time')
    const sent = time ? Date.parse(time) : Number.NaN
    if (!Number.isNaN(sent)) dashboardMetrics.eventLag.observe({ type }, Math.max(0, startMs - sent) / 1000)
    // With tracing off nothing more is done per event: no work record, no span.
    // The CloudEvents extension first; Knative's Broker carries its own spans' context in the HTTP header.
    const traceparent = [c.req.header('ce-traceparent'), c.req.header('traceparent')].find((t) => parseTraceparent(t) !== null)
    const work: Work | undefined = sink.enabled ? { advanced: [], apiCalls: 0, ...(traceparent ? { traceparent } : {}) } : undefined
    if (work) await withWork(work, next)
    else await next()
    const status = c.res.status
    metrics.observe(type, status, (performance.now() - start) / 1000)
    if (status === 409 || status === 429 || status >= 500) dashboardMetrics.redeliveries.add({ type, status: String(status) })
    if (work) {
      const event = {
        id: c.req.header('ce-id'), type, source: c.req.header('ce-source'), subject: c.req.header('ce-subject'),
        time, ...(traceparent ? { traceparent } : {}),
      }
      // Batched by the sink (200 ms) and sent on SIGTERM (serve.ts), never in the request's path.
      sink.record(functionSpan(fn, event, status, work, startMs, Date.now()))
    }
  })
  app.use('/', guardEvents(events))
  app.onError((err, c) => {
    const status = statusFor(err)
    // Name the event, so a redelivery or a dead-lettered event can be traced to this line.
    const fields = {
      ceId: c.req.header('ce-id'), ceType: c.req.header('ce-type'), ceSubject: c.req.header('ce-subject'),
      error: err.name, reason: err.message, cause: causeMessage(err), status,
    }
    if (status === 500) log.error(fields, 'Handler failed unexpectedly')
    else log.warn(fields, 'Handler asked for redelivery or rejected the event')
    return c.json({ error: err.name, message: err.message }, status)
  })
  return app
}

const acceptedByApp = new WeakMap<Hono, readonly AcceptedEvents[]>()

/** What an app's Triggers deliver (its `events`), for callers that stand in for the Broker (the local plane's tests). */
export function acceptedEventsOf(app: Hono): readonly AcceptedEvents[] | undefined {
  return acceptedByApp.get(app)
}

function causeMessage(err: Error): string | undefined {
  const cause = err.cause
  if (cause instanceof Error) return cause.message
  return cause === undefined ? undefined : String(cause)
}
