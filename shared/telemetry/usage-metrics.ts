import type { AttemptRecord } from '../agent/plan/metrics.js'
import { dashboardMetrics } from './metrics.js'

/** Adds one newly counted attempt's tokens (in, out) and cost to the per agent and model counters. */
export function recordModelUsage(namespace: string, agent: string, attempt: AttemptRecord): void {
  const model = attempt.model ?? 'unknown'
  const who = { namespace, agent, model }
  if (attempt.tokensIn !== undefined || attempt.tokensOut !== undefined) {
    dashboardMetrics.tokens.add({ ...who, type: 'input' }, attempt.tokensIn ?? 0)
    dashboardMetrics.tokens.add({ ...who, type: 'output' }, attempt.tokensOut ?? 0)
  } else {
    dashboardMetrics.tokens.add({ ...who, type: 'total' }, attempt.tokens)
  }
  dashboardMetrics.cost.add(who, attempt.costUSD)
}
