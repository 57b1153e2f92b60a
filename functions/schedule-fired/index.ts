// Handles: dev.knative.sources.ping from a template's own PingSource (`<template>-schedule`).
// Trigger: knative/triggers/schedule-fired.yaml (kineticsource=schedule).
// Writes: the run for the fire (`<template>-sched-<hex>`), the template's status, pruned runs.
import type { Hono } from 'hono'
import { z } from 'zod'
import { BadEventError } from '../../shared/core/errors.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { reconcileTemplate, templateResult, templateRuns } from '../../shared/template/controller.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { SCHEDULE_SOURCE } from '../../shared/template/plan/ping-source.js'

/** The PingSource's data: which template it was made for. */
const FireData = z.object({ namespace: z.string().min(1), name: z.string().min(1), uid: z.string().min(1) })

const PING_TYPE = 'dev.knative.sources.ping'

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  { kineticsource: 'schedule', types: [PING] },
]

/** The schedule-fired function: one run per schedule fire, however often the ping arrives. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, z.unknown())
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    if (event.type !== PING_TYPE || event.extensions.kineticsource !== SCHEDULE_SOURCE) {
      log.info({ kineticsource: event.extensions.kineticsource }, 'Not a template schedule ping; ignored')
      return c.body(null, 202)
    }
    const data = FireData.safeParse(event.data)
    if (!data.success) {
      const issue = data.error.issues[0]
      throw new BadEventError(`Invalid data in schedule ping ${event.id}${issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'}`)
    }
    const { namespace, name, uid } = data.data
    const outcome = await reconcileTemplate(deps, namespace, name, { kind: 'fired', time: event.time, uid })
    log.info({
      namespace, name, eventTime: event.time, result: templateResult(outcome), fire: outcome.fire?.time, outcome: outcome.fire?.outcome,
      ...templateRuns(outcome),
    }, 'Handled schedule fire')
    return c.body(null, 202)
  })
  return app
}
