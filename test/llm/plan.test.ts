import { describe, expect, it } from 'vitest'
import { checkCredentials, type SecretLookup } from '../../shared/llm/plan/credentials.js'
import { isModelOffered, planProvider, type ProviderFacts } from '../../shared/llm/plan/plan.js'
import { delaySecondsAfter, intervalSecondsOf, isProbeDue, jitterSeconds, nextProbeAtAfter, probeTimeoutMsOf } from '../../shared/llm/plan/schedule.js'
import { LLMProviderSchema, type LLMProvider } from '../../shared/schemas/llmprovider.js'

const NOW = '2026-01-01T00:00:00.000Z'
function aProvider(spec: Record<string, unknown> = {}, status?: Record<string, unknown>, meta: Record<string, unknown> = {}): LLMProvider {
  return LLMProviderSchema.parse({
    metadata: { name: 'openai', namespace: 'purko-system', uid: 'uid-1', generation: 1, ...meta },
    spec: { type: 'openai', model: 'gpt-4o', credentials: { secretRef: 'openai-key' }, ...spec },
    ...(status ? { status } : {}),
  })
}
const found: SecretLookup = { state: 'found', value: 'sk-x' }
const ok = (models: string[]): ProviderFacts['probe'] => ({ ok: true, models, url: 'https://api.openai.com/v1/models' })
const facts = (p: LLMProvider, lookup: SecretLookup, probe: ProviderFacts['probe']): ProviderFacts => ({ credentials: checkCredentials(p, lookup), probe })
const cond = (status: { conditions?: Array<{ type: string }> }, type: string) => status.conditions?.find((c) => c.type === type)

describe('the credentials check (purko\'s)', () => {
  it('TestLLMProviderReconcileNilCredentials: ollama without credentials is valid, "No credentials required"', () => {
    const p = aProvider({ type: 'ollama', model: 'qwen3:8b', credentials: undefined })
    expect(checkCredentials(p, { state: 'none' })).toEqual({ valid: true, reason: 'NoCredentialsRequired', message: 'No credentials required' })
    const plan = planProvider(p, { credentials: checkCredentials(p, { state: 'none' }), probe: 'disabled' }, NOW)
    expect(cond(plan.status, 'CredentialsValid')).toMatchObject({ status: 'True', reason: 'NoCredentialsRequired', message: 'No credentials required' })
  })

  it.each([
    ['a custom provider with an empty credentials block (purko: SecretFound, empty name)', { type: 'custom', credentials: {} }, { state: 'none' }, { valid: true, reason: 'SecretFound', message: 'Credentials loaded from ' }],
    ['a Secret with the api-key key', {}, found, { valid: true, reason: 'SecretFound', message: 'Credentials loaded from openai-key', secret: 'sk-x' }],
    ['an openai provider without a secretRef', { credentials: undefined }, { state: 'none' }, { valid: false, reason: 'CredentialsInvalid', message: 'Credentials not found or invalid: a openai provider needs spec.credentials.secretRef' }],
    ['a missing Secret', {}, { state: 'missing' }, { valid: false, reason: 'CredentialsInvalid', message: 'Credentials not found or invalid: Secret openai-key not found in namespace purko-system' }],
    ['a Secret without the key', {}, { state: 'found' }, { valid: false, reason: 'CredentialsInvalid', message: 'Credentials not found or invalid: Secret openai-key has no key api-key' }],
    ['a vertex-ai Secret without credentials.json', { type: 'vertex-ai' }, { state: 'found' }, { valid: false, reason: 'CredentialsInvalid', message: 'Credentials not found or invalid: Secret openai-key has no key credentials.json' }],
  ] as const)('%s', (_, spec, lookup, expected) => {
    expect(checkCredentials(aProvider(spec as Record<string, unknown>), lookup as SecretLookup)).toEqual(expected)
  })
})

