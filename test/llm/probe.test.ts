import { generateKeyPairSync } from 'node:crypto'
import { http, HttpResponse, delay } from 'msw'
import { setupServer } from 'msw/node'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { probe } from '../../shared/llm/probe.js'
import { probeTargetFor, isTargetProblem, probeKeyOf, type ProbeTarget } from '../../shared/llm/plan/target.js'
import { LLMProviderSchema, type LLMProvider } from '../../shared/schemas/llmprovider.js'

const KEY = 'sk-test-0123456789abcdef'
const server = setupServer()
const seen: Request[] = []
beforeAll(() => {
  server.listen({ onUnhandledRequest: 'error' })
  server.events.on('request:start', ({ request }) => void seen.push(request.clone()))
})
afterEach(() => {
  server.resetHandlers()
  seen.length = 0
})
afterAll(() => server.close())

function aProvider(spec: Record<string, unknown>): LLMProvider {
  return LLMProviderSchema.parse({ metadata: { name: 'p', namespace: 'purko-system', uid: 'u1', generation: 1 }, spec: { model: 'm', ...spec } })
}
function targetOf(spec: Record<string, unknown>, secret: string | null = KEY): ProbeTarget {
  const t = probeTargetFor(aProvider(spec), secret ?? undefined)
  if (isTargetProblem(t)) throw new Error(t.message)
  return t
}
const run = (target: ProbeTarget, timeoutMs = 2000) => probe(target, { timeoutMs })

