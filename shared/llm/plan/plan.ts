import type { Transition } from '../../core/plan.js'
import { setCondition } from '../../core/conditions.js'
import type { Condition } from '../../schemas/condition.js'
import { MAX_DISCOVERED_MODELS, type LLMProvider, type LLMProviderPhase, type LLMProviderStatus } from '../../schemas/llmprovider.js'
import { CREDENTIALS_INVALID_MESSAGE, type CredentialsCheck } from './credentials.js'
import type { ProbeResult } from '../probe.js'
import { BACKOFF_CAP_SECONDS, nextProbeAtAfter } from './schedule.js'
import type { TargetProblem } from './target.js'

/** What the shell found out for one provider: the credentials check, then the probe (or why none ran). */
export interface ProviderFacts {
  credentials: CredentialsCheck
  /** `disabled`: healthCheck.enabled is false; `skipped`: the credentials are invalid. */
  probe: ProbeResult | TargetProblem | 'disabled' | 'skipped'
}

/** The next status and what to tell people about it. */
export interface ProviderPlan {
  status: LLMProviderStatus
  transitions: Transition[]
}

/** Condition types Kinetic writes besides purko's Ready and CredentialsValid. */
export const REACHABLE = 'Reachable'
export const MODEL_AVAILABLE = 'ModelAvailable'

type Checked = { status: Condition['status']; reason: string; message: string }

/**
 * Pure: whether `offered` includes `model`: exactly, or once a version suffix is set aside
 * (Vertex's `claude-sonnet-4@20250514` against `claude-sonnet-4`, Ollama's `llama3` against
 * `llama3:latest`).
 */
export function isModelOffered(model: string, offered: readonly string[]): boolean {
  const base = (name: string) => name.replace(/@.*$/, '').replace(/:latest$/, '')
  const wanted = base(model)
  return offered.some((name) => name === model || base(name) === wanted)
}

/**
 * Pure: the status after one check at `now`. Phases: Ready when the credentials hold and the
 * endpoint lists `spec.model` (or the health check is disabled: purko's presence check only);
 * Degraded when the endpoint answers but rate limits (429) or does not offer `spec.model`;
 * Error otherwise (missing, refused or forbidden credentials, unreachable, timeout, redirect to another
 * host, HTML or oversized answers, unusable endpoint). Ready=True only in phase Ready.
 */