describe('a credentials Secret llmprovider-changed may not read (403)', () => {
  const GRANT = 'kubectl create role kinetic-llmprovider-team-key -n team-a --verb=get --resource=secrets --resource-name=team-key && '
    + 'kubectl create rolebinding kinetic-llmprovider-team-key -n team-a --role=kinetic-llmprovider-team-key --serviceaccount=kinetic-system:llmprovider-changed'
  const team = aProvider({ credentials: { secretRef: 'team-key' } }, undefined, { namespace: 'team-a' })

  it('says forbidden, not missing, and gives the grant command in Ready, CredentialsValid, the message and the Warning Event', () => {
    const message = `Reading Secret team-a/team-key is forbidden to llmprovider-changed (no Role in team-a grants it get); allow it with: ${GRANT}`
    expect(checkCredentials(team, { state: 'forbidden' })).toEqual({ valid: false, reason: 'SecretForbidden', message })
    const plan = planProvider(team, facts(team, { state: 'forbidden' }, 'skipped'), NOW)
    expect(plan.status).toMatchObject({ phase: 'Error', message })
    expect(cond(plan.status, 'Ready')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message })
    expect(cond(plan.status, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message })
    expect(JSON.stringify(plan.status)).not.toContain('not found or invalid')
    expect(plan.transitions).toEqual([expect.objectContaining({ type: 'Warning', reason: 'SecretForbidden', message })])
  })
})

