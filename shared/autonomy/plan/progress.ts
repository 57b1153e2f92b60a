// Pure: how far an Agent has come in its level, measured against the policy's promotion criteria
// and rollback triggers, in numbers for status and in words for messages.
import type { ShuHaRiLevel, ShuHaRiStatus, Agent } from '../../schemas/agent.js'
import { LEVEL_ORDER } from './levels.js'
import type { Criteria, EffectivePolicy } from './policy.js'

/** In-level actions below which a low success rate says nothing yet (purko's docs: "measured over at least 10 actions"). */
export const ROLLBACK_MINIMUM_ACTIONS = 10

const DAY_MS = 86_400_000

/** Where the agent stands in its level, measured from status.shuHaRi.levelStart and levelSince. */
export interface Progress {
  level: ShuHaRiLevel
  next: ShuHaRiLevel | undefined
  actionsCompleted: number
  /** Success rate within the level; undefined before the first result in it. */
  successRate: number | undefined
  daysInLevel: number
  incidentFreeStreak: number
  /** Failures in a row within the level (a failure streak that began before it does not count). */
  consecutiveFailures: number
  approvals: number
}

/** In-level progress: actions and success rate since levelStart, whole days since levelSince. */
export function progressOf(agent: Agent, shuHaRi: ShuHaRiStatus, now: string): Progress {
  const metrics = agent.status?.metrics ?? {}
  const start = shuHaRi.levelStart ?? {}
  const level = shuHaRi.currentLevel ?? 'shu'
  const next = LEVEL_ORDER[LEVEL_ORDER.indexOf(level) + 1]
  const successes = Math.max(0, (metrics.successCount ?? 0) - (start.successes ?? 0))
  const failures = Math.max(0, (metrics.failureCount ?? 0) - (start.failures ?? 0))
  const days = Math.floor((Date.parse(now) - Date.parse(shuHaRi.levelSince ?? now)) / DAY_MS)
  return {
    level,
    next,
    actionsCompleted: Math.max(0, (metrics.totalInvocations ?? 0) - (start.invocations ?? 0)),
    successRate: successes + failures > 0 ? successes / (successes + failures) : undefined,
    daysInLevel: Number.isFinite(days) ? Math.max(0, days) : 0,
    incidentFreeStreak: metrics.consecutiveSuccesses ?? 0,
    consecutiveFailures: Math.min(metrics.consecutiveFailures ?? 0, failures),
    approvals: next ? new Set((shuHaRi.approvals ?? []).filter((a) => a.level === next).map((a) => a.value ?? '')).size : 0,
  }
}

export function criteriaFor(policy: EffectivePolicy, level: ShuHaRiLevel): Criteria {
  return level === 'shu' ? policy.shuToHa : policy.haToRi
}

/** The criteria not met, approvals aside. */
export function unmetCriteria(progress: Progress, criteria: Criteria): string[] {
  const unmet: string[] = []
  if (progress.actionsCompleted < criteria.minimumActionsCompleted) unmet.push(`actions ${progress.actionsCompleted}/${criteria.minimumActionsCompleted}`)
  if (progress.successRate === undefined || progress.successRate < criteria.minimumSuccessRate) unmet.push(`success rate ${rate(progress.successRate)}/${criteria.minimumSuccessRate}`)
  if (progress.daysInLevel < criteria.minimumDaysInLevel) unmet.push(`days in level ${progress.daysInLevel}/${criteria.minimumDaysInLevel}`)
  if (progress.incidentFreeStreak < criteria.incidentFreeStreak) unmet.push(`incident-free streak ${progress.incidentFreeStreak}/${criteria.incidentFreeStreak}`)
  return unmet
}

/** The rollback trigger that fires, in words; undefined when none does. */
export function rollbackTrigger(progress: Progress, policy: EffectivePolicy): string | undefined {
  const { rollback } = policy
  if (!rollback.enabled || LEVEL_ORDER.indexOf(progress.level) <= LEVEL_ORDER.indexOf(rollback.rollbackLevel)) return undefined
  if (progress.consecutiveFailures >= rollback.consecutiveFailures) {
    return `${progress.consecutiveFailures} consecutive failures (threshold ${rollback.consecutiveFailures})`
  }
  if (progress.actionsCompleted >= ROLLBACK_MINIMUM_ACTIONS && progress.successRate !== undefined && progress.successRate < rollback.successRateBelow) {
    return `success rate ${rate(progress.successRate)} below ${rollback.successRateBelow} over ${progress.actionsCompleted} actions`
  }
  return undefined
}

/** Every criterion's value against its requirement: the audit trail of a level change. */
export function describeProgress(progress: Progress, criteria: Criteria | undefined): string {
  if (!criteria) return `actions ${progress.actionsCompleted}, success rate ${rate(progress.successRate)}, days in level ${progress.daysInLevel}, incident-free streak ${progress.incidentFreeStreak}, consecutive failures ${progress.consecutiveFailures}`
  return `actions ${progress.actionsCompleted} (required ${criteria.minimumActionsCompleted}), success rate ${rate(progress.successRate)} (required ${criteria.minimumSuccessRate}), `
    + `days in level ${progress.daysInLevel} (required ${criteria.minimumDaysInLevel}), incident-free streak ${progress.incidentFreeStreak} (required ${criteria.incidentFreeStreak}), `
    + `approvals ${progress.approvals} (required ${criteria.requiredApprovals}), consecutive failures ${progress.consecutiveFailures}`
}

export function progressStatus(progress: Progress, criteria: Criteria | undefined): Pick<ShuHaRiStatus, 'promotionProgress'> {
  if (!criteria || !progress.next) return {}
  return {
    promotionProgress: {
      nextLevel: progress.next,
      actionsCompleted: progress.actionsCompleted,
      actionsRequired: criteria.minimumActionsCompleted,
      ...(progress.successRate === undefined ? {} : { successRate: round(progress.successRate) }),
      successRateRequired: criteria.minimumSuccessRate,
      daysInLevel: progress.daysInLevel,
      daysRequired: criteria.minimumDaysInLevel,
      incidentFreeStreak: progress.incidentFreeStreak,
      streakRequired: criteria.incidentFreeStreak,
      approvals: progress.approvals,
      approvalsRequired: criteria.requiredApprovals,
    },
  }
}

function rate(value: number | undefined): string {
  return value === undefined ? 'n/a' : String(round(value))
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000
}
