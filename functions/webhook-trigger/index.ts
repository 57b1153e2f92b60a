// Serves: POST /api/trigger/{namespace}[/{workflow}], purko's webhook trigger (a dashboard route
// that runs templates), called from outside the cluster by PagerDuty, GitHub, Slack or anyone.
// No Trigger.
// Reads: the template Workflow, the namespace's `trigger-rules` ConfigMap, the template's webhook Secret.
// Writes: one run Workflow per accepted call (one per delivery id), Warning Events on refused calls.
import type { Context, Hono } from 'hono'
import { ConflictError, ForbiddenError, RefusedError, TransientError, apiMessage } from '../../shared/core/errors.js'
import { baseApp } from '../../shared/http/app.js'
import type { FunctionKube } from './kube-verbs.js'
import type { Logger } from '../../shared/log.js'
import { kubernetesEventFor } from '../../shared/core/kube-events.js'
import { ANNOTATION_DELIVERY_KEY, ANNOTATION_WORKFLOW_TEMPLATE } from '../../shared/schemas/labels.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { isTemplate, randomSuffix } from '../../shared/template/run-builder.js'
import { notGranted, planAuth, secretValue, verifyRequest, type Acceptance, type Refusal } from '../../shared/webhook/auth.js'
import { detectSource, invalidSourceHeader, normalize, type Normalized, type Payload } from '../../shared/webhook/normalize.js'
import { deliveryKey } from '../../shared/webhook/delivery-key.js'
import { LookupCache } from '../../shared/webhook/lookup-cache.js'
import { DEFAULT_RATE_LIMIT, RateLimiter, type RateLimit } from '../../shared/webhook/rate-limit.js'
import {
  deliveryIdOf, isObjectName, MAX_BODY_BYTES, MAX_RUN_BYTES, parsePayload, parseTriggerPath, runBytes, webhookRun,
} from '../../shared/webhook/request.js'
import { INTENT_WORKFLOW, matchRule, parseRules, RULES_CONFIGMAP } from '../../shared/webhook/rules.js'
import { GITHUB_SIGNATURE_HEADER, KINETIC_SIGNATURE_HEADER, type SignatureHeaders } from '../../shared/webhook/signature.js'
import { readBody } from '../../shared/http/read-body.js'

export interface WebhookTriggerDeps {
  kube: FunctionKube
  log: Logger
  now: () => Date
  /** Per-process token buckets of authenticated calls, one per template. */
  limiter: RateLimiter
  /**
   * Per-process token buckets of calls that do not authenticate (or name no template), one per
   * template path, apart from `limiter`: a flood of forged calls never makes genuine ones 429.
   */
  refusedLimiter?: RateLimiter
  /** One per-process bucket of API reads a cache miss costs (an unknown name costs one each). */
  lookupLimiter?: RateLimiter
  /** The template, its secret and the rules, remembered a few seconds (see LookupCache). */
  cache?: LookupCache
  /** The run name's tail when the sender gives no delivery id. */
  randomSuffix?: () => string
}

/** Reads of the API server a cache miss may cost, per process. */
export const DEFAULT_LOOKUP_LIMIT: RateLimit = { ratePerSecond: 20, burst: 40 }

/** A random run name is tried this many times before giving up (a collision of 8 hex digits). */
const NAME_ATTEMPTS = 3

/**
 * The answer to a call that does not authenticate: the same bytes whatever went wrong, an
 * unknown template included, so a caller cannot tell which templates exist.
 */
const UNAUTHORIZED = { error: 'unauthorized' } as const

/** The lookup budget is spent: answered 429 before any API call. */
class LookupsExhausted extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('webhook lookup budget exhausted')
  }
}

interface Limits {
  accepted: RateLimiter
  refused: RateLimiter
  lookups: RateLimiter
  cache: LookupCache
}

/** The webhook-trigger function: purko's trigger endpoint, authenticated, rate- and size-limited. */
export function createApp(deps: WebhookTriggerDeps): Hono {
  const app = baseApp(deps.log)
  const limits: Limits = {
    accepted: deps.limiter,
    refused: deps.refusedLimiter ?? new RateLimiter(DEFAULT_RATE_LIMIT),
    lookups: deps.lookupLimiter ?? new RateLimiter(DEFAULT_LOOKUP_LIMIT),
    cache: deps.cache ?? new LookupCache(),
  }
  const handler = (c: Context) => trigger(deps, limits, c).catch((err: unknown) => failure(deps.log, c, err))
  app.all('/api/trigger', handler)
  app.all('/api/trigger/*', handler)
  return app
}

