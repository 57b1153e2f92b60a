import type { Agent } from '../../schemas/agent.js'
import { ANNOTATION_RESET_COST, FINALIZER_AGENT } from '../../schemas/labels.js'
import { agentServiceAccountName } from './names.js'
import { quotaCondition } from './quota.js'

/** Conditions that depend on other objects (Secrets, providers): while one fails, every event re-checks. */
const LOOKED_UP = ['Ready', 'CredentialsValid', 'ModelAvailable', 'SpecValid'] as const

/** Pure: whether a status says a look at another object failed (the recheck tick retries those). */
export function hasFailedLook(status: Agent['status']): boolean {
  const conditions = status?.conditions ?? []
  return LOOKED_UP.some((type) => conditions.find((c) => c.type === type)?.status !== 'True')
}

/**
 * Pure: whether an Agent, as seen in an event, may need anything done. False only when it
 * provably does not: its generation is observed, nothing asks for a cost reset, purko's
 * finalizer is gone, its ServiceAccount is recorded, every looked-up check passed, and the
 * QuotaAvailable condition still matches the metrics (which the workflow engine moves).
 */
export function agentMayNeedWork(agent: Agent): boolean {
  const meta = agent.metadata
  const purkoFinalizer = meta.finalizers?.includes(FINALIZER_AGENT) ?? false
  if (meta.deletionTimestamp) return purkoFinalizer
  if (purkoFinalizer || meta.annotations?.[ANNOTATION_RESET_COST] !== undefined) return true
  const status = agent.status
  if (!status || status.observedGeneration !== meta.generation) return true
  if (status.serviceAccountName !== agentServiceAccountName(agent)) return true
  const conditions = status.conditions ?? []
  const of = (type: string) => conditions.find((c) => c.type === type)
  if (LOOKED_UP.some((type) => of(type)?.status !== 'True')) return true
  const quota = quotaCondition(agent)
  const seen = of('QuotaAvailable')
  return seen?.status !== quota.status || seen.reason !== quota.reason || seen.message !== quota.message
}
