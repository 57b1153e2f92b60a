import { recordAttempts } from './plan/metrics.js'
import { ConflictError } from '../core/errors.js'
import { agentUsage } from '../http/metrics.js'
import { recordModelUsage } from '../telemetry/usage-metrics.js'
import type { FinishedAttempt } from '../workflow/plan/types.js'
import type { Agent } from '../schemas/agent.js'
import { AUTONOMY_VERBS, demoteIfTriggered } from '../autonomy/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { EngineDeps } from '../engine/controller.js'

/** Writes of one Agent's metrics tried before the lost race is handed to the Broker (409). */
/** The port verbs of recording attempts on agents (and the immediate demotion they may trigger). */
export const RECORD_METRICS_VERBS = [...AUTONOMY_VERBS, 'getAgent', 'replaceAgentStatus'] as const satisfies readonly (keyof Kube)[]
type RecordMetricsKube = KubeVerbs<typeof RECORD_METRICS_VERBS>

export const METRICS_WRITE_TRIES = 8

/**
 * Counts finished step attempts on their Agents' `status.metrics`, exactly once per attempt:
 * the keys already recorded on the Agent are skipped, and each write is guarded by the
 * resourceVersion it was computed from, re-read and retried when another writer (a concurrent
 * step of the same agent, agent-changed, the autonomy tick) got there first. Only the metrics
 * are touched; the rest of the status is the fresh object's. Throws ConflictError when the
 * race is lost METRICS_WRITE_TRIES times, so the event is redelivered and nothing is lost.
 * A write that counted a failure is followed by the immediate rollback check. `reread` sees
 * every Agent read again after its write was refused (and may throw to give up). Returns the
 * Agents as written; the instance's memo keeps them as its last known copies.
 */
export async function recordAgentMetrics(
  deps: EngineDeps<RecordMetricsKube>, attempts: readonly FinishedAttempt[], known: ReadonlyMap<string, Agent>, reread?: (fresh: Agent) => void,
): Promise<Agent[]> {
  const byAgent = new Map<string, FinishedAttempt[]>()
  for (const attempt of attempts) byAgent.set(attempt.agentKey, [...(byAgent.get(attempt.agentKey) ?? []), attempt])
  const written = await Promise.all([...byAgent].map(async ([key, list]) => {
    try {
      const agent = await recordOn(deps, key, list, known.get(key), reread)
      // A counted failure may have demoted the Agent since: the copy is no longer the last one.
      if (agent && list.every((a) => a.ok)) deps.memo?.agents.set(key, agent)
      else deps.memo?.agents.delete(key)
      return agent
    } catch (err) {
      deps.memo?.agents.delete(key)
      throw err
    }
  }))
  return written.flatMap((agent) => agent ?? [])
}

async function recordOn(
  deps: EngineDeps<RecordMetricsKube>, agentKey: string, attempts: FinishedAttempt[], listed: Agent | undefined, reread: ((fresh: Agent) => void) | undefined,
): Promise<Agent | null> {
  const [namespace, name] = splitKey(agentKey)
  const now = deps.now().toISOString()
  // The Agent listed moments ago for this plan is the first guess; the guard catches it being stale.
  let agent = listed ?? await deps.kube.getAgent(namespace, name)
  for (let attempt = 1; ; attempt++) {
    if (!agent) {
      deps.log.info({ namespace, name, attempts: attempts.length }, `Agent ${agentKey} is gone; its step attempts are not counted`)
      return null
    }
    const metrics = recordAttempts(agent.status?.metrics, attempts, now)
    if (metrics === null) return null // counted by an earlier delivery
    const counted = new Set(agent.status?.metrics?.recordedAttempts ?? [])
    let written: Agent | undefined
    try {
      written = await deps.kube.replaceAgentStatus(namespace, name, agent.metadata.resourceVersion ?? '', { ...(agent.status ?? {}), metrics })
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= METRICS_WRITE_TRIES) throw err
    }
    if (written) {
      const fresh = attempts.filter((a) => !counted.has(a.key))
      for (const a of fresh) {
        agentUsage.add(namespace, name, a.ok, a.tokens, a.costUSD)
        recordModelUsage(namespace, name, a)
      }
      // A failure may cross a rollback trigger: an unsafe agent is demoted now, not at the next tick.
      if (fresh.some((a) => !a.ok)) await demoteIfTriggered(deps, written)
      return written
    }
    // Jitter, so replicas finishing steps of one agent at the same moment stop colliding.
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 20 * attempt)))
    agent = await deps.kube.getAgent(namespace, name)
    if (agent && reread) reread(agent)
  }
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/')
  return [key.slice(0, slash), key.slice(slash + 1)]
}
