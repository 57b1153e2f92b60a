/**
 * A token bucket per key (a template, or a namespace's rule route), per process: `rate` tokens a
 * second up to `burst`. Knative may run several pods, so the cluster-wide limit is the pod count
 * times this. The clock comes in; nothing runs in the background.
 */

/** How fast each key's bucket refills and how much it holds. `rate` 0 turns the limit off. */
export interface RateLimit {
  ratePerSecond: number
  burst: number
}

export const DEFAULT_RATE_LIMIT: RateLimit = { ratePerSecond: 10, burst: 20 }

/** Keys kept at most; beyond it the buckets that have refilled (and so say nothing) are dropped first. */
const MAX_KEYS = 10_000

/** Pure: the limit from the environment (`KINETIC_WEBHOOK_RATE`, `KINETIC_WEBHOOK_BURST`); bad values give the defaults. */
export function rateLimitFromEnv(env: Record<string, string | undefined>): RateLimit {
  const num = (v: string | undefined, fallback: number) => {
    if (v === undefined || v.trim() === '') return fallback
    const n = Number(v)
    return Number.isFinite(n) && n >= 0 ? n : fallback
  }
  const ratePerSecond = num(env.KINETIC_WEBHOOK_RATE, DEFAULT_RATE_LIMIT.ratePerSecond)
  const burst = Math.max(1, Math.floor(num(env.KINETIC_WEBHOOK_BURST, Math.max(DEFAULT_RATE_LIMIT.burst, ratePerSecond))))
  return { ratePerSecond, burst }
}

/** Either a token was taken, or how many seconds until one is there. */
export type Admission = { allowed: true } | { allowed: false; retryAfterSeconds: number }

interface Bucket {
  tokens: number
  at: number
}

/** Token buckets by key. */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>()

  constructor(private readonly limit: RateLimit = DEFAULT_RATE_LIMIT) {}

  /** Takes one token from the key's bucket at time `nowMs`, or says when to retry (whole seconds, at least 1). */
  take(key: string, nowMs: number): Admission {
    const { ratePerSecond } = this.limit
    if (ratePerSecond <= 0) return { allowed: true }
    const bucket = this.refilled(key, nowMs)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return { allowed: true }
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond)) }
  }

  /** Keys currently tracked (for tests of the bound). */
  get size(): number {
    return this.buckets.size
  }

  private refilled(key: string, nowMs: number): Bucket {
    const { ratePerSecond, burst } = this.limit
    let bucket = this.buckets.get(key)
    if (!bucket) {
      if (this.buckets.size >= MAX_KEYS) this.evict(nowMs)
      bucket = { tokens: burst, at: nowMs }
      this.buckets.set(key, bucket)
      return bucket
    }
    const elapsed = Math.max(0, nowMs - bucket.at) / 1000
    bucket.tokens = Math.min(burst, bucket.tokens + elapsed * ratePerSecond)
    bucket.at = nowMs
    return bucket
  }

  private evict(nowMs: number): void {
    const { ratePerSecond, burst } = this.limit
    for (const [key, b] of this.buckets) {
      if (b.tokens + (Math.max(0, nowMs - b.at) / 1000) * ratePerSecond >= burst) this.buckets.delete(key)
    }
    // Still full: drop the oldest keys (Map order is insertion order).
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < MAX_KEYS) break
      this.buckets.delete(key)
    }
  }
}
