// Handles: any CloudEvent whose delivery finally failed, with Knative's knativeerror* extensions.
// Trigger: none; every file in knative/triggers/ names this Service as its deadLetterSink.
// Writes: one JSON log line per event and nothing to the Kubernetes API.
import type { Hono } from 'hono'
import { z } from 'zod'
import { BadEventError } from '../../shared/core/errors.js'
import { baseApp } from '../../shared/http/app.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import type { Logger } from '../../shared/log.js'
import { dashboardMetrics } from '../../shared/telemetry/metrics.js'
import { deadLetterRecord } from './record.js'

/** What the dead-letter app needs from its process. */
export interface Deps {
  log: Logger
}

/**
 * The dead-letter sink: logs each event as one error line and answers 202; a request that is
 * not a CloudEvent is logged with its ce-* headers and answered 400.
 */
export function createApp(deps: Deps): Hono {
  const app = baseApp(deps.log)
  app.post('/', async (c) => {
    try {
      const event = await readCloudEvent(c, z.unknown())
      deps.log.error(deadLetterRecord(event), 'Gave up delivering event')
      dashboardMetrics.deadLetters.add({ type: event.type })
    } catch (err) {
      if (err instanceof BadEventError) {
        const headers: Record<string, string> = {}
        c.req.raw.headers.forEach((value, key) => {
          if (key.startsWith('ce-') || key === 'content-type') headers[key] = value
        })
        deps.log.error({ headers, reason: err.message }, 'Gave up delivering a request that is not a valid CloudEvent')
      }
      throw err
    }
    return c.body(null, 202)
  })
  return app
}
