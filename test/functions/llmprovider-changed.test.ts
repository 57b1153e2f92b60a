import { Writable } from 'node:stream'
import type { V1Secret } from '@kubernetes/client-node'
import fc from 'fast-check'
import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/llmprovider-changed/index.js'
import { kineticEventsFor, type KineticEvents } from '../../shared/engine/kinetic-events.js'
import { ForbiddenError, TransientError } from '../../shared/core/errors.js'
import { LLMProviderSchema, type LLMProvider } from '../../shared/schemas/llmprovider.js'
import { intervalSecondsOf, slotSecondsOf } from '../../shared/llm/plan/schedule.js'
import { EmbeddedKube, toApiServer } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { propertyRuns } from '../support/property-runs.js'

const PLATFORM = 'purko-system'
const KEY = 'sk-live-SECRET-0123456789'
const WRONG = 'sk-wrong-SECRET-9876543210'
const MODELS_URL = 'https://api.openai.com/v1/models'

const server = setupServer()
let requests: Request[] = []
beforeAll(() => {
  // Every outbound request but the API server's must be mocked.
  server.listen({ onUnhandledRequest: (request, print) => { if (!toApiServer(request)) print.error() } })
  // The probes: every outbound request but the API server's.
  server.events.on('request:start', ({ request }) => void (toApiServer(request) || requests.push(request)))
})
afterEach(() => {
  server.resetHandlers()
  requests = []
})
afterAll(() => server.close())

/** An OpenAI-compatible /models that knows one key. */
function openai(models = ['gpt-4o', 'gpt-4o-mini'], url = MODELS_URL) {
  return http.get(url, ({ request }) => request.headers.get('authorization') === `Bearer ${KEY}`
    ? HttpResponse.json({ object: 'list', data: models.map((id) => ({ id })) })
    : HttpResponse.json({ error: { message: `Incorrect API key provided: ${request.headers.get('authorization')}` } }, { status: 401 }))
}

function aProvider(name: string, spec: Record<string, unknown> = {}, namespace = PLATFORM): LLMProvider {
  return LLMProviderSchema.parse({
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1, resourceVersion: '1' },
    spec: { type: 'openai', model: 'gpt-4o', credentials: { secretRef: 'openai-key' }, ...spec },
  })
}
const secret = (name: string, value: string, namespace = PLATFORM): V1Secret =>
  ({ metadata: { name, namespace, resourceVersion: '1' }, data: { 'api-key': Buffer.from(value).toString('base64') } })

function kubeWith(providers: LLMProvider[], secrets: V1Secret[] = [secret('openai-key', KEY)]): EmbeddedKube {
  const kube = new EmbeddedKube({ providers })
  for (const s of secrets) kube.secrets.set(`${s.metadata!.namespace}/${s.metadata!.name}`, s)
  return kube
}
const stored = (kube: EmbeddedKube, name: string, namespace = PLATFORM) => structuredClone(kube.providers.get(`${namespace}/${name}`)!)
/**
 * The first instant from 2026-01-01T00:00Z at the provider's probe slot (derived from the uid the
 * API server gave it): a provider created then is next due one interval later.
 */
function atSlot(provider: LLMProvider): Date {
  const from = Date.parse('2026-01-01T00:00:00Z') / 1000
  const interval = intervalSecondsOf(provider)
  return new Date((from + ((slotSecondsOf(provider) - (from % interval)) + interval) % interval) * 1000)
}
const cond = (p: LLMProvider, type: string) => p.status?.conditions?.find((c) => c.type === type)

/** Captures every log line the function writes (debug and up). */
function capturingLogger() {
  const lines: string[] = []
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done() } })
  return { log: pino({ level: 'debug' }, stream), lines }
}

