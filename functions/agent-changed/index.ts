// Handles: dev.knative.apiserver.resource.{add,update} (and .ref.*) for purko.io Agents,
// dev.knative.apiserver.resource.delete for the per-agent ServiceAccounts, Roles and RoleBindings,
// and dev.knative.sources.ping from the agents-recheck PingSource (hourly) and its alarm (every 5
// minutes while an Agent's look at another object fails: shared/ticks/alarm-plan.ts).
// Triggers: knative/triggers/agent-changed.yaml (kind Agent), agent-changed-identity.yaml
// (kinds ServiceAccount, Role, RoleBinding), agent-changed-recheck.yaml (kineticsource=agentrecheck).
// Writes: the Agent's ServiceAccount, Role and RoleBinding, its status, and Warning Events.
import type { Hono } from 'hono'
import { z } from 'zod'
import { agentMayNeedWork } from '../../shared/agent/plan/echo.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { sweep } from '../../shared/engine/limited.js'
import { baseApp } from '../../shared/http/app.js'
import { recheckAfter } from '../../shared/ticks/alarm-plan.js'
import { readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { PING, RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { AgentSchema } from '../../shared/schemas/agent.js'
import { LABEL_AGENT } from '../../shared/schemas/labels.js'

// The controller is loaded on the first event that needs it: echoes of our own writes never do.
const engine = () => import('../../shared/agent/controller.js')

const AgentEventData = objectEventData('Agent')
/** Ping data is free-form (and absent when the PingSource sets none). */
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'
/** The extension the agent-identities source stamps on its events. */
/** The kinds of an agent's identity (labelled purko.io/agent): a delete makes them again. */
const IDENTITY_KINDS = ['ServiceAccount', 'Role', 'RoleBinding']

/** Agents re-checked at once; the API server, not this process, is the bottleneck. */
const CONCURRENCY = 4

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['Agent'], [RESOURCE_ADD, RESOURCE_UPDATE]),
  ...resourceEvents(IDENTITY_KINDS, [RESOURCE_DELETE]),
  { kineticsource: 'agentrecheck', types: [PING] },
]

/** The agent-changed function: keeps each Agent's identity, conditions and phase in step with its spec. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      await recheck(deps, (await readCloudEvent(c, PingData)).id)
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, AgentEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    if (IDENTITY_KINDS.includes(String(event.extensions.kind))) {
      // A ServiceAccount, Role or RoleBinding of an Agent was deleted: make it again (or find
      // the Agent gone, when its own deletion took them).
      const agent = (event.data.metadata?.labels as Record<string, unknown> | undefined)?.[LABEL_AGENT]
      if (!event.type.endsWith('.delete') || typeof agent !== 'string' || agent === '') return c.body(null, 202)
      const namespace = objectKeyOf(event.data).namespace
      const { reconcileAgent } = await engine()
      const outcome = await reconcileAgent(deps, namespace, agent)
      log.info({ namespace, name: agent, deleted: `${event.data.kind ?? 'object'}/${objectKeyOf(event.data).name}`, result: outcome.result, identity: outcome.plan?.written ?? [] }, 'Restored Agent identity')
      return c.body(null, 202)
    }
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
    log.info({ namespace, name, result: outcome.result, identity: outcome.plan?.written ?? [], phase: outcome.plan?.plan.status?.phase }, 'Reconciled Agent')
    return c.body(null, 202)
  })
  return app
}

/**
 * The recheck tick: one LIST of every Agent, then a reconcile of each one whose last look failed
 * on another object (or that no event has reached yet). A Secret or LLMProvider that appears
 * sends no Agent event, so this is how its condition turns True without touching the Agent.
 */
async function recheck(deps: EngineDeps<FunctionKube>, ceId: string): Promise<void> {
  const log = deps.log.child({ ceId, ceType: PING_TYPE })
  // Read before the list: an arm after it makes the settle below a lost race (alarm-plan.ts).
  const alarm = await readAlarm(deps, 'agents-recheck')
  const due = (await deps.kube.listAllAgents()).filter(agentMayNeedWork)
  // Every 5 minutes while an Agent needs another look; at rest only the hourly heartbeat.
  const settle = () => settleTickAlarm({ ...deps, log }, 'agents-recheck', alarm, due.length > 0 ? recheckAfter(deps.now()) : undefined)
  if (due.length === 0) {
    await settle()
    return void log.info({ agents: 0 }, 'Agent recheck finished') // the controller is not even loaded
  }
  const { reconcileAgent } = await engine()
  const { applied, failed } = await sweep(due, CONCURRENCY, log, 'Could not recheck Agent', async (agent) =>
    (await reconcileAgent(deps, agent.metadata.namespace ?? 'default', agent.metadata.name ?? '')).result === 'applied')
  await settle()
  log.info({ agents: due.length, applied, failed }, 'Agent recheck finished')
}