async function trigger(deps: WebhookTriggerDeps, limits: Limits, c: Context): Promise<Response> {
  if (c.req.method !== 'POST') return c.json({ error: 'POST required' }, 405, { Allow: 'POST' })
  const target = parseTriggerPath(c.req.path)
  if ('error' in target) return c.json({ error: target.error }, 400)

  const raw = await readBody(c.req.raw, MAX_BODY_BYTES)
  if (raw === 'too-large') return c.json({ error: `body larger than ${MAX_BODY_BYTES} bytes (1 MiB)` }, 413)
  const parsed = parsePayload(raw)
  if ('error' in parsed) return c.json({ error: parsed.error }, 400)
  const { payload } = parsed
  const sourceHeader = c.req.header('x-trigger-source')
  const badSource = invalidSourceHeader(sourceHeader)
  if (badSource) return c.json({ error: badSource }, 400)
  const delivery = deliveryIdOf((name) => c.req.header(name))
  if ('error' in delivery) return c.json({ error: delivery.error }, 400)

  const normalized = normalize(detectSource(payload, sourceHeader), payload)
  const log = deps.log.child({ namespace: target.namespace, source: normalized.source, ...(delivery.id ? { deliveryId: delivery.id } : {}) })
  const now = deps.now()
  const read = cachedReader(limits, now.getTime())

  // The template: named by the path, or by the first rule that matches the payload.
  let workflow = target.workflow
  let route = 'explicit'
  if (workflow === undefined) {
    const configMap = await read(`rules:${target.namespace}`, () => deps.kube.getConfigMap(target.namespace, RULES_CONFIGMAP))
    const rules = parseRules(configMap?.data)
    if (rules.invalid) log.warn({ configMap: RULES_CONFIGMAP, problem: rules.invalid }, 'Rules ConfigMap does not decode; using the default rules')
    const rule = matchRule(rules.rules, normalized)
    if (!rule) return c.json({ error: 'no matching rule found' }, 404)
    if (rule.workflow === INTENT_WORKFLOW) return c.json({ error: 'the _intent fallback requires Purko Pro' }, 501)
    workflow = rule.workflow
    route = `rule:${rule.name}`
  }
  const name = workflow
  const key = `${target.namespace}/${name}`
  const template = isObjectName(name) ? await read(`template:${key}`, () => deps.kube.getWorkflow(target.namespace, name)) : null

  const headers: SignatureHeaders = { github: c.req.header(GITHUB_SIGNATURE_HEADER), kinetic: c.req.header(KINETIC_SIGNATURE_HEADER) }
  const auth = template ? await authenticate(deps, read, template, raw, headers, now) : null
  if (!template || !auth || auth.outcome === 'refuse') {
    // Forged, unsigned or misdirected calls have their own buckets: they never use up a template's.
    const slowed = limits.refused.take(key, now.getTime())
    if (!slowed.allowed) return tooMany(c, slowed.retryAfterSeconds)
    if (template && auth?.outcome === 'refuse') {
      log.warn({ name, reason: auth.reason, problem: auth.message }, 'Refused a webhook call')
      await warn(deps, limits.cache, log, template, auth)
    } else {
      log.info({ name, route }, 'Refused a webhook call for a template that does not exist')
    }
    return c.json(UNAUTHORIZED, 401)
  }
  const admission = limits.accepted.take(key, now.getTime())
  if (!admission.allowed) return tooMany(c, admission.retryAfterSeconds)
  if (auth.scheme === 'unauthenticated') {
    log.warn({ name }, 'Accepted an unauthenticated webhook call (spec.trigger.webhook.allowUnauthenticated: true, unsafe)')
  }
  if (!isTemplate(template)) {
    return c.json({ error: `workflow "${name}" is not a template: annotate it purko.io/template: "true" (or give it a schedule) to trigger runs of it`, route }, 400)
  }

  const dedup = deliveryKey(auth, raw, delivery.id, now)
  return createRun(deps, c, log, {
    template, payload, normalized, route, auth,
    ...(delivery.id ? { deliveryId: delivery.id } : {}), ...(dedup ? { deliveryKey: dedup } : {}),
  })
}

function tooMany(c: Context, retryAfterSeconds: number): Response {
  return c.json({ error: 'rate limit exceeded', retryAfterSeconds }, 429, { 'Retry-After': String(retryAfterSeconds) })
}

type Reader = <T>(key: string, load: () => Promise<T>) => Promise<T>

/** Reads through the cache; a miss spends one token of the lookup budget first (429 when none is left). */
function cachedReader(limits: Limits, nowMs: number): Reader {
  return (key, load) => limits.cache.get(key, nowMs, load, () => {
    const budget = limits.lookups.take('lookups', nowMs)
    if (!budget.allowed) throw new LookupsExhausted(budget.retryAfterSeconds)
  })
}

interface Accepted {
  template: Workflow
  payload: Payload
  normalized: Normalized
  route: string
  auth: Acceptance
  /** The sender's delivery id header, recorded on the run. */
  deliveryId?: string
  /** What names the run and finds a duplicate: derived from what the signature covers (deliveryKey). */
  deliveryKey?: string
}

