// Process entry point for the dead-letter Service: real logger, HTTP server on $PORT.
import { serve } from '@hono/node-server'
import { createLogger } from '../../shared/log.js'
import { createApp } from './index.js'

const log = createLogger('dead-letter')
const port = Number(process.env.PORT ?? 8080)
const server = serve({ fetch: createApp({ log }).fetch, port }, (info) => {
  log.info({ port: info.port }, 'Listening')
})
// Knative sends SIGTERM before removing a pod; finish in-flight requests first.
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
})
