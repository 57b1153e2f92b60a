// Handles: dev.knative.apiserver.resource.{add,update} (and .ref.*) for purko.io Agents.
// Trigger: knative/triggers/agent-changed.yaml (source kineticsource=agents).
// Writes: the Agent's ServiceAccount, Role and RoleBinding, its status, and Warning Events.
import type { Hono } from 'hono'
import { agentMayNeedWork } from '../../shared/agent/echo.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import { baseApp } from '../../shared/http/app.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { AgentSchema } from '../../shared/schemas/agent.js'

// The controller is loaded on the first event that needs it: echoes of our own writes never do.
const engine = () => import('../../shared/engine/reconcile-agent.js')

const AgentEventData = objectEventData('Agent')

/** The agent-changed function: keeps each Agent's identity, conditions and phase in step with its spec. */
export function createApp(deps: EngineDeps): Hono {
  const app = baseApp(deps.log)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, AgentEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    if (event.type.endsWith('.delete')) return c.body(null, 202) // the identity goes with its owner
    const data = event.data
    if (data.metadata) {
      // Resource mode: our own status writes, and the engine's metrics writes, come back here.
      const seen = AgentSchema.safeParse(data)
      if (seen.success && !agentMayNeedWork(seen.data)) return c.body(null, 202)
    }
    const { namespace, name } = objectKeyOf(data)
    const { reconcileAgent } = await engine()
    const outcome = await reconcileAgent(deps, namespace, name)
    log.info({ namespace, name, result: outcome.result, identity: outcome.identity, phase: outcome.phase }, 'Reconciled Agent')
    return c.body(null, 202)
  })
  return app
}