export function planProvider(provider: LLMProvider, facts: ProviderFacts, now: string): ProviderPlan {
  const previous = provider.status ?? {}
  const { credentials, probe } = facts
  const type = provider.spec.type
  const purkoCount = provider.spec.models?.length ? provider.spec.models.length : 1

  let phase: LLMProviderPhase
  let ready: Checked
  let creds: Checked
  let reachable: Checked
  let modelCheck: Checked
  let availableModels = purkoCount
  let discovered: string[] | undefined
  let failed: boolean
  let notBefore: number | undefined

  const forbidden = credentials.reason === 'SecretForbidden'
  creds = credentials.valid
    ? { status: 'True', reason: credentials.reason, message: credentials.message }
    : { status: 'False', reason: forbidden ? 'SecretForbidden' : 'CredentialsInvalid', message: credentials.message }
  const notProbed = (why: string): Checked => ({ status: 'Unknown', reason: 'NotProbed', message: why })

  if (!credentials.valid || probe === 'skipped') {
    phase = 'Error'
    failed = true
    // purko's message for credentials that are missing or wrong; a refused read is Kinetic's rights, not the user's key.
    ready = forbidden
      ? { status: 'False', reason: 'SecretForbidden', message: credentials.message }
      : { status: 'False', reason: 'CredentialsInvalid', message: CREDENTIALS_INVALID_MESSAGE }
    reachable = notProbed(`Not probed: ${forbidden ? 'the credentials Secret may not be read' : CREDENTIALS_INVALID_MESSAGE.toLowerCase()}`)
    modelCheck = notProbed('Not probed: no model list')
  } else if (probe === 'disabled') {
    phase = 'Ready'
    failed = false
    ready = { status: 'True', reason: 'Ready', message: `Provider ${type} ready, ${purkoCount} models available` }
    reachable = { status: 'Unknown', reason: 'HealthCheckDisabled', message: 'Health check disabled (spec.healthCheck.enabled: false): credentials checked only, endpoint not probed' }
    modelCheck = notProbed('Health check disabled: no model list')
  } else if ('reason' in probe && probe.reason === 'EndpointInvalid') {
    phase = 'Error'
    failed = true
    ready = { status: 'False', reason: 'EndpointInvalid', message: probe.message }
    reachable = { status: 'False', reason: 'EndpointInvalid', message: probe.message }
    modelCheck = notProbed('Not probed: no usable endpoint')
  } else if ('ok' in probe && probe.ok) {
    availableModels = probe.models.length
    discovered = probe.models.slice(0, MAX_DISCOVERED_MODELS)
    reachable = { status: 'True', reason: 'ModelsListed', message: `Listed ${probe.models.length} models at ${probe.url}` }
    failed = false
    if (isModelOffered(provider.spec.model, probe.models)) {
      phase = 'Ready'
      modelCheck = { status: 'True', reason: 'ModelOffered', message: `Model ${provider.spec.model} is offered` }
      ready = { status: 'True', reason: 'Ready', message: `Provider ${type} ready, ${availableModels} models available` }
    } else {
      phase = 'Degraded'
      modelCheck = { status: 'False', reason: 'ModelNotOffered', message: `Model ${provider.spec.model} is not among the ${availableModels} models ${probe.url} lists` }
      ready = { status: 'False', reason: 'ModelNotOffered', message: modelCheck.message }
    }
  } else {
    const failure = probe as Extract<ProbeResult, { ok: false }>
    failed = true
    phase = failure.reason === 'RateLimited' ? 'Degraded' : 'Error'
    ready = { status: 'False', reason: failure.reason, message: failure.message }
    reachable = { status: 'False', reason: failure.reason, message: failure.message }
    modelCheck = notProbed('Not probed: no model list')
    if (failure.reason === 'CredentialsInvalid') creds = { status: 'False', reason: 'CredentialsInvalid', message: failure.message }
    // The endpoint's own Retry-After is honoured (up to the backoff cap) when longer than our backoff.
    if (failure.retryAfterSeconds !== undefined) notBefore = Date.parse(now) + Math.min(failure.retryAfterSeconds, BACKOFF_CAP_SECONDS) * 1000
    if (failure.reason === 'RateLimited' && previous.discoveredModels) {
      // Still answering, only busy: the last list is the best knowledge there is.
      discovered = previous.discoveredModels
      availableModels = previous.availableModels ?? previous.discoveredModels.length
    } else {
      availableModels = 0
    }
  }

  const generation = provider.metadata.generation
  let conditions = previous.conditions ?? []
  for (const [condType, c] of [['Ready', ready], ['CredentialsValid', creds], [REACHABLE, reachable], [MODEL_AVAILABLE, modelCheck]] as const) {
    conditions = setCondition(conditions, { type: condType, ...c, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  }
  const consecutiveFailures = failed ? (previous.consecutiveFailures ?? 0) + 1 : 0
  const scheduled = nextProbeAtAfter(provider, consecutiveFailures, now)
  const nextProbeAt = notBefore !== undefined && notBefore > Date.parse(scheduled) ? new Date(notBefore).toISOString() : scheduled
  const status: LLMProviderStatus = {
    phase,
    message: ready.message,
    lastHealthCheck: now,
    availableModels,
    conditions,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    ...(discovered ? { discoveredModels: discovered } : {}),
    consecutiveFailures,
    nextProbeAt,
  }
  return { status, transitions: transitionsFor(previous, status, ready) }
}

/** A transition only when the phase or the Ready reason moves; a repeat of the same result tells no one. */
function transitionsFor(previous: LLMProviderStatus, next: LLMProviderStatus, ready: Checked): Transition[] {
  const before = previous.conditions?.find((c) => c.type === 'Ready')
  if (previous.phase === next.phase && before?.reason === ready.reason) return []
  const data = { phase: next.phase, availableModels: next.availableModels }
  if (next.phase === 'Ready') {
    return [{ kind: 'probe.succeeded', type: 'Normal', reason: 'ProviderReady', message: ready.message, record: true, data }]
  }
  return [{ kind: 'probe.failed', type: 'Warning', reason: ready.reason, message: ready.message, record: true, data }]
}
