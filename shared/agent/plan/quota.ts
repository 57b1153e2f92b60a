import type { Agent } from '../../schemas/agent.js'
import type { Condition } from '../../schemas/condition.js'
import { costLimitMessage, costLimitOf, overBudget } from './cost-limit.js'

/** A condition as a planner computes it, before times and generations are stamped on. */
export interface CheckedCondition {
  type: string
  status: Condition['status']
  reason: string
  message: string
  /** Part of the Agent the check is about (for the Event), never stored in status. */
  fieldPath?: string
}

/**
 * Pure: the QuotaAvailable condition for the Agent's recorded cost and budget: purko's
 * CostLimitExceeded / WithinLimits, and Unknown for a `costLimit` string that is no amount.
 */
export function quotaCondition(agent: Pick<Agent, 'spec' | 'status'>): CheckedCondition {
  const limit = costLimitOf(agent)
  if (limit.kind === 'invalid') {
    return {
      type: 'QuotaAvailable', status: 'Unknown', reason: 'InvalidCostLimit', fieldPath: 'spec.guardrails.costLimit',
      message: `guardrails.costLimit "${limit.raw}" is not an amount like "$5.00"; no budget is enforced`,
    }
  }
  const over = overBudget(agent)
  return over.over
    ? { type: 'QuotaAvailable', status: 'False', reason: 'CostLimitExceeded', message: costLimitMessage(over.totalUSD, over.limitUSD), fieldPath: 'spec.guardrails' }
    : { type: 'QuotaAvailable', status: 'True', reason: 'WithinLimits', message: 'Cost within guardrail limits' }
}
