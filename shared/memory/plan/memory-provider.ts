import { UNCHANGED, type Transition } from '../../core/plan.js'
import type { MemoryProvider, MemoryProviderStatus } from '../../schemas/memoryprovider.js'

/** purko's lastError for the reserved types, kept word for word. */
export const NOT_IMPLEMENTED_ERROR = 'provider type not implemented (only builtin ships in Spec 34)'

/** Label of Kinetic's memory ConfigMaps (one per persistent Agent): the builtin store's entries. */
export const MEMORY_CONFIGMAP_LABELS = { 'purko.io/memory-type': 'summary' } as const

/** What the shell observed of the builtin store: how many memory ConfigMaps, or why it could not tell. */
export type MemoryStoreFacts = { entryCount: number } | { error: string }

/** A status refresh sooner than this after the last one, with nothing else changed, is skipped (duplicate events). */
const FRESH_MS = 60_000

/**
 * Pure: whether a MemoryProvider, as an event shows it, may need a check: never checked, or
 * its spec changed since. The echo of our own status write needs none.
 */
export function memoryProviderMayNeedWork(provider: MemoryProvider): boolean {
  if (provider.metadata.deletionTimestamp) return false
  const status = provider.status
  return !status?.lastChecked || status.observedGeneration !== provider.metadata.generation
}

/**
 * Pure: purko's check. Reserved types are unhealthy with purko's text; builtin is healthy with the
 * number of memory ConfigMaps across all namespaces, or unhealthy with the error (entryCount
 * then left as it was). `lastChecked = now`. UNCHANGED when only lastChecked would move and it
 * is less than a minute old (a duplicate delivery), so no write and no echo.
 */
export function planMemoryProvider(
  provider: MemoryProvider, facts: MemoryStoreFacts | null, now: string,
): { status: MemoryProviderStatus; transitions: Transition[] } | typeof UNCHANGED {
  const previous = provider.status ?? {}
  const generation = provider.metadata.generation
  const base = { lastChecked: now, ...(generation !== undefined ? { observedGeneration: generation } : {}) }
  let status: MemoryProviderStatus
  if (provider.spec.type !== 'builtin') {
    status = { ...previous, ...base, healthy: false, lastError: NOT_IMPLEMENTED_ERROR }
  } else if (!facts || 'error' in facts) {
    status = { ...previous, ...base, healthy: false, lastError: facts ? facts.error : 'memory store not initialized' }
  } else {
    status = { ...previous, ...base, healthy: true, lastError: '', entryCount: facts.entryCount }
  }
  const same = previous.healthy === status.healthy && previous.lastError === status.lastError
    && previous.entryCount === status.entryCount && previous.observedGeneration === status.observedGeneration
  if (same && previous.lastChecked && Date.parse(now) - Date.parse(previous.lastChecked) < FRESH_MS) return UNCHANGED
  const transitions: Transition[] = previous.healthy === status.healthy && previous.lastError === status.lastError ? [] : [
    status.healthy
      ? { kind: 'healthy', type: 'Normal', reason: 'MemoryProviderHealthy', message: `MemoryProvider ${provider.metadata.name} is healthy with ${status.entryCount ?? 0} entries`, record: true }
      : { kind: 'unhealthy', type: 'Warning', reason: 'MemoryProviderUnhealthy', message: `MemoryProvider ${provider.metadata.name} is unhealthy: ${status.lastError}`, record: true },
  ]
  return { status, transitions }
}