describe('the list-models probe', () => {
  it('openai: GET <endpoint>/models with the bearer key, default endpoint api.openai.com/v1', async () => {
    server.use(http.get('https://api.openai.com/v1/models', () => HttpResponse.json({ object: 'list', data: [{ id: 'gpt-4o' }, { id: 'gpt-4o-mini' }, { id: 'gpt-4o' }] })))
    expect(await run(targetOf({ type: 'openai' }))).toEqual({ ok: true, models: ['gpt-4o', 'gpt-4o-mini'], url: 'https://api.openai.com/v1/models' })
    expect(seen.map((r) => [r.method, r.url, r.headers.get('authorization')])).toEqual([['GET', 'https://api.openai.com/v1/models', `Bearer ${KEY}`]])
  })

  it('custom: <endpoint>/models, no Authorization without a key', async () => {
    server.use(http.get('http://llm.internal:8000/v1/models', () => HttpResponse.json({ data: [{ id: 'qwen' }] })))
    expect(await run(targetOf({ type: 'custom', endpoint: 'http://llm.internal:8000/v1/' }, null))).toMatchObject({ ok: true, models: ['qwen'] })
    expect(seen[0]!.headers.get('authorization')).toBeNull()
  })

  it('anthropic: GET /v1/models with x-api-key and anthropic-version, following has_more a bounded number of pages', async () => {
    server.use(http.get('https://api.anthropic.com/v1/models', ({ request }) => {
      const after = new URL(request.url).searchParams.get('after_id')
      return after === null
        ? HttpResponse.json({ data: [{ id: 'claude-a' }], has_more: true, last_id: 'claude-a' })
        : HttpResponse.json({ data: [{ id: 'claude-b' }], has_more: false, last_id: 'claude-b' })
    }))
    expect(await run(targetOf({ type: 'anthropic' }))).toMatchObject({ ok: true, models: ['claude-a', 'claude-b'] })
    expect(seen.map((r) => [r.headers.get('x-api-key'), r.headers.get('anthropic-version'), r.headers.get('authorization')])).toEqual([[KEY, '2023-06-01', null], [KEY, '2023-06-01', null]])
    // The executor's endpoint form (…/v1) is not doubled.
    expect(targetOf({ type: 'anthropic', endpoint: 'https://proxy.example/v1' }).url).toBe('https://proxy.example/v1/models')
  })

  it('anthropic pagination stops after five pages even when the server says there is more', async () => {
    server.use(http.get('https://api.anthropic.com/v1/models', ({ request }) => {
      const n = Number(new URL(request.url).searchParams.get('after_id') ?? 0) + 1
      return HttpResponse.json({ data: [{ id: `m${n}` }], has_more: true, last_id: String(n) })
    }))
    expect(await run(targetOf({ type: 'anthropic' }))).toMatchObject({ ok: true, models: ['m1', 'm2', 'm3', 'm4', 'm5'] })
    expect(seen).toHaveLength(5)
  })

  it('ollama: GET /api/tags without a key, a trailing /v1 dropped', async () => {
    server.use(http.get('http://ollama.ai:11434/api/tags', () => HttpResponse.json({ models: [{ name: 'qwen3:8b' }, { name: 'llama3:latest' }] })))
    expect(await run(targetOf({ type: 'ollama', endpoint: 'http://ollama.ai:11434/v1' }, null))).toMatchObject({ ok: true, models: ['qwen3:8b', 'llama3:latest'] })
  })

  it('vertex-ai: a signed JWT exchanged at the key\'s token_uri, then the publisher models of the region', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const sa = JSON.stringify({ type: 'service_account', client_email: 'probe@proj.iam.gserviceaccount.com', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }), token_uri: 'https://oauth2.example/token', project_id: 'proj' })
    let assertion = ''
    server.use(
      http.post('https://oauth2.example/token', async ({ request }) => {
        const form = new URLSearchParams(await request.text())
        assertion = form.get('assertion') ?? ''
        return form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' ? HttpResponse.json({ access_token: 'ya29.token', expires_in: 3600 }) : new HttpResponse(null, { status: 400 })
      }),
      http.get('https://europe-west4-aiplatform.googleapis.com/v1beta1/publishers/anthropic/models', ({ request }) =>
        request.headers.get('authorization') === 'Bearer ya29.token'
          ? HttpResponse.json({ publisherModels: [{ name: 'publishers/anthropic/models/claude-sonnet-4' }] })
          : new HttpResponse(null, { status: 401 })),
    )
    const result = await run(targetOf({ type: 'vertex-ai', config: { projectId: 'billing-proj', region: 'europe-west4' } }, sa))
    expect(result).toMatchObject({ ok: true, models: ['claude-sonnet-4'] })
    const [header, claims] = assertion.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()))
    expect(header).toEqual({ alg: 'RS256', typ: 'JWT' })
    expect(claims).toMatchObject({ iss: 'probe@proj.iam.gserviceaccount.com', aud: 'https://oauth2.example/token', scope: 'https://www.googleapis.com/auth/cloud-platform' })
    expect(seen.at(-1)!.headers.get('x-goog-user-project')).toBe('billing-proj')
    expect(targetOf({ type: 'vertex-ai', apiFormat: 'openai' }).url).toBe('https://us-central1-aiplatform.googleapis.com/v1beta1/publishers/google/models')
  })

  it('vertex-ai: a key that is not a service account, or that the token endpoint refuses, is CredentialsInvalid', async () => {
    expect(await run(targetOf({ type: 'vertex-ai' }, 'not json'))).toMatchObject({ ok: false, reason: 'CredentialsInvalid' })
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const sa = JSON.stringify({ client_email: 'x@y', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }), token_uri: 'https://oauth2.example/token' })
    server.use(http.post('https://oauth2.example/token', () => HttpResponse.json({ error: 'invalid_grant' }, { status: 400 })))
    expect(await run(targetOf({ type: 'vertex-ai' }, sa))).toMatchObject({ ok: false, reason: 'CredentialsInvalid', message: 'https://oauth2.example/token refused the service-account key (HTTP 400)' })
  })

  const URL_ = 'https://api.openai.com/v1/models'
  it.each([
    ['401', () => new HttpResponse('{"error":"bad key sk-test-0123456789abcdef"}', { status: 401 }), 'CredentialsInvalid', `${URL_} refused the credentials (HTTP 401)`],
    ['403', () => new HttpResponse(null, { status: 403 }), 'CredentialsInvalid', `${URL_} refused the credentials (HTTP 403)`],
    ['429', () => new HttpResponse(null, { status: 429 }), 'RateLimited', `${URL_} is rate limiting (HTTP 429)`],
    ['503', () => new HttpResponse(null, { status: 503 }), 'Unreachable', `${URL_} answered HTTP 503`],
    ['404', () => new HttpResponse(null, { status: 404 }), 'BadResponse', `${URL_} answered HTTP 404`],
    ['an HTML page', () => HttpResponse.html('<html>login</html>'), 'BadResponse', `${URL_} answered text/html, not JSON`],
    ['broken JSON', () => new HttpResponse('{"data": [', { headers: { 'content-type': 'application/json' } }), 'BadResponse', `${URL_} answered something that is not JSON`],
    ['JSON without a list', () => HttpResponse.json({ hello: 1 }), 'BadResponse', `${URL_} answered JSON without a data list`],
    ['a redirect to another host', () => new HttpResponse(null, { status: 302, headers: { location: 'https://evil.example/steal' } }), 'Redirected', `${URL_} redirects to another host (evil.example); probes only go to the endpoint in the spec`],
    ['an enormous body', () => new HttpResponse(new ReadableStream({ pull(c) { c.enqueue(new Uint8Array(64 * 1024)) } }), { headers: { 'content-type': 'application/json' } }), 'TooLarge', `${URL_} answered more than 1048576 bytes`],
    ['a declared enormous body', () => new HttpResponse('{}', { headers: { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) } }), 'TooLarge', `${URL_} answered more than 1048576 bytes`],
  ])('an endpoint answering %s gives a clear reason and no secret', async (_, answer, reason, message) => {
    server.use(http.get(URL_, answer))
    const result = await run(targetOf({ type: 'openai' }))
    expect(result).toEqual({ ok: false, reason, message })
    expect(JSON.stringify(result)).not.toContain(KEY)
  })

  it('a 429 passes on its Retry-After', async () => {
    server.use(http.get(URL_, () => new HttpResponse(null, { status: 429, headers: { 'retry-after': '20' } })))
    expect(await run(targetOf({ type: 'openai' }))).toEqual({ ok: false, reason: 'RateLimited', message: `${URL_} is rate limiting (HTTP 429, retry after 20 s)`, retryAfterSeconds: 20 })
  })

  it('follows a same-origin redirect, keeping the key on that origin only', async () => {
    server.use(
      http.get('https://api.openai.com/v1/models', () => new HttpResponse(null, { status: 307, headers: { location: '/v2/models' } })),
      http.get('https://api.openai.com/v2/models', () => HttpResponse.json({ data: [{ id: 'x' }] })),
    )
    expect(await run(targetOf({ type: 'openai' }))).toMatchObject({ ok: true, models: ['x'] })
  })

  it('gives up after the time limit: Timeout', async () => {
    server.use(http.get(URL_, async () => { await delay(5000); return HttpResponse.json({ data: [] }) }))
    const started = Date.now()
    expect(await run(targetOf({ type: 'openai' }), 300)).toEqual({ ok: false, reason: 'Timeout', message: `No answer from ${URL_} within 0.3 s` })
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it('an endpoint nobody listens on is Unreachable', async () => {
    server.use(http.get('http://127.0.0.1:1/models', () => HttpResponse.error()))
    expect(await run(targetOf({ type: 'custom', endpoint: 'http://127.0.0.1:1' }))).toMatchObject({ ok: false, reason: 'Unreachable' })
  })

  it('never shows a query of the endpoint (it may carry a key) in a message, and refuses user info in it', async () => {
    server.use(http.get('https://gw.example/v1/models', () => new HttpResponse(null, { status: 500 })))
    const result = await run(targetOf({ type: 'custom', endpoint: 'https://gw.example/v1?key=sk-in-query' }))
    expect(result).toEqual({ ok: false, reason: 'Unreachable', message: 'https://gw.example/v1/models answered HTTP 500' })
    expect(probeTargetFor(aProvider({ type: 'custom', endpoint: 'https://u:sk-in-url@gw.example/v1' })))
      .toEqual({ reason: 'EndpointInvalid', message: 'spec.endpoint must not carry user info (the key belongs in the credentials Secret)' })
  })

  it('refuses endpoints it cannot probe: missing for custom and ollama, not http(s), not a URL', () => {
    expect(probeTargetFor(aProvider({ type: 'custom' }))).toEqual({ reason: 'EndpointInvalid', message: 'spec.endpoint is required to probe this provider' })
    expect(probeTargetFor(aProvider({ type: 'ollama', endpoint: 'file:///etc/passwd' }))).toEqual({ reason: 'EndpointInvalid', message: 'spec.endpoint must be an http or https URL' })
    expect(probeTargetFor(aProvider({ type: 'openai', endpoint: 'not a url' }))).toEqual({ reason: 'EndpointInvalid', message: 'spec.endpoint is not a URL' })
  })

  it('dedupes on API, URL and a hash of the key, never the key itself', () => {
    const a = probeKeyOf(targetOf({ type: 'openai' }))
    expect(a).toBe(probeKeyOf(targetOf({ type: 'openai', endpoint: 'https://api.openai.com/v1' })))
    expect(a).not.toBe(probeKeyOf(targetOf({ type: 'openai' }, 'another-key')))
    expect(a).not.toContain(KEY)
  })
})
