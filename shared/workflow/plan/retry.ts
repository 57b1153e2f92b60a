import type { WorkflowStep } from '../../schemas/workflow.js'
import type { StepResult } from './job-facts.js'
import { parseGoDuration } from '../../core/duration.js'

/** Longest wait between two attempts of a step. */
export const MAX_BACKOFF_SECONDS = 300
const DEFAULT_BACKOFF_SECONDS = 5

/**
 * Pure: whether a failed attempt is retried, and after how many seconds. `retryCount` is the
 * number of retries already made. `retryOn` entries match the failure class (`error`,
 * `timeout`, `output`) or a case-insensitive substring of the error; empty retries everything.
 */
export function retryDecision(step: WorkflowStep, retryCount: number, failure: StepResult & { ok: false }):
  { retry: true; delaySeconds: number } | { retry: false } {
  const policy = step.retryPolicy
  if (!policy || retryCount >= (policy.maxRetries ?? 3)) return { retry: false }
  const retryOn = policy.retryOn ?? []
  const error = failure.error.toLowerCase()
  const matches = retryOn.length === 0 || retryOn.some((p) => p === failure.class || error.includes(p.toLowerCase()))
  if (!matches) return { retry: false }
  return { retry: true, delaySeconds: backoffSeconds(step, retryCount) }
}

/** Pure: the wait before retry number `retryCount + 1` (exponential unless `backoff: fixed`). */
export function backoffSeconds(step: WorkflowStep, retryCount: number): number {
  const policy = step.retryPolicy
  const strategy = policy?.backoff?.trim()
  const fromDuration = strategy && strategy !== 'fixed' && strategy !== 'exponential' ? parseGoDuration(strategy) : null
  const base = policy?.backoffSeconds ?? fromDuration ?? DEFAULT_BACKOFF_SECONDS
  const delay = strategy === 'fixed' ? base : base * 2 ** retryCount
  return Math.min(MAX_BACKOFF_SECONDS, delay)
}
