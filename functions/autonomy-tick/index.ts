// Handles: dev.knative.sources.ping from the autonomy PingSource (hourly) and its alarm (5 minutes
// after a round that changed or failed something: shared/ticks/alarm-plan.ts).
// Trigger: knative/triggers/autonomy-tick.yaml (source kineticsource=autonomy).
// Writes: each opted-in Agent's Shu-Ha-Ri level (spec) and progress (status), and each policy's status, only when they change.
import type { Hono } from 'hono'
import { z } from 'zod'
import { isOptedIn } from '../../shared/autonomy/plan/levels.js'
import { choosePolicy, effectivePolicy, planPolicyStatus } from '../../shared/autonomy/plan/policy.js'
import { applyAutonomy } from '../../shared/autonomy/controller.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { forEachLimited, sweep } from '../../shared/engine/limited.js'
import { baseApp } from '../../shared/http/app.js'
import { recheckAfter } from '../../shared/ticks/alarm-plan.js'
import { readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { PING, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import type { Logger } from '../../shared/log.js'
import type { AgentAutonomyPolicy } from '../../shared/schemas/autonomypolicy.js'

/** Ping data is free-form (and absent when the PingSource sets none). */
const PingData = z.unknown()

/** Namespaces, and agents within one, evaluated at once: the API server is the bottleneck. */
export const NAMESPACE_CONCURRENCY = 4
export const AGENT_CONCURRENCY = 8

/** What one tick did, for the log line and tests. */
export interface TickSummary {
  namespaces: number
  agents: number
  applied: number
  failed: number
  policiesWritten: number
}

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  { kineticsource: 'autonomy', types: [PING] },
]

/** The autonomy-tick function: evaluates every opted-in Agent of every namespace that has a policy. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, PingData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    // Read before the lists: an arm after them makes the settle below a lost race (alarm-plan.ts).
    const alarm = await readAlarm(deps, 'autonomy')
    const summary = await tick(deps, log)
    // A round that changed or failed something looks again in 5 minutes; a quiet one waits for the hourly heartbeat.
    await settleTickAlarm({ ...deps, log }, 'autonomy', alarm, summary.applied + summary.failed > 0 ? recheckAfter(deps.now()) : undefined)
    log.info({ ...summary }, 'Autonomy evaluation finished')
    return c.body(null, 202)
  })
  return app
}

/**
 * One evaluation of the cluster: one LIST of policies, then per namespace that has one, one LIST
 * of its Agents. At idle that is all it costs; an agent or namespace in trouble is logged and left
 * for the next tick, never a reason to stop the others. Only the policy LIST failing throws.
 */
export async function tick(deps: EngineDeps<FunctionKube>, log: Logger = deps.log): Promise<TickSummary> {
  const byNamespace = new Map<string, AgentAutonomyPolicy[]>()
  for (const policy of await deps.kube.listAutonomyPolicies()) {
    const ns = policy.metadata.namespace ?? 'default'
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), policy])
  }
  const summary: TickSummary = { namespaces: byNamespace.size, agents: 0, applied: 0, failed: 0, policiesWritten: 0 }
  await forEachLimited([...byNamespace], NAMESPACE_CONCURRENCY, async ([namespace, policies]) => {
    const chosen = choosePolicy(policies)
    if (!chosen) return
    let agents
    try {
      agents = (await deps.kube.listAgents(namespace)).filter(isOptedIn)
    } catch (err) {
      summary.failed++
      log.warn({ namespace, err: (err as Error).message }, `Could not list Agents in ${namespace}`)
      return
    }
    const policy = effectivePolicy(chosen)
    summary.agents += agents.length
    const swept = await sweep(agents, AGENT_CONCURRENCY, log, 'Could not evaluate Agent', async (agent) => (await applyAutonomy(deps, agent, policy)).result === 'applied')
    summary.applied += swept.applied
    summary.failed += swept.failed
    const now = deps.now().toISOString()
    for (const p of policies) {
      const status = planPolicyStatus(p, { chosen: chosen.metadata.name ?? '', agentsEvaluated: agents.length }, now)
      if (!status) continue
      try {
        await deps.kube.replaceAutonomyPolicyStatus(namespace, p.metadata.name ?? '', p.metadata.resourceVersion ?? '', status)
        summary.policiesWritten++
      } catch (err) {
        // The next tick plans it again from what it then reads.
        summary.failed++
        log.info({ namespace, name: p.metadata.name, err: (err as Error).message }, `Could not update status of AgentAutonomyPolicy ${namespace}/${p.metadata.name}`)
      }
    }
  })
  return summary
}