describe('llmprovider-changed', () => {
  it('probes a new provider once and reports it Ready with the models it lists, an Event and the bookkeeping', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')])
    const clock = { now: atSlot(stored(kube, 'openai')) }
    const res = await deliver(createApp(testDeps(kube, clock)), RESOURCE_ADD, stored(kube, 'openai'))

    expect(res.status).toBe(202)
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${MODELS_URL}`])
    // Its first probe due time arms the probe alarm, so the interval holds without a minute tick.
    expect(kube.writes).toEqual(['status LLMProvider/openai', 'create PingSource/llmproviders-probe-alarm'])
    const p = stored(kube, 'openai')
    expect(p.status).toMatchObject({
      phase: 'Ready', message: 'Provider openai ready, 2 models available', availableModels: 2, discoveredModels: ['gpt-4o', 'gpt-4o-mini'],
      lastHealthCheck: clock.now.toISOString(), observedGeneration: 1, consecutiveFailures: 0,
    })
    expect(Date.parse(p.status!.nextProbeAt!) - clock.now.getTime()).toBeGreaterThanOrEqual(300_000)
    // One fire, at the minute its next probe is due (5 minutes plus its jitter).
    const due = new Date(Math.ceil(Date.parse(p.status!.nextProbeAt!) / 60_000) * 60_000)
    expect(kube.child('PingSource', 'kinetic-system', 'llmproviders-probe-alarm')?.spec).toMatchObject({ schedule: `${due.getUTCMinutes()} 0 1 1 *` })
    expect(cond(p, 'CredentialsValid')).toMatchObject({ status: 'True', reason: 'SecretFound', message: 'Credentials loaded from openai-key' })
    expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'ProviderReady']])
  })

  it('drops the echo of its own status write without an API call or a probe, and a redelivery writes nothing', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')])
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))
    const calls = kube.calls
    expect((await deliver(app, RESOURCE_UPDATE, stored(kube, 'openai'))).status).toBe(202)
    expect(kube.calls).toBe(calls)
    // The original event again (no status in it): a fresh read shows the provider is not due.
    expect((await deliver(app, RESOURCE_ADD, aProvider('openai'))).status).toBe(202)
    expect(kube.writes).toEqual(['status LLMProvider/openai', 'create PingSource/llmproviders-probe-alarm'])
    expect(requests).toHaveLength(1)
  })

  it('a wrong key is CredentialsInvalid (Error), and the key appears in no log line, status, Event or message', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')], [secret('openai-key', WRONG)])
    const { log, lines } = capturingLogger()
    const deps = { ...testDeps(kube), log }
    await deliver(createApp(deps), RESOURCE_ADD, stored(kube, 'openai'))

    const p = stored(kube, 'openai')
    expect(p.status?.phase).toBe('Error')
    expect(cond(p, 'Ready')).toMatchObject({ status: 'False', reason: 'CredentialsInvalid', message: `${MODELS_URL} refused the credentials (HTTP 401)` })
    expect(cond(p, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'CredentialsInvalid' })
    expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'CredentialsInvalid']])
    expect(lines.length).toBeGreaterThan(0)
    const everything = JSON.stringify({ lines, status: p.status, events: kube.events })
    expect(everything).not.toContain(WRONG)
    expect(everything).not.toContain(Buffer.from(WRONG).toString('base64'))
  })

  it('a missing Secret, and a Secret it may not read, are purko\'s Error without any probe', async () => {
    const kube = kubeWith([aProvider('openai'), aProvider('team', {}, 'team-a')], [])
    kube.failNext('getSecret', new ForbiddenError('Could not get Secret team-a/openai-key', { cause: { code: 403 } }))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube, 'team', 'team-a'))
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))

    expect(requests).toEqual([])
    expect(stored(kube, 'openai').status).toMatchObject({ phase: 'Error', message: 'Credentials not found or invalid' })
    expect(cond(stored(kube, 'openai'), 'CredentialsValid')?.message).toBe('Credentials not found or invalid: Secret openai-key not found in namespace purko-system')
    const forbidden = 'Reading Secret team-a/openai-key is forbidden to llmprovider-changed (no Role in team-a grants it get); allow it with: '
      + 'kubectl create role kinetic-llmprovider-openai-key -n team-a --verb=get --resource=secrets --resource-name=openai-key && '
      + 'kubectl create rolebinding kinetic-llmprovider-openai-key -n team-a --role=kinetic-llmprovider-openai-key --serviceaccount=kinetic-system:llmprovider-changed'
    const team = stored(kube, 'team', 'team-a')
    expect(team.status).toMatchObject({ phase: 'Error', message: forbidden })
    expect(cond(team, 'Ready')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message: forbidden })
    expect(cond(team, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message: forbidden })
    expect(kube.events.filter((e) => e.involvedObject?.name === 'team').map((e) => [e.type, e.reason, e.message])).toEqual([['Warning', 'SecretForbidden', forbidden]])
  })

  it('one probe per endpoint+credential per round: 5 providers sharing both send 1 request, another key adds 1', async () => {
    server.use(openai(['gpt-4o']))
    const shared = Array.from({ length: 5 }, (_, i) => aProvider(`shared-${i}`))
    const other = aProvider('other', { credentials: { secretRef: 'other-key' } })
    const kube = kubeWith([...shared, other], [secret('openai-key', KEY), secret('other-key', WRONG)])
    const res = await deliver(createApp(testDeps(kube)), PING, {})

    expect(res.status).toBe(202)
    expect(requests).toHaveLength(2)
    expect(shared.map((p) => stored(kube, p.metadata.name!).status?.phase)).toEqual(Array(5).fill('Ready'))
    expect(stored(kube, 'other').status?.phase).toBe('Error')
    // The alarm's read, one LIST, one read per Secret (shared with the copies), six status writes,
    // six Events, the copies' namespace list, and the alarm made for the round a minute later.
    expect(kube.calls).toBe(1 + 1 + 2 + 6 + 6 + 1 + 1)
  })

  it('a round probes only due providers: healthy ones once per interval at their own slot, failing ones backing off', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('good'), aProvider('bad', { credentials: { secretRef: 'bad-key' } })], [secret('openai-key', KEY), secret('bad-key', WRONG)])
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const app = createApp(testDeps(kube, clock))
    const probedAt: Record<string, string[]> = { good: [], bad: [] }
    for (let minute = 0; minute <= 60; minute++) {
      clock.now = new Date(Date.UTC(2026, 0, 1, 0, minute))
      const before = requests.length
      await deliver(app, PING, {})
      for (const r of requests.slice(before)) probedAt[r.headers.get('authorization') === `Bearer ${KEY}` ? 'good' : 'bad']!.push(`${minute}`)
    }
    // Healthy: first at once, then on its own slot (2.5 to 7.5 minutes later), then every 5 minutes
    // exactly; failing: 5, 10, 20, 30 minutes apart (plus a little jitter).
    const gaps = (xs: string[]) => xs.slice(1).map((x, i) => Number(x) - Number(xs[i]))
    const good = gaps(probedAt.good!)
    expect(good[0]).toBeGreaterThanOrEqual(2)
    expect(good[0]).toBeLessThanOrEqual(8)
    expect(new Set(good.slice(1))).toEqual(new Set([5]))
    expect(gaps(probedAt.bad!).slice(0, 3).every((g, i, all) => i === 0 || g > all[i - 1]!)).toBe(true)
    expect(stored(kube, 'bad').status?.consecutiveFailures).toBe(probedAt.bad!.length)
    // The failing provider's Warning Event is recorded once, not once per probe.
    expect(kube.events.filter((e) => e.involvedObject?.name === 'bad')).toHaveLength(1)
  })

  it('a spec change probes at once, even when the provider is not due', async () => {
    server.use(openai(), openai(['llama'], 'http://gateway.internal/v1/models'))
    const kube = kubeWith([aProvider('openai')])
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))
    const changed = stored(kube, 'openai')
    changed.spec.type = 'custom'
    changed.spec.endpoint = 'http://gateway.internal/v1'
    changed.metadata.generation = 2
    kube.providers.set(`${PLATFORM}/openai`, changed)
    await deliver(app, RESOURCE_UPDATE, changed)

    expect(requests.map((r) => r.url)).toEqual([MODELS_URL, 'http://gateway.internal/v1/models'])
    expect(stored(kube, 'openai').status).toMatchObject({ phase: 'Degraded', observedGeneration: 2 })
    expect(cond(stored(kube, 'openai'), 'ModelAvailable')).toMatchObject({ status: 'False', reason: 'ModelNotOffered' })
  })

  it('healthCheck.enabled false checks the credentials only: no request', async () => {
    const kube = kubeWith([aProvider('openai', { healthCheck: { enabled: false } })])
    await deliver(createApp(testDeps(kube)), RESOURCE_ADD, stored(kube, 'openai'))
    expect(requests).toEqual([])
    expect(stored(kube, 'openai').status?.phase).toBe('Ready')
    expect(cond(stored(kube, 'openai'), 'Reachable')?.reason).toBe('HealthCheckDisabled')
  })

  it('an API outage on the status write answers 503; the redelivery converges', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')]).failNext('replaceLLMProviderStatus', new TransientError('etcd timeout'))
    const app = createApp(testDeps(kube))
    expect((await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))).status).toBe(202)
    expect(stored(kube, 'openai').status?.phase).toBe('Ready')
  })

  it('publishes dev.kinetic.llmprovider.* CloudEvents for state changes only', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')], [secret('openai-key', WRONG)])
    const types: string[] = []
    const events: KineticEvents = { publish: async (object, seed, transitions) => void types.push(...kineticEventsFor('test', object, seed, transitions).map((e) => e.type)) }
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const app = createApp({ ...testDeps(kube, clock), events })
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))
    clock.now = new Date('2026-01-01T00:06:00Z')
    await deliver(app, PING, {}) // still failing: no new event
    kube.secrets.set(`${PLATFORM}/openai-key`, secret('openai-key', KEY))
    clock.now = new Date('2026-01-01T00:30:00Z')
    await deliver(app, PING, {})
    expect(types).toEqual(['dev.kinetic.llmprovider.probe.failed', 'dev.kinetic.llmprovider.probe.succeeded'])
  })

  it('answers 400 to data that is not an LLMProvider', async () => {
    expect((await deliver(createApp(testDeps(new EmbeddedKube())), RESOURCE_UPDATE, { hello: 'world' })).status).toBe(400)
  })

  it('copies a platform provider\'s key into opted-in namespaces, and drops it when the provider goes', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')])
    kube.namespaces.set('ai-agents', { metadata: { name: 'ai-agents', labels: { 'kinetic.dev/llm-credentials': 'enabled' } } })
    const types: string[] = []
    const events: KineticEvents = { publish: async (object, seed, transitions) => void types.push(...kineticEventsFor('test', object, seed, transitions).map((e) => e.type)) }
    const app = createApp({ ...testDeps(kube), events })
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))
    expect(kube.secrets.get('ai-agents/kinetic-llm-credentials')?.data).toEqual({ openai: Buffer.from(KEY).toString('base64') })

    expect(types).toEqual(['dev.kinetic.llmprovider.probe.succeeded', 'dev.kinetic.llmprovider.credentials.copied'])

    const gone = stored(kube, 'openai')
    kube.providers.delete(`${PLATFORM}/openai`)
    await deliver(app, 'dev.knative.apiserver.resource.delete', gone)
    // The copy stays, emptied (the API server drops an empty data map).
    const emptied = kube.secrets.get('ai-agents/kinetic-llm-credentials')
    expect(emptied).toBeDefined()
    expect(emptied!.data ?? {}).toEqual({})
  })

  it('a rotated platform key reaches the copies by the next probe round', async () => {
    server.use(openai())
    const kube = kubeWith([aProvider('openai')])
    kube.namespaces.set('ai-agents', { metadata: { name: 'ai-agents', labels: { 'kinetic.dev/llm-credentials': 'enabled' } } })
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const app = createApp(testDeps(kube, clock))
    await deliver(app, RESOURCE_ADD, stored(kube, 'openai'))
    kube.secrets.set(`${PLATFORM}/openai-key`, { ...secret('openai-key', 'sk-rotated'), metadata: { name: 'openai-key', namespace: PLATFORM, resourceVersion: '9' } })
    const copy = () => kube.secrets.get('ai-agents/kinetic-llm-credentials')?.data?.openai
    expect(copy()).toBe(Buffer.from(KEY).toString('base64'))
    clock.now = new Date('2026-01-01T00:05:00Z')
    await deliver(app, PING, {})
    expect(copy()).toBe(Buffer.from('sk-rotated').toString('base64'))
  })

  it('converges whatever the Broker does: duplicated, reordered and dropped events, with ticks, end in one probe per due time', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ what: fc.constantFrom('add', 'update-old', 'update-new', 'ping', 'drop'), minutes: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 25 }),
      async (schedule) => {
        requests = []
        server.resetHandlers(openai())
        const kube = kubeWith([aProvider('openai')])
        const start = atSlot(stored(kube, 'openai'))
        const clock = { now: start }
        const app = createApp(testDeps(kube, clock))
        const first = stored(kube, 'openai')
        for (const step of schedule) {
          clock.now = new Date(clock.now.getTime() + step.minutes * 60_000)
          const res = step.what === 'drop' ? null
            : step.what === 'ping' ? await deliver(app, PING, {})
            : await deliver(app, step.what === 'add' ? RESOURCE_ADD : RESOURCE_UPDATE, step.what === 'update-old' ? first : stored(kube, 'openai'))
          if (res) expect(res.status).toBe(202)
        }
        // Finally a tick: whatever happened, the provider is checked and Ready, and never probed twice for one due time.
        await deliver(app, PING, {})
        const p = stored(kube, 'openai')
        expect(p.status?.phase).toBe('Ready')
        const elapsedMinutes = (clock.now.getTime() - start.getTime()) / 60_000
        expect(requests.length).toBeLessThanOrEqual(1 + Math.floor(elapsedMinutes / 5))
        expect(kube.events).toHaveLength(1)
      },
    ), { numRuns: propertyRuns(40) })
  })
})

describe('llmprovider-changed under load', () => {
  it('a round stops starting probes when its time budget is spent; the rest stay due for the next round, longest overdue first', async () => {
    const { probeRound, newProbeRound } = await import('../../shared/llm/controller.js')
    const providers = Array.from({ length: 20 }, (_, i) => aProvider(`p${i}`, { credentials: { secretRef: `key-${i}` } }))
    const kube = kubeWith(providers, providers.map((_, i) => secret(`key-${i}`, `k${i}`)))
    server.use(http.get(MODELS_URL, () => HttpResponse.json({ data: [{ id: 'gpt-4o' }] })))
    // Every clock read moves time on by 10 s: the 40 s budget is gone after a few probes.
    let t = Date.parse('2026-01-01T00:00:00Z')
    const deps = { ...testDeps(kube), now: () => new Date((t += 10_000)) }
    const outcome = await probeRound(deps, newProbeRound())
    expect(outcome.due).toBe(20)
    expect(outcome.deferred).toBeGreaterThan(0)
    expect(outcome.applied + outcome.deferred).toBe(20)
    expect(requests.length).toBe(outcome.applied)
  })
})
