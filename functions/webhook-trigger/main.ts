// Process entry point of webhook-trigger: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { LookupCache, lookupTtlFromEnv } from '../../shared/webhook/lookup-cache.js'
import { RateLimiter, rateLimitFromEnv } from '../../shared/webhook/rate-limit.js'
import { createApp } from './index.js'

const { kube, log, now } = realEngineDeps('webhook-trigger')
const limit = rateLimitFromEnv(process.env)
const ttl = lookupTtlFromEnv(process.env)
log.info({ ratePerSecond: limit.ratePerSecond, burst: limit.burst, cacheSeconds: ttl }, 'Webhook rate limit per template and process (authenticated and refused calls apart)')
serveFunction(createApp({
  kube, log, now, limiter: new RateLimiter(limit), refusedLimiter: new RateLimiter(limit), cache: new LookupCache(ttl),
}), log)
