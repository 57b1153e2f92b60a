import { StepError } from './errors.js'
import { costUsd, type Price } from './pricing.js'

/**
 * The budget guardrails, enforced by the agent loop rather than advised to the model:
 * MAX_TOOL_CALLS, COST_LIMIT_USD and MAX_EXECUTION_TIME. Each trip throws a StepError whose
 * reason names the guardrail. CONTENT_FILTERS live in content-filters.ts.
 */

/** Token and cost totals so far. */
export interface Usage {
  tokensIn: number
  tokensOut: number
  costUsd: number
  toolCalls: number
}

/** Limits for one run; 0 cost means unlimited. */
export interface BudgetLimits {
  maxToolCalls: number
  costLimitUsd: number
  price: Price
  /** The most output tokens one model call may produce (MODEL_MAX_TOKENS). */
  maxTokensPerCall: number
}

/** Counts tokens, cost and tool calls, and refuses the step that would pass a limit. */
export class Budget {
  readonly usage: Usage = { tokensIn: 0, tokensOut: 0, costUsd: 0, toolCalls: 0 }
  constructor(private readonly limits: BudgetLimits) {}

  /**
   * Throws CostLimit before a model call whose worst case (the estimated input plus a full
   * MODEL_MAX_TOKENS answer) would take the total past COST_LIMIT_USD, so the real spend stays
   * under the limit as long as the input estimate holds.
   */
  beforeModelCall(estimatedTokensIn: number): void {
    if (this.limits.costLimitUsd <= 0) return
    const worst = costUsd(this.limits.price, estimatedTokensIn, this.limits.maxTokensPerCall)
    if (this.usage.costUsd + worst > this.limits.costLimitUsd) {
      throw new StepError(
        'CostLimit',
        `Cost limit: the next model call could cost up to $${worst.toFixed(4)}, which would take the total of ` +
          `$${this.usage.costUsd.toFixed(4)} past the limit of $${this.limits.costLimitUsd.toFixed(2)}; stopped before calling`,
      )
    }
  }

  /** Adds a call's real usage; throws CostLimit if the input estimate was short and the limit is now passed. */
  afterModelCall(tokensIn: number, tokensOut: number): void {
    this.usage.tokensIn += tokensIn
    this.usage.tokensOut += tokensOut
    this.usage.costUsd += costUsd(this.limits.price, tokensIn, tokensOut)
    if (this.limits.costLimitUsd > 0 && this.usage.costUsd > this.limits.costLimitUsd) {
      throw new StepError(
        'CostLimit',
        `Cost limit exceeded: $${this.usage.costUsd.toFixed(4)} > $${this.limits.costLimitUsd.toFixed(2)}`,
      )
    }
  }

  /** Counts one tool call the model asked for; throws MaxToolCalls for the call past MAX_TOOL_CALLS. */
  beforeToolCall(name: string): void {
    if (this.usage.toolCalls >= this.limits.maxToolCalls) {
      throw new StepError(
        'MaxToolCalls',
        `Tool call limit reached: the model asked for '${name}' after ${this.usage.toolCalls} of ${this.limits.maxToolCalls} allowed tool calls`,
      )
    }
    this.usage.toolCalls += 1
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1

/** The run's time limit: a signal for in-flight requests and a check between steps. */
export interface Deadline {
  readonly signal: AbortSignal
  /** Throws MaxExecutionTime once the limit has passed on the run's clock. */
  check(): void
  /** The StepError to report when an in-flight request was cut off by the signal. */
  error(): StepError
  dispose(): void
}

/** A deadline `ms` after `now()`; none (never trips) when `ms` is undefined. */
export function startDeadline(ms: number | undefined, now: () => number): Deadline {
  const controller = new AbortController()
  const started = now()
  const error = () =>
    new StepError('MaxExecutionTime', `Execution time limit of ${ms === undefined ? 0 : ms / 1000}s (MAX_EXECUTION_TIME) reached`)
  // setTimeout fires at once for delays past 2^31-1 ms (~24.8 days); such limits rely on check() alone.
  const timer = ms === undefined || ms > MAX_TIMER_MS ? undefined : setTimeout(() => controller.abort(error()), ms)
  return {
    signal: controller.signal,
    check() {
      if (ms !== undefined && (controller.signal.aborted || now() - started >= ms)) throw error()
    },
    error,
    dispose() {
      if (timer !== undefined) clearTimeout(timer)
    },
  }
}