describe('planProvider', () => {
  it('Ready with the discovered count and names when the endpoint lists spec.model', () => {
    const p = aProvider()
    const { status, transitions } = planProvider(p, facts(p, found, ok(['gpt-4o', 'gpt-4o-mini'])), NOW)
    expect(status).toMatchObject({
      phase: 'Ready', message: 'Provider openai ready, 2 models available', availableModels: 2, discoveredModels: ['gpt-4o', 'gpt-4o-mini'],
      lastHealthCheck: NOW, observedGeneration: 1, consecutiveFailures: 0,
    })
    expect(status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'True', 'Ready'], ['CredentialsValid', 'True', 'SecretFound'], ['Reachable', 'True', 'ModelsListed'], ['ModelAvailable', 'True', 'ModelOffered'],
    ])
    expect(transitions).toEqual([expect.objectContaining({ kind: 'probe.succeeded', type: 'Normal', reason: 'ProviderReady', record: true })])
  })

  it('keeps at most 100 names but counts, and matches spec.model against, them all', () => {
    const p = aProvider({ model: 'm149' })
    const models = Array.from({ length: 150 }, (_, i) => `m${i}`)
    const { status } = planProvider(p, facts(p, found, ok(models)), NOW)
    expect(status.discoveredModels).toHaveLength(100)
    expect(status.availableModels).toBe(150)
    expect(status.phase).toBe('Ready')
  })

  it.each([
    ['spec.model not offered', ok(['gpt-3.5']), 'Degraded', 'ModelNotOffered', 'Model gpt-4o is not among the 1 models https://api.openai.com/v1/models lists'],
    ['a 429', { ok: false, reason: 'RateLimited', message: 'rate' }, 'Degraded', 'RateLimited', 'rate'],
    ['a 401', { ok: false, reason: 'CredentialsInvalid', message: 'refused' }, 'Error', 'CredentialsInvalid', 'refused'],
    ['no answer', { ok: false, reason: 'Timeout', message: 'slow' }, 'Error', 'Timeout', 'slow'],
    ['a bad endpoint', { reason: 'EndpointInvalid', message: 'spec.endpoint is not a URL' }, 'Error', 'EndpointInvalid', 'spec.endpoint is not a URL'],
  ] as const)('%s: phase %s, Ready=False with reason %s', (_, probe, phase, reason, message) => {
    const p = aProvider()
    const { status } = planProvider(p, facts(p, found, probe as ProviderFacts['probe']), NOW)
    expect(status.phase).toBe(phase)
    expect(cond(status, 'Ready')).toMatchObject({ status: 'False', reason, message })
    expect(status.message).toBe(message)
  })

  it('a 401 turns CredentialsValid False; missing credentials are purko\'s Error with its message, and nothing is probed', () => {
    const p = aProvider()
    const refused = planProvider(p, facts(p, found, { ok: false, reason: 'CredentialsInvalid', message: 'https://x/models refused the credentials (HTTP 401)' }), NOW).status
    expect(cond(refused, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'CredentialsInvalid', message: 'https://x/models refused the credentials (HTTP 401)' })
    const missing = planProvider(p, facts(p, { state: 'missing' }, 'skipped'), NOW).status
    expect(missing).toMatchObject({ phase: 'Error', message: 'Credentials not found or invalid', availableModels: 1 })
    expect(cond(missing, 'Ready')).toMatchObject({ status: 'False', reason: 'CredentialsInvalid', message: 'Credentials not found or invalid' })
    expect(cond(missing, 'Reachable')).toMatchObject({ status: 'Unknown', reason: 'NotProbed' })
  })

  it('healthCheck.enabled false: purko\'s presence check only, and a condition says so', () => {
    const p = aProvider({ healthCheck: { enabled: false }, models: [{ name: 'a' }, { name: 'b' }] })
    const { status } = planProvider(p, facts(p, found, 'disabled'), NOW)
    expect(status).toMatchObject({ phase: 'Ready', message: 'Provider openai ready, 2 models available', availableModels: 2 })
    expect(cond(status, 'Reachable')).toMatchObject({ status: 'Unknown', reason: 'HealthCheckDisabled', message: 'Health check disabled (spec.healthCheck.enabled: false): credentials checked only, endpoint not probed' })
  })

  it('a rate-limited provider keeps its last model list', () => {
    const p = aProvider({}, { phase: 'Ready', availableModels: 2, discoveredModels: ['gpt-4o', 'x'] })
    const { status } = planProvider(p, facts(p, found, { ok: false, reason: 'RateLimited', message: 'busy' }), NOW)
    expect(status).toMatchObject({ phase: 'Degraded', availableModels: 2, discoveredModels: ['gpt-4o', 'x'], consecutiveFailures: 1 })
  })

  it('honours a Retry-After longer than its own backoff, up to 30 minutes', () => {
    const p = aProvider()
    const wait = (retryAfterSeconds: number) => (Date.parse(planProvider(p, facts(p, found, { ok: false, reason: 'RateLimited', message: 'busy', retryAfterSeconds }), NOW).status.nextProbeAt!) - Date.parse(NOW)) / 1000
    expect(wait(900)).toBe(900)
    expect(wait(86_400)).toBe(1800)
    expect(wait(1)).toBeGreaterThanOrEqual(300) // our backoff is longer
  })

  it('tells people only when the phase or the reason moves', () => {
    const p = aProvider()
    const first = planProvider(p, facts(p, found, { ok: false, reason: 'Timeout', message: 'slow' }), NOW)
    expect(first.transitions).toEqual([expect.objectContaining({ kind: 'probe.failed', type: 'Warning', reason: 'Timeout', record: true })])
    const again = planProvider({ ...p, status: first.status }, facts(p, found, { ok: false, reason: 'Timeout', message: 'slow' }), NOW)
    expect(again.transitions).toEqual([])
    expect(again.status.consecutiveFailures).toBe(2)
  })

  it('is idempotent: its own output is not due again until nextProbeAt', () => {
    const p = aProvider()
    const { status } = planProvider(p, facts(p, found, ok(['gpt-4o'])), NOW)
    const after = { ...p, status }
    expect(isProbeDue(after, NOW)).toBe(false)
    expect(isProbeDue(after, status.nextProbeAt!)).toBe(true)
    expect(isProbeDue({ ...after, metadata: { ...after.metadata, generation: 2 } }, NOW)).toBe(true) // a spec change probes at once
  })

  it.each([
    ['gpt-4o', ['gpt-4o'], true],
    ['claude-sonnet-4@20250514', ['claude-sonnet-4'], true],
    ['llama3', ['llama3:latest'], true],
    ['gpt-4', ['gpt-4o'], false],
  ] as const)('model %s among %j: %s', (model, offered, expected) => {
    expect(isModelOffered(model, offered)).toBe(expected)
  })
})

