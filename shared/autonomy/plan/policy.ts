// Pure: how an AgentAutonomyPolicy is read. Omitted criteria take purko's defaults
// (config/autonomy-policy.yaml), one policy applies per namespace, and a policy whose criteria
// contradict each other is applied anyway but flagged.
import type { AgentAutonomyPolicy, AgentAutonomyPolicyStatus, RollbackLevel, TransitionCriteria } from '../../schemas/autonomypolicy.js'
import { setCondition } from '../../core/conditions.js'
import { canonicalJson } from '../../core/go-format.js'

/** One transition's criteria with every field filled in. */
export type Criteria = Required<TransitionCriteria>

/** A policy as the planner applies it: nothing left optional. */
export interface EffectivePolicy {
  name: string
  shuToHa: Criteria
  haToRi: Criteria
  rollback: { enabled: boolean; successRateBelow: number; consecutiveFailures: number; rollbackLevel: RollbackLevel }
}

/** purko's config/autonomy-policy.yaml: Shu->Ha 100 actions / 0.95 / 14 days; Ha->Ri 500 / 0.99 / 30 days / streak 20. */
export const DEFAULT_SHU_TO_HA: Criteria = {
  minimumActionsCompleted: 100, minimumSuccessRate: 0.95, minimumDaysInLevel: 14, incidentFreeStreak: 0, requiredApprovals: 0,
}
export const DEFAULT_HA_TO_RI: Criteria = {
  minimumActionsCompleted: 500, minimumSuccessRate: 0.99, minimumDaysInLevel: 30, incidentFreeStreak: 20, requiredApprovals: 0,
}
/** Rollback thresholds when omitted; rollback itself only runs when `rollback.enabled` is true (a Go bool's zero value). */
export const DEFAULT_ROLLBACK = { successRateBelow: 0.9, consecutiveFailures: 3, rollbackLevel: 'shu' as RollbackLevel }

/** Name of the policy a namespace uses when it has several. */
export const PREFERRED_POLICY_NAME = 'default'

/** Pure: the policy with purko's defaults filled in for every omitted field. */
export function effectivePolicy(policy: AgentAutonomyPolicy): EffectivePolicy {
  const { shuToHa, haToRi } = policy.spec.shuHaRi.progressionCriteria
  const rollback = policy.spec.rollback
  return {
    name: policy.metadata.name ?? '',
    shuToHa: { ...DEFAULT_SHU_TO_HA, ...defined(shuToHa) },
    haToRi: { ...DEFAULT_HA_TO_RI, ...defined(haToRi) },
    rollback: {
      enabled: rollback?.enabled === true,
      ...DEFAULT_ROLLBACK,
      ...defined(rollback?.triggerConditions),
      ...(rollback?.rollbackLevel ? { rollbackLevel: rollback.rollbackLevel } : {}),
    },
  }
}

/**
 * Pure: the policy that applies to a namespace's agents: the one named `default`, else the
 * oldest (creationTimestamp, then name, so every tick picks the same one). Undefined when none.
 */
export function choosePolicy(policies: readonly AgentAutonomyPolicy[]): AgentAutonomyPolicy | undefined {
  const named = policies.find((p) => p.metadata.name === PREFERRED_POLICY_NAME && !p.metadata.deletionTimestamp)
  if (named) return named
  return [...policies].filter((p) => !p.metadata.deletionTimestamp).sort((a, b) =>
    compare(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') || compare(a.metadata.name ?? '', b.metadata.name ?? ''))[0]
}

/** Pure: what makes no sense in a policy, one sentence each (empty when it is consistent). */
export function policyProblems(policy: EffectivePolicy): string[] {
  const problems: string[] = []
  const { shuToHa, haToRi, rollback } = policy
  for (const key of Object.keys(DEFAULT_SHU_TO_HA) as Array<keyof Criteria>) {
    if (haToRi[key] < shuToHa[key]) problems.push(`haToRi.${key} ${haToRi[key]} is easier than shuToHa.${key} ${shuToHa[key]}`)
  }
  if (rollback.enabled) {
    for (const [name, c] of [['shuToHa', shuToHa], ['haToRi', haToRi]] as const) {
      // An agent promoted at a rate between the two would be rolled back by the same numbers that promoted it.
      if (rollback.successRateBelow >= c.minimumSuccessRate) {
        problems.push(`rollback successRateBelow ${rollback.successRateBelow} is not below ${name}.minimumSuccessRate ${c.minimumSuccessRate}`)
      }
    }
  }
  return problems
}

/** How a policy stands in its namespace at this evaluation. */
export interface PolicySelection {
  /** The policy that applies to the namespace. */
  chosen: string
  /** Opted-in agents the chosen policy was evaluated for (0 for the others). */
  agentsEvaluated: number
}

/**
 * Pure: the policy's next status: observedGeneration, Ready (True/Applied for the chosen policy,
 * False/NotSelected for the others), Warning (True/InconsistentCriteria, absent when consistent)
 * and agentsEvaluated. Null when that is what the policy already says: no write.
 */
export function planPolicyStatus(policy: AgentAutonomyPolicy, selection: PolicySelection, now: string): AgentAutonomyPolicyStatus | null {
  const current = policy.status ?? {}
  const name = policy.metadata.name ?? ''
  const namespace = policy.metadata.namespace ?? ''
  const chosen = selection.chosen === name
  const generation = policy.metadata.generation
  const at = generation === undefined ? {} : { observedGeneration: generation }
  let conditions = setCondition(current.conditions, chosen
    ? { type: 'Ready', status: 'True', reason: 'Applied', message: `Applies to the agents of namespace ${namespace} that have spec.shuHaRi`, ...at }
    : { type: 'Ready', status: 'False', reason: 'NotSelected', message: `Namespace ${namespace} uses policy ${selection.chosen}: the one named ${PREFERRED_POLICY_NAME}, else the oldest`, ...at }, now)
  const problems = policyProblems(effectivePolicy(policy))
  conditions = problems.length > 0
    ? setCondition(conditions, { type: 'Warning', status: 'True', reason: 'InconsistentCriteria', message: problems.join('; '), ...at }, now)
    : conditions.filter((c) => c.type !== 'Warning')
  const next: AgentAutonomyPolicyStatus = {
    ...current,
    ...at,
    conditions,
    agentsEvaluated: chosen ? selection.agentsEvaluated : 0,
  }
  return canonicalJson(next) === canonicalJson(current) ? null : next
}

function defined<T extends object>(value: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
