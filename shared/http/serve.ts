import { serve } from '@hono/node-server'
import type { Hono } from 'hono'
import type { Logger } from '../log.js'
import { spanSink } from '../telemetry/exporter.js'

/**
 * Serves a function's app on `$PORT` (8080 by default, as Knative injects it) and closes
 * in-flight requests before exiting on SIGTERM/SIGINT. The only place a function listens.
 */
export function serveFunction(app: Hono, log: Logger, env: Record<string, string | undefined> = process.env): void {
  const port = Number(env.PORT ?? 8080)
  const server = serve({ fetch: app.fetch, port, hostname: env.HOST ?? '0.0.0.0' }, (info) => {
    log.info({ port: info.port }, 'Listening')
  })
  // Spans still queued get a second to leave; an unreachable collector never holds the exit longer.
  const stop = () => server.close(() => void spanSink().flush(1000).finally(() => process.exit(0)))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
