import { Hono } from 'hono'
import { statusFor } from '../errors.js'
import type { Logger } from '../log.js'
import { guardEvents, type AcceptedEvents } from './event-guard.js'
import { FunctionMetrics } from './metrics.js'

/**
 * The Hono app every function starts from: health routes and the one place where an error
 * becomes a status code (400 / 409 / 503 / 500, see the error table in README).
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
  app.use('/', async (c, next) => {
    if (c.req.method !== 'POST') return next()
    const start = performance.now()
    await next()
    metrics.observe(c.req.header('ce-type') ?? 'unknown', c.res.status, (performance.now() - start) / 1000)
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
