import { serve } from '@hono/node-server'
import type { Hono } from 'hono'
import type { Logger } from '../log.js'

/**
 * Serves a function's app on `$PORT` (8080 by default, as Knative injects it) and closes
 * in-flight requests before exiting on SIGTERM/SIGINT. The only place a function listens.
 */
export function serveFunction(app: Hono, log: Logger, env: Record<string, string | undefined> = process.env): void {
  const port = Number(env.PORT ?? 8080)
  const server = serve({ fetch: app.fetch, port, hostname: env.HOST ?? '0.0.0.0' }, (info) => {
    log.info({ port: info.port }, 'Listening')
  })
  const stop = () => server.close(() => process.exit(0))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
