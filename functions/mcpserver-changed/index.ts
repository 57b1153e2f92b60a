// Handles: dev.knative.apiserver.resource.{add,update} for purko.io MCPServers, .{add,update,delete}
// for Deployments labelled purko.io/mcp-server, and dev.knative.sources.ping from mcpservers-resync.
// Triggers: knative/triggers/mcpserver-changed.yaml (kind MCPServer), mcpserver-changed-deployments.yaml
// (kind Deployment), mcpserver-changed-resync.yaml (kineticsource=mcpserverresync).
// Writes: the finalizer and status of MCPServers, their Deployment, Service and stdio bridge identity,
// the mcp-servers registry ConfigMap of the agent namespace, and Events.
import type { Hono } from 'hono'
import { z } from 'zod'
import { sweep } from '../../shared/engine/limited.js'
import type { McpServerDeps } from '../../shared/mcp/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { earliest } from '../../shared/ticks/alarm-plan.js'
import { readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { PING, RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { mcpServerIsDue } from '../../shared/mcp/plan/plan.js'
import { LABEL_MCP_SERVER, MCPServerSchema } from '../../shared/schemas/mcpserver.js'

// The controller (and the MCP client under it) loads on the first event that needs it: echoes never do.
const engine = () => import('../../shared/mcp/controller.js')

const ObjectEventData = objectEventData('MCPServer')
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'
/** The extension the mcp-deployments source stamps on its events. */

/** Servers reconciled at once by the resync tick; discovery waits on the network, so a few. */
const CONCURRENCY = 8
/** Most servers one tick takes, the longest overdue first; the rest are still due a minute later. */
const MAX_PER_TICK = 256
/**
 * No reconcile starts after this much of a tick: each may still wait up to the 5 s discovery
 * deadline, so the tick ends well within the Service's 90 s. Healthy servers take milliseconds,
 * so a tick keeps up with 1,000 servers rediscovered every 30 minutes (34 a minute) by far.
 */
const START_BUDGET_MS = 40_000

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['MCPServer'], [RESOURCE_ADD, RESOURCE_UPDATE]),
  ...resourceEvents(['Deployment'], [RESOURCE_ADD, RESOURCE_UPDATE, RESOURCE_DELETE]),
  { kineticsource: 'mcpserverresync', types: [PING] },
]

/** The mcpserver-changed function: runs, registers and discovers each MCPServer. */
export function createApp(deps: McpServerDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      await resync(deps, (await readCloudEvent(c, PingData)).id)
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, ObjectEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    const data = event.data
    if (event.extensions.kind === 'Deployment') {
      // A Deployment of an MCPServer changed (rolled out, became available, lost a pod) or went away.
      const server = (data.metadata?.labels as Record<string, unknown> | undefined)?.[LABEL_MCP_SERVER]
      if (typeof server !== 'string' || server === '') return c.body(null, 202)
      const namespace = objectKeyOf(data).namespace
      const { reconcileMcpServer } = await engine()
      const outcome = await reconcileMcpServer(deps, namespace, server)
      log.info({ namespace, name: server, result: outcome.result, written: outcome.plan?.written ?? [], phase: outcome.plan?.status?.phase }, 'Reconciled MCPServer after a Deployment change')
      return c.body(null, 202)
    }
    // The MCPServer's deletion shows as an update with deletionTimestamp; the final delete is nothing to do.
    if (event.type.endsWith('.delete')) return c.body(null, 202)
    if (data.metadata) {
      // Resource mode: our own finalizer and status writes come back here.
      const seen = MCPServerSchema.safeParse(data)
      if (seen.success && !mcpServerIsDue(seen.data, deps.now().toISOString())) return c.body(null, 202)
    }
    const { namespace, name } = objectKeyOf(data)
    const { reconcileMcpServer } = await engine()
    const outcome = await reconcileMcpServer(deps, namespace, name)
    log.info({ namespace, name, result: outcome.result, written: outcome.plan?.written ?? [], phase: outcome.plan?.status?.phase, discovered: outcome.plan?.discovered }, 'Reconciled MCPServer')
    return c.body(null, 202)
  })
  return app
}

/**
 * The resync tick: one LIST of every MCPServer, then a reconcile of each that is due (its
 * jittered nextCheckAt has come: a retry after a failure, the DeploymentUnavailable deadline,
 * the periodic rediscovery), or that no event has reached yet.
 */
async function resync(deps: McpServerDeps<FunctionKube>, ceId: string): Promise<void> {
  const log = deps.log.child({ ceId, ceType: PING_TYPE })
  const now = deps.now().toISOString()
  // Read before the list: an arm after it makes the settle below a lost race (alarm-plan.ts).
  const alarm = await readAlarm(deps, 'mcpservers-resync')
  const all = await deps.kube.listAllMCPServers()
  const due = all.filter((s) => mcpServerIsDue(s, now))
    .sort((a, b) => (a.status?.nextCheckAt ?? '').localeCompare(b.status?.nextCheckAt ?? ''))
    .slice(0, MAX_PER_TICK)
  // The controller loads only when a server is due.
  const reconcileMcpServer = due.length > 0 ? (await engine()).reconcileMcpServer : undefined
  const { applied, failed, deferred } = !reconcileMcpServer ? { applied: 0, failed: 0, deferred: 0 }
    : await sweep(due, CONCURRENCY, log, 'Could not resync MCPServer', async (server) =>
      (await reconcileMcpServer(deps, server.metadata.namespace ?? 'default', server.metadata.name ?? '', { tick: true })).result === 'applied',
    { now: deps.now, ms: START_BUDGET_MS })
  // What this round looked at is looked at again a minute later; else the earliest check listed.
  const next = due.length > 0 ? now : earliest(all.map((s) => s.status?.nextCheckAt))
  await settleTickAlarm({ ...deps, log }, 'mcpservers-resync', alarm, next)
  log.info({ servers: all.length, due: due.length, applied, failed, deferred }, 'MCPServer resync finished')
}
