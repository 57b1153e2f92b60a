import { MAX_RECORDED_ATTEMPTS, type AgentMetrics } from '../../schemas/agent.js'

/** One finished step attempt (or compensation) as it counts towards its Agent's metrics. */
export interface AttemptRecord {
  /** `<workflow uid>/<runId>/<step>/<attempt>`: the same attempt always has the same key. */
  key: string
  ok: boolean
  tokens: number
  costUSD: number
  latencyMs: number
  /** The model, tokens in and tokens out the executor reported (for the per-model metrics). */
  model?: string
  tokensIn?: number
  tokensOut?: number
}

/** What one attempt used, as the executor reports it in `_metrics` of its OUTPUT line. */
export interface Usage {
  tokens: number
  costUSD: number
  /** Set when the executor reported them (`_metrics.model`, `tokens_in`, `tokens_out`). */
  model?: string
  tokensIn?: number
  tokensOut?: number
}

/**
 * Pure: tokens (in + out) and cost from the `_metrics` of a step output, zero for whatever is
 * missing or malformed. purko drops the whole update on a malformed value; here the attempt
 * still counts as an invocation, because it ran.
 */
export function usageFrom(output: unknown): Usage {
  const metrics = isObject(output) ? output._metrics : undefined
  if (!isObject(metrics)) return { tokens: 0, costUSD: 0 }
  const count = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0)
  const cost = metrics.cost_usd
  const model = typeof metrics.model === 'string' && metrics.model !== '' ? metrics.model.slice(0, 100) : undefined
  return {
    tokens: count(metrics.tokens_in) + count(metrics.tokens_out),
    costUSD: typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 ? cost : 0,
    ...(model !== undefined ? { model, tokensIn: count(metrics.tokens_in), tokensOut: count(metrics.tokens_out) } : {}),
  }
}

/** Pure: `usageFrom` of a JSON text; zero usage when it does not parse. */
export function usageFromJson(json: string): Usage {
  try {
    return usageFrom(JSON.parse(json))
  } catch {
    return { tokens: 0, costUSD: 0 }
  }
}

/**
 * Pure: the metrics after counting `attempts` in order, or null when every one of them was
 * already counted (its key is in `recordedAttempts`), so a redelivered result writes nothing.
 * Keys of the newest MAX_RECORDED_ATTEMPTS attempts are kept; fields other writers own
 * (`costResetTime`, unknown ones) pass through.
 */
export function recordAttempts(metrics: AgentMetrics | undefined, attempts: readonly AttemptRecord[], now: string): AgentMetrics | null {
  const recorded = new Set(metrics?.recordedAttempts ?? [])
  const fresh: AttemptRecord[] = []
  for (const attempt of attempts) {
    if (recorded.has(attempt.key)) continue
    recorded.add(attempt.key)
    fresh.push(attempt)
  }
  if (fresh.length === 0) return null

  const before = metrics ?? {}
  let invocations = before.totalInvocations ?? 0
  let successes = before.successCount ?? 0
  let failures = before.failureCount ?? 0
  let consecutiveFailures = before.consecutiveFailures ?? 0
  let consecutiveSuccesses = before.consecutiveSuccesses ?? 0
  let tokens = before.totalTokensUsed ?? 0
  let cost = before.totalCostUSD ?? 0
  // Metrics written before totalLatencyMs existed (or by purko) carry only the mean.
  let latency = before.totalLatencyMs ?? (before.averageLatencyMs ?? 0) * invocations
  for (const attempt of fresh) {
    invocations += 1
    tokens += attempt.tokens
    cost += attempt.costUSD
    latency += Math.max(0, Math.round(attempt.latencyMs))
    if (attempt.ok) {
      successes += 1
      consecutiveSuccesses += 1
      consecutiveFailures = 0
    } else {
      failures += 1
      consecutiveFailures += 1
      consecutiveSuccesses = 0
    }
  }
  return {
    ...before,
    totalInvocations: invocations,
    successCount: successes,
    failureCount: failures,
    consecutiveFailures,
    consecutiveSuccesses,
    totalTokensUsed: tokens,
    // Summing floats leaves tails like 0.30000000000000004; a nano-dollar is finer than any price.
    totalCostUSD: Math.round(cost * 1e9) / 1e9,
    totalLatencyMs: latency,
    averageLatencyMs: Math.round(latency / invocations),
    lastInvocationTime: now,
    successRate: successes + failures > 0 ? successes / (successes + failures) : 0,
    recordedAttempts: [...(before.recordedAttempts ?? []), ...fresh.map((a) => a.key)].slice(-MAX_RECORDED_ATTEMPTS),
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}