describe('the probe schedule', () => {
  it('jitter is derived from the uid alone: the same for every replica, spread across providers, below a tenth of the interval', () => {
    expect(jitterSeconds('uid-1', 300)).toBe(jitterSeconds('uid-1', 300))
    const spread = new Set(Array.from({ length: 50 }, (_, i) => jitterSeconds(`uid-${i}`, 300)))
    expect(spread.size).toBeGreaterThan(10)
    for (const j of spread) expect(j).toBeGreaterThanOrEqual(0), expect(j).toBeLessThan(30)
  })

  it('backs off exponentially while failing, capped at 30 minutes', () => {
    const p = aProvider({}, undefined, { uid: 'u' })
    const bases = [1, 2, 3, 4, 5, 50].map((n) => delaySecondsAfter(p, n))
    expect(bases[0]).toBeGreaterThanOrEqual(300); expect(bases[0]).toBeLessThan(330)
    expect(bases[1]).toBeGreaterThanOrEqual(600); expect(bases[1]).toBeLessThan(660)
    expect(bases[2]).toBeGreaterThanOrEqual(1200); expect(bases[2]).toBeLessThan(1320)
    for (const d of bases.slice(3)) expect(d).toBeGreaterThanOrEqual(1800), expect(d).toBeLessThan(1980)
  })

  it('a healthy provider is next probed at its own slot, between half an interval and an interval and a half away; providers created together spread over the interval', () => {
    const at = (uid: string) => (Date.parse(nextProbeAtAfter(aProvider({}, undefined, { uid }), 0, NOW)) - Date.parse(NOW)) / 1000
    const waits = Array.from({ length: 500 }, (_, i) => at(`uid-${i}`))
    for (const w of waits) expect(w).toBeGreaterThanOrEqual(150), expect(w).toBeLessThan(450)
    const minutes = new Set(waits.map((w) => Math.floor(w / 60)))
    expect(minutes.size).toBeGreaterThanOrEqual(5)
    // Once on its slot, a provider stays on it: exactly one interval later each time.
    const p = aProvider({}, undefined, { uid: 'uid-7' })
    const first = nextProbeAtAfter(p, 0, NOW)
    expect(Date.parse(nextProbeAtAfter(p, 0, first)) - Date.parse(first)).toBe(300_000)
    expect(nextProbeAtAfter(p, 0, NOW)).toBe(first) // the same for every replica
  })

  it('interval defaults to 300 s and is clamped to [60, 86400]; the time limit to 5 s, at most 30 s', () => {
    expect(intervalSecondsOf(aProvider())).toBe(300)
    expect(intervalSecondsOf(aProvider({ healthCheck: { intervalSeconds: 5 } }))).toBe(60)
    expect(intervalSecondsOf(aProvider({ healthCheck: { intervalSeconds: 10 ** 9 } }))).toBe(86_400)
    expect(probeTimeoutMsOf(aProvider())).toBe(5000)
    expect(probeTimeoutMsOf(aProvider({ config: { timeoutSeconds: '12' } }))).toBe(12_000)
    expect(probeTimeoutMsOf(aProvider({ healthCheck: { timeoutSeconds: 3 }, config: { timeoutSeconds: '12' } }))).toBe(3000)
    expect(probeTimeoutMsOf(aProvider({ healthCheck: { timeoutSeconds: 300 } }))).toBe(30_000)
  })
})