async function createRun(deps: WebhookTriggerDeps, c: Context, log: Logger, a: Accepted): Promise<Response> {
  const namespace = a.template.metadata.namespace ?? ''
  const template = a.template.metadata.name ?? ''
  const answer = (status: 'triggered' | 'duplicate', run: string, code: 200 | 201) =>
    c.json({ status, run, namespace, template, route: a.route, source: a.normalized.source, normalized: a.normalized }, code)

  for (let attempt = 1; ; attempt++) {
    const run = webhookRun({ ...a, randomSuffix: (deps.randomSuffix ?? randomSuffix)() })
    const name = run.metadata.name ?? ''
    const bytes = runBytes(run)
    if (bytes > MAX_RUN_BYTES) {
      return c.json({ error: `the run would be ${bytes} bytes, more than ${MAX_RUN_BYTES}: the payload is copied into the input of every step without one; send a smaller payload` }, 413)
    }
    let created: Workflow | 'exists'
    try {
      created = await deps.kube.createWorkflow(run)
    } catch (err) {
      if (!(err instanceof RefusedError)) throw err
      log.warn({ name: template, run: name, problem: err.message }, 'The API server refused the run')
      return c.json({ error: 'the API server refused the run', message: err.message }, 422)
    }
    if (created !== 'exists') {
      log.info({ name: template, run: name, route: a.route, auth: a.auth.scheme }, 'Triggered a run')
      return answer('triggered', name, 201)
    }
    if (a.deliveryKey !== undefined) {
      const existing = await deps.kube.getWorkflow(namespace, name)
      const annotations = existing?.metadata.annotations ?? {}
      // Gone again (pruned) still means this delivery made its run.
      if (!existing || (annotations[ANNOTATION_DELIVERY_KEY] === a.deliveryKey && annotations[ANNOTATION_WORKFLOW_TEMPLATE] === template)) {
        log.info({ name: template, run: name }, 'Delivery already made its run')
        return answer('duplicate', name, 200)
      }
      return c.json({ error: `run name "${name}" is taken by another Workflow` }, 409)
    }
    if (attempt >= NAME_ATTEMPTS) return c.json({ error: `could not find a free run name for "${template}"` }, 409)
  }
}

/** The verdict on a call: from the template alone, or after reading its Secret (remembered a few seconds). */
async function authenticate(deps: WebhookTriggerDeps, read: Reader, template: Workflow, raw: Uint8Array, headers: SignatureHeaders, now: Date): Promise<Acceptance | Refusal> {
  const plan = planAuth(template, headers)
  if (plan.outcome !== 'verify') return plan
  const secret = await read(`secret:${plan.namespace}/${plan.name}/${plan.key}`, async () => {
    try {
      return secretValue(await deps.kube.getSecret(plan.namespace, plan.name), plan)
    } catch (err) {
      if (!(err instanceof ForbiddenError)) throw err
      return notGranted(plan)
    }
  })
  if (!(secret instanceof Uint8Array)) return secret
  return verifyRequest(secret, raw, headers, now)
}

/**
 * A Warning Event on the template saying why a call was refused. At most one per reason and
 * message a minute (the name is derived from them and the minute), so a flood of bad calls
 * writes few Events (and this process asks the API server once); best effort, a failure to record it does not change the answer.
 */
async function warn(deps: WebhookTriggerDeps, cache: LookupCache, log: Logger, template: Workflow, refusal: Refusal): Promise<void> {
  const now = deps.now()
  const minute = Math.floor(now.getTime() / 60_000)
  // The Event of this minute was written by this process: a flood costs no API call.
  const seen = `warned:${template.metadata.uid ?? ''}|${minute}`
  if (cache.has(seen, now.getTime())) return
  cache.remember(seen, true, now.getTime(), 60)
  const event = kubernetesEventFor({ kind: 'Workflow', metadata: template.metadata }, `${template.metadata.uid ?? ''}|webhook|${minute}`,
    { type: 'Warning', reason: refusal.reason, message: refusal.message }, now.toISOString())
  try {
    await deps.kube.createEvent(event)
  } catch (err) {
    log.warn({ name: template.metadata.name, reason: refusal.reason, err: (err as Error).message }, 'Could not record the refusal as an Event')
  }
}


/**
 * Unexpected failures: an API outage or a lost race is 503 (the sender may retry), anything
 * else 500; neither tells an outside caller more than that.
 */
function failure(log: Logger, c: Context, err: unknown): Response {
  if (err instanceof LookupsExhausted) {
    log.warn({ path: c.req.path }, 'Webhook lookups over budget; answered 429')
    return tooMany(c, err.retryAfterSeconds)
  }
  const e = err instanceof Error ? err : new Error(String(err))
  const cause = e.cause instanceof Error ? e.cause.message : undefined
  if (err instanceof TransientError || err instanceof ConflictError) {
    log.warn({ path: c.req.path, error: e.name, reason: e.message, cause }, 'The Kubernetes API is unavailable; answered 503')
    return c.json({ error: 'the Kubernetes API is unavailable; retry later' }, 503, { 'Retry-After': '5' })
  }
  log.error({ path: c.req.path, error: e.name, reason: e.message, cause, apiMessage: apiMessage(err) }, 'Webhook call failed unexpectedly')
  return c.json({ error: 'internal error' }, 500)
}
