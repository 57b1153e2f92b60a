/**
 * What webhook-trigger reads to authenticate a call (the template, its secret's bytes, the
 * namespace's rules), remembered per process for a few seconds, so that verifying a call to a
 * known template costs no API call: a flood of forged signatures costs HMACs, not reads of the
 * API server. Misses (the API server's answer "not found" included) are remembered too; failures
 * are not. The clock comes in; nothing runs in the background.
 *
 * **Decision:** functions keep no state between requests, except this (and the rate limiter's
 * buckets): the webhook is the one function the internet calls, and authenticating there must
 * be cheaper than the call. A changed template or rotated secret is seen within `ttlSeconds`.
 */

/** How long an answer of the API server is used. */
export const DEFAULT_LOOKUP_TTL_SECONDS = 10

/** Entries kept at most; expired ones go first, then the oldest. */
const MAX_ENTRIES = 10_000

interface Entry {
  value: unknown
  expiresAt: number
}

export class LookupCache {
  private readonly entries = new Map<string, Entry>()

  constructor(private readonly ttlSeconds: number = DEFAULT_LOOKUP_TTL_SECONDS) {}

  /** The remembered value of `key`, or `load()`'s (remembered when it resolves). `miss` runs before a load. */
  async get<T>(key: string, nowMs: number, load: () => Promise<T>, miss?: () => void): Promise<T> {
    const hit = this.entries.get(key)
    if (hit && hit.expiresAt > nowMs) return hit.value as T
    miss?.()
    const value = await load()
    if (this.ttlSeconds > 0) this.remember(key, value, nowMs)
    return value
  }

  /** Whether `key` was remembered and has not expired. */
  has(key: string, nowMs: number): boolean {
    const hit = this.entries.get(key)
    return hit !== undefined && hit.expiresAt > nowMs
  }

  /** Remembers `value` under `key` from `nowMs` on. */
  remember(key: string, value: unknown, nowMs: number, ttlSeconds: number = this.ttlSeconds): void {
    if (this.entries.size >= MAX_ENTRIES && !this.entries.has(key)) this.evict(nowMs)
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt: nowMs + ttlSeconds * 1000 })
  }

  /** Entries currently held (for tests of the bound). */
  get size(): number {
    return this.entries.size
  }

  private evict(nowMs: number): void {
    for (const [key, e] of this.entries) if (e.expiresAt <= nowMs) this.entries.delete(key)
    for (const key of this.entries.keys()) {
      if (this.entries.size < MAX_ENTRIES) break
      this.entries.delete(key)
    }
  }
}

/** Pure: the cache lifetime from `KINETIC_WEBHOOK_CACHE_SECONDS` (0 turns it off); bad values give the default. */
export function lookupTtlFromEnv(env: Record<string, string | undefined>): number {
  const raw = env.KINETIC_WEBHOOK_CACHE_SECONDS
  if (raw === undefined || raw.trim() === '') return DEFAULT_LOOKUP_TTL_SECONDS
  const n = Number(raw)
  return Number.isFinite(n) && n >= 0 ? Math.min(n, 300) : DEFAULT_LOOKUP_TTL_SECONDS
}
