import { sha256Hex } from '../../core/sha256.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'

/** Probe period when `healthCheck.intervalSeconds` is unset or not positive (purko's 5 minutes). */
export const DEFAULT_INTERVAL_SECONDS = 300
/** The probe round runs every minute, so nothing is probed more often than this. */
export const MIN_INTERVAL_SECONDS = 60
/** A day: longer intervals are clamped so a typo cannot silence a provider for a year. */
export const MAX_INTERVAL_SECONDS = 86_400
/** Longest wait between probes of a failing provider (unless its own interval is longer). */
export const BACKOFF_CAP_SECONDS = 1_800
/** Per-probe time limit when neither healthCheck.timeoutSeconds nor config.timeoutSeconds says otherwise. */
export const DEFAULT_TIMEOUT_SECONDS = 5
/** Upper bound of any probe's time limit. */
export const MAX_TIMEOUT_SECONDS = 30

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n))

/** Pure: the provider's probe period in seconds (default 300, clamped to [60, 86400]). */
export function intervalSecondsOf(provider: LLMProvider): number {
  const asked = provider.spec.healthCheck?.intervalSeconds
  return asked !== undefined && asked > 0 ? clamp(asked, MIN_INTERVAL_SECONDS, MAX_INTERVAL_SECONDS) : DEFAULT_INTERVAL_SECONDS
}

/** Pure: the probe's time limit in ms: healthCheck.timeoutSeconds, else config.timeoutSeconds, else 5 s; at most 30 s. */
export function probeTimeoutMsOf(provider: LLMProvider): number {
  const fromHealth = provider.spec.healthCheck?.timeoutSeconds
  const fromConfig = Number.parseInt(provider.spec.config?.timeoutSeconds ?? '', 10)
  const seconds = fromHealth !== undefined && fromHealth > 0 ? fromHealth : Number.isFinite(fromConfig) && fromConfig > 0 ? fromConfig : DEFAULT_TIMEOUT_SECONDS
  return Math.min(seconds, MAX_TIMEOUT_SECONDS) * 1000
}

/**
 * Pure: a spread of up to a tenth of the interval, derived from the uid alone, so every replica
 * and every tick computes the same due time while providers created together do not all fall
 * due in the same minute.
 */
export function jitterSeconds(uid: string, intervalSeconds: number): number {
  const span = Math.floor(intervalSeconds / 10)
  if (span <= 0) return 0
  return Number.parseInt(sha256Hex(uid).slice(0, 8), 16) % span
}

/**
 * Pure: the provider's slot, in seconds into each interval counted from the epoch, derived from
 * the uid alone: every replica and tick agrees on it, and providers created together are spread
 * evenly across the interval instead of all falling due in the same minute.
 */
export function slotSecondsOf(provider: LLMProvider): number {
  const interval = intervalSecondsOf(provider)
  return Number.parseInt(sha256Hex(provider.metadata.uid ?? `${provider.metadata.namespace}/${provider.metadata.name}`).slice(0, 8), 16) % interval
}

/**
 * Pure: the ISO time of the next probe after one at `now` that left `consecutiveFailures`
 * failures in a row. Healthy: the provider's next slot at least half an interval away, so in
 * steady state it is probed once per interval, at its own slot. Failing: the interval doubled
 * per failure, up to 30 minutes (or the interval when that is longer), plus up to a tenth of
 * that as uid-derived jitter.
 */
export function nextProbeAtAfter(provider: LLMProvider, consecutiveFailures: number, now: string): string {
  const interval = intervalSecondsOf(provider)
  const nowS = Math.floor(Date.parse(now) / 1000)
  if (consecutiveFailures <= 0) {
    const earliest = nowS + Math.ceil(interval / 2)
    const slot = slotSecondsOf(provider)
    const next = earliest + ((((slot - earliest) % interval) + interval) % interval)
    return new Date(next * 1000).toISOString()
  }
  return new Date((nowS + delaySecondsAfter(provider, consecutiveFailures)) * 1000).toISOString()
}

/** Pure: the wait in seconds after a failed probe (`consecutiveFailures` >= 1), jitter included. */
export function delaySecondsAfter(provider: LLMProvider, consecutiveFailures: number): number {
  const interval = intervalSecondsOf(provider)
  const base = Math.min(interval * 2 ** Math.min(Math.max(consecutiveFailures, 1) - 1, 20), Math.max(BACKOFF_CAP_SECONDS, interval))
  return base + jitterSeconds(provider.metadata.uid ?? `${provider.metadata.namespace}/${provider.metadata.name}`, base)
}

/**
 * Pure: whether a provider is due for a check at `now`: never checked, its spec changed since
 * (a spec change probes at once), or its next due time has come. A provider being deleted never is.
 */
export function isProbeDue(provider: LLMProvider, now: string): boolean {
  if (provider.metadata.deletionTimestamp) return false
  const status = provider.status
  if (!status?.nextProbeAt || !status.lastHealthCheck) return true
  if (status.observedGeneration !== provider.metadata.generation) return true
  return Date.parse(now) >= Date.parse(status.nextProbeAt)
}
