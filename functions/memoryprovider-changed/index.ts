// Handles: dev.knative.apiserver.resource.{add,update} (and .ref.*) for purko.io MemoryProviders,
// and dev.knative.sources.ping from the memoryproviders-recheck PingSource (every 5 minutes).
// Triggers: knative/triggers/memoryprovider-changed.yaml (kind MemoryProvider),
// memoryprovider-changed-recheck.yaml (kineticsource=memoryrecheck).
// Writes: each MemoryProvider's status (healthy, entryCount, lastError, lastChecked) and Events when health changes.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, RESOURCE_ADD, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { memoryProviderMayNeedWork } from '../../shared/memory/plan/memory-provider.js'
import { MemoryProviderSchema } from '../../shared/schemas/memoryprovider.js'

const engine = () => import('../../shared/memory/controller.js')

const ProviderEventData = objectEventData('MemoryProvider')
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['MemoryProvider'], [RESOURCE_ADD, RESOURCE_UPDATE]),
  { kineticsource: 'memoryrecheck', types: [PING] },
]

/** The memoryprovider-changed function: reports each MemoryProvider's health and entry count. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      const event = await readCloudEvent(c, PingData)
      const outcome = await (await engine()).recheckMemoryProviders(deps)
      deps.log.info({ ceId: event.id, ceType: PING_TYPE, ...outcome }, 'MemoryProvider recheck finished')
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, ProviderEventData)
    if (event.type.endsWith('.delete')) return c.body(null, 202)
    if (event.data.metadata) {
      // Resource mode: the echo of our own status write changes nothing.
      const seen = MemoryProviderSchema.safeParse(event.data)
      if (seen.success && !memoryProviderMayNeedWork(seen.data)) return c.body(null, 202)
    }
    const { namespace, name } = objectKeyOf(event.data)
    const outcome = await (await engine()).reconcileMemoryProvider(deps, namespace, name)
    deps.log.info({ ceId: event.id, ceType: event.type, namespace, name, result: outcome.result, healthy: outcome.plan?.status.healthy }, 'Reconciled MemoryProvider')
    return c.body(null, 202)
  })
  return app
}
