// Process entry point of webhook-trigger: real dependencies, HTTP on $PORT.
import { realEngineDeps } from '../../shared/engine/deps.js'
import { serveFunction } from '../../shared/http/serve.js'
import { RateLimiter, rateLimitFromEnv } from '../../shared/webhook/rate-limit.js'
import { createApp } from './index.js'

const { kube, log, now } = realEngineDeps('webhook-trigger')
const limit = rateLimitFromEnv(process.env)
log.info({ ratePerSecond: limit.ratePerSecond, burst: limit.burst }, 'Webhook rate limit per template and process')
serveFunction(createApp({ kube, log, now, limiter: new RateLimiter(limit) }), log)
