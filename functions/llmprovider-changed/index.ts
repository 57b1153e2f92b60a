// Handles: dev.knative.apiserver.resource.{add,update,delete} (and .ref.*) for purko.io LLMProviders,
// and dev.knative.sources.ping from the llmproviders-probe PingSource (every minute).
// Triggers: knative/triggers/llmprovider-changed.yaml (kind LLMProvider),
// llmprovider-changed-probe.yaml (kineticsource=llmproviderprobe).
// Writes: each LLMProvider's status, Events on state changes, and the copies of platform keys.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { isProbeDue } from '../../shared/llm/plan/schedule.js'
import { LLMProviderSchema } from '../../shared/schemas/llmprovider.js'

// Loaded on the first event that needs it: echoes of our own status writes never do.
const engine = () => import('../../shared/llm/controller.js')

const ProviderEventData = objectEventData('LLMProvider')
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'

/** Options for tests and benchmarks: the fetch the probes use (the global one by default). */
export interface LLMProviderOptions {
  fetch?: typeof fetch
}

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['LLMProvider'], [RESOURCE_ADD, RESOURCE_UPDATE, RESOURCE_DELETE]),
  { kineticsource: 'llmproviderprobe', types: [PING] },
]

/** The llmprovider-changed function: checks each LLMProvider's credentials and probes its endpoint. */
export function createApp(deps: EngineDeps<FunctionKube>, opts: LLMProviderOptions = {}): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      const event = await readCloudEvent(c, PingData)
      const { probeRound, newProbeRound } = await engine()
      const outcome = await probeRound(deps, newProbeRound(opts.fetch))
      deps.log.info({ ceId: event.id, ceType: PING_TYPE, ...outcome }, 'LLMProvider probe round finished')
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, ProviderEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    const { namespace, name } = objectKeyOf(event.data)
    const platform = namespace === deps.config.platformNamespace
    if (event.type.endsWith('.delete')) {
      // Nothing of its own to clean up; a platform provider's key leaves the copies.
      if (platform) await (await engine()).copyCredentials(deps)
      return c.body(null, 202)
    }
    if (event.data.metadata) {
      // Resource mode: our own status writes come back here; a provider not due needs nothing.
      const seen = LLMProviderSchema.safeParse(event.data)
      if (seen.success && !isProbeDue(seen.data, deps.now().toISOString())) return c.body(null, 202)
    }
    const { reconcileLLMProvider, newProbeRound, copyCredentials } = await engine()
    const round = newProbeRound(opts.fetch)
    const outcome = await reconcileLLMProvider(deps, namespace, name, round)
    if (platform && outcome.result !== 'unchanged') await copyCredentials(deps, undefined, round)
    const status = outcome.plan?.plan.status
    log.info({ namespace, name, result: outcome.result, phase: status?.phase, reason: status?.conditions?.find((c) => c.type === 'Ready')?.reason }, 'Reconciled LLMProvider')
    return c.body(null, 202)
  })
  return app
}
