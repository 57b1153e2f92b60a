import type { Agent } from '../../schemas/agent.js'

/** An Agent's total-cost budget, read from its guardrails. */
export type CostLimit =
  | { kind: 'none' }
  | { kind: 'limit'; usd: number }
  | { kind: 'invalid'; raw: string }

/**
 * Pure: the budget an Agent declares: `guardrails.costLimitUSD` (a number) or purko's string form
 * `guardrails.costLimit: "$x.xx"`. Zero or negative means no budget, as in purko.
 */
export function costLimitOf(agent: Pick<Agent, 'spec'>): CostLimit {
  const guardrails = (agent.spec.guardrails ?? {}) as Record<string, unknown>
  const numeric = guardrails.costLimitUSD
  if (typeof numeric === 'number') return numeric > 0 ? { kind: 'limit', usd: numeric } : { kind: 'none' }
  const text = guardrails.costLimit
  if (text === undefined || text === null || text === '') return { kind: 'none' }
  const match = /^\s*\$?\s*(\d+(?:\.\d+)?)\s*(?:USD)?\s*$/i.exec(String(text))
  if (!match) return { kind: 'invalid', raw: String(text) }
  const usd = Number(match[1])
  return usd > 0 ? { kind: 'limit', usd } : { kind: 'none' }
}

/** Pure: the recorded total exceeds the budget (purko's rule: strictly greater). */
export function overBudget(agent: Pick<Agent, 'spec' | 'status'>): { over: false } | { over: true; totalUSD: number; limitUSD: number } {
  const limit = costLimitOf(agent)
  const total = agent.status?.metrics?.totalCostUSD ?? 0
  if (limit.kind !== 'limit' || !(total > limit.usd)) return { over: false }
  return { over: true, totalUSD: total, limitUSD: limit.usd }
}

/** purko's QuotaAvailable=False message, `Total cost $1.23 exceeds limit $1.00`. */
export function costLimitMessage(totalUSD: number, limitUSD: number): string {
  return `Total cost $${totalUSD.toFixed(2)} exceeds limit $${limitUSD.toFixed(2)}`
}
