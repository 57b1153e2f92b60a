import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/webhook-trigger/index.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { Kube } from '../../shared/kube/port.js'
import { createHash } from 'node:crypto'
import { deliverySuffix } from '../../shared/template/run-builder.js'
import { RateLimiter, type RateLimit } from '../../shared/webhook/rate-limit.js'
import { githubSignature, kineticSignature } from '../../shared/webhook/signature.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { workflowOf } from '../support/objects.js'

const NOW = new Date('2026-03-01T12:00:00Z')
const SECRET = 'whsec-3f9a1c-very-secret'
const NS = 'team'

/** A template in `team` that takes webhooks signed with Secret `hook`, unless told otherwise. */
function template(name = 'deploy', webhook: Record<string, unknown> | null = { secret: { name: 'hook' } }, annotations: Record<string, string> = { 'purko.io/template': 'true' }) {
  const wf = workflowOf(name, [{ name: 'build' }, { name: 'ship', dependsOn: ['build'], input: { task: 'ship ${parameters.env}' } }],
    { description: 'Deploy', parameters: { env: 'staging' }, ...(webhook ? { trigger: { webhook } } : {}) })
  wf.metadata.annotations = annotations
  return wf
}

/** The uid the API server gave the last cluster's `deploy` template (runs are named after it). */
let deployUid = ''

function fakeWith(...templates: ReturnType<typeof template>[]): EmbeddedKube {
  const kube = new EmbeddedKube({ workflows: templates.length > 0 ? templates : [template()] })
  deployUid = kube.workflow(NS, 'deploy')?.metadata.uid ?? ''
  kube.secrets.set(`${NS}/hook`, { metadata: { name: 'hook', namespace: NS }, data: { secret: Buffer.from(SECRET).toString('base64') } })
  return kube
}

/** The app with a log that is kept, a settable clock (NOW unless moved) and a fixed random suffix. */
function appFor(kube: Kube, limit: RateLimit = { ratePerSecond: 1000, burst: 1000 }, extra: { refused?: RateLimit; lookups?: RateLimit } = {}) {
  const lines: string[] = []
  const log = pino({ level: 'debug', base: { function: 'webhook-trigger' } }, { write: (s: string) => { lines.push(s) } })
  let n = 0
  const clock = { now: NOW }
  const app = createApp({
    kube, log, now: () => clock.now, limiter: new RateLimiter(limit), randomSuffix: () => (++n).toString(16).padStart(8, '0'),
    refusedLimiter: new RateLimiter(extra.refused ?? limit), lookupLimiter: new RateLimiter(extra.lookups ?? { ratePerSecond: 1000, burst: 1000 }),
  })
  return { app, lines, clock }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
/** The key a GitHub-signed body is deduplicated by at `at`: its hour and its digest. */
const githubKey = (body: string, at: Date = NOW) => `github:${Math.floor(at.getTime() / 3_600_000)}:${sha256(body)}`
/** The run a deduplicated delivery names. */
const runOf = (key: string) => `deploy-run-${deliverySuffix(deployUid, key)}`

type App = ReturnType<typeof appFor>['app']

function post(app: App, path: string, body: string, headers: Record<string, string> = {}, method = 'POST') {
  return app.request(path, { method, body: method === 'GET' ? undefined : body, headers: { 'content-type': 'application/json', ...headers } })
}

const signed = (body: string, extra: Record<string, string> = {}) => ({ 'x-hub-signature-256': githubSignature(SECRET, body), ...extra })

const BODY = JSON.stringify({ title: 'Release 1.4', env: 'prod', parameters: { version: '1.4.0' } })

describe('webhook-trigger (EmbeddedKube)', () => {
  it('creates a run of the template and answers 201 with purko\'s body', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const res = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))
    expect(res.status).toBe(201)
    const body = await res.json()
    const name = runOf(githubKey(BODY))
    expect(body).toEqual({
      status: 'triggered', run: name, namespace: NS, template: 'deploy', route: 'explicit', source: 'unknown',
      normalized: { source: 'unknown', title: 'Release 1.4', severity: '', service: '', action: '', type: '', repository: '', user: '', description: 'Release 1.4' },
    })
    expect(kube.writes).toEqual([`create Workflow/${name}`])
    const run = kube.workflow(NS, name)
    expect(run.metadata.annotations).toEqual({
      'purko.io/workflow-template': 'deploy', 'purko.io/trigger-type': 'webhook', 'purko.io/trigger-source': 'unknown', 'purko.io/trigger-route': 'explicit',
      'kinetic.dev/delivery-key': githubKey(BODY),
    })
    expect(run.spec.parameters).toEqual({ env: 'prod', title: 'Release 1.4', version: '1.4.0' })
    expect(run.spec.steps[0]?.input).toEqual({ description: 'Release 1.4', task: 'Release 1.4', webhook_payload: JSON.parse(BODY), webhook_source: 'unknown' })
    expect(run.spec.steps[1]?.input).toEqual({ task: 'ship ${parameters.env}' })
  })

  it('accepts X-Kinetic-Signature within the replay window', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const res = await post(app, '/api/trigger/team/deploy', BODY, { 'x-kinetic-signature': kineticSignature(SECRET, BODY, NOW.getTime() / 1000 - 60) })
    expect(res.status).toBe(201)
  })

  describe('replays: a run is named by what the signature covers, never by an unsigned delivery id', () => {
    it('a captured GitHub-signed request replayed with another delivery id, or none, is the same run: 200 duplicate', async () => {
      const kube = fakeWith()
      const { app } = appFor(kube)
      const first = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' }))
      expect(first.status).toBe(201)
      const ids: Array<Record<string, string>> = [{ 'x-github-delivery': 'changed' }, { 'idempotency-key': 'other' }, { 'x-kinetic-delivery': 'third' }, {}]
      for (const id of ids) {
        const replay = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, id))
        expect(replay.status).toBe(200)
        expect(await replay.json()).toMatchObject({ status: 'duplicate', run: runOf(githubKey(BODY)), namespace: NS, template: 'deploy' })
      }
      expect(kube.writes).toEqual([`create Workflow/${runOf(githubKey(BODY))}`])
      // The sender's id is still recorded, for people; it names nothing.
      expect(kube.workflow(NS, runOf(githubKey(BODY))).metadata.annotations?.['kinetic.dev/delivery-id']).toBe('72d3162e-cc78-11e3-81ab-4c9367dc0958')
    })

    it('a GitHub-signed body is one delivery within its clock hour: the next hour it makes one more run, at most', async () => {
      const kube = fakeWith()
      const { app, clock } = appFor(kube)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(201)
      clock.now = new Date(NOW.getTime() + 59 * 60_000)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(200)
      const later = new Date(NOW.getTime() + 61 * 60_000)
      clock.now = later
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(201)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(200)
      expect(kube.writes).toEqual([`create Workflow/${runOf(githubKey(BODY))}`, `create Workflow/${runOf(githubKey(BODY, later))}`])
      // A different body is a different delivery.
      const other = JSON.stringify({ title: 'Release 1.5' })
      expect((await post(app, '/api/trigger/team/deploy', other, signed(other))).status).toBe(201)
    })

    it('an X-Kinetic-Signature request replayed within its window is a duplicate whatever its delivery id; re-signed, it is a new delivery', async () => {
      const kube = fakeWith()
      const { app, clock } = appFor(kube)
      const t = NOW.getTime() / 1000 - 10
      const header = { 'x-kinetic-signature': kineticSignature(SECRET, BODY, t) }
      expect((await post(app, '/api/trigger/team/deploy', BODY, { ...header, 'x-kinetic-delivery': 'd-1' })).status).toBe(201)
      clock.now = new Date(NOW.getTime() + 200_000)
      const replay = await post(app, '/api/trigger/team/deploy', BODY, { ...header, 'x-kinetic-delivery': 'd-2' })
      expect([replay.status, (await replay.json() as { run: string }).run]).toEqual([200, runOf(`kinetic:${t}:${sha256(BODY)}`)])
      // Past the window the same request is refused, so it never makes a second run.
      clock.now = new Date(NOW.getTime() + 400_000)
      expect((await post(app, '/api/trigger/team/deploy', BODY, header)).status).toBe(401)
      // The sender signing anew is a new delivery.
      const fresh = { 'x-kinetic-signature': kineticSignature(SECRET, BODY, clock.now.getTime() / 1000) }
      expect((await post(app, '/api/trigger/team/deploy', BODY, fresh)).status).toBe(201)
      expect(kube.writes.filter((w) => w.startsWith('create Workflow/'))).toHaveLength(2)
    })

    it('an unauthenticated template (nothing signed) is deduplicated by the delivery id it is given; without one every call is a new run', async () => {
      const kube = fakeWith(template('deploy', { allowUnauthenticated: true }))
      const { app } = appFor(kube)
      expect((await post(app, '/api/trigger/team/deploy', BODY, { 'idempotency-key': 'k1' })).status).toBe(201)
      const again = await post(app, '/api/trigger/team/deploy', BODY, { 'idempotency-key': 'k1' })
      expect([again.status, (await again.json() as { run: string }).run]).toEqual([200, runOf('k1')])
      expect((await post(app, '/api/trigger/team/deploy', BODY)).status).toBe(201)
      expect((await post(app, '/api/trigger/team/deploy', BODY)).status).toBe(201)
      expect(kube.writes.filter((w) => w.startsWith('create Workflow/'))).toHaveLength(3)
    })

    it('a delivery whose run name is held by some other Workflow is 409, not a duplicate', async () => {
      const kube = fakeWith()
      kube.putWorkflow(workflowOf(runOf(githubKey(BODY)), [{ name: 'x' }]))
      const { app } = appFor(kube)
      const res = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-kinetic-delivery': 'd-9' }))
      expect(res.status).toBe(409)
    })
  })

  it('a template that does not exist is answered as a bad signature is (401, the same bytes): callers cannot probe for templates', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const unknown = await post(app, '/api/trigger/team/nope', BODY, signed(BODY))
    const forged = await post(app, '/api/trigger/team/deploy', BODY, { 'x-hub-signature-256': githubSignature('guess', BODY) })
    const unsigned = await post(app, '/api/trigger/team/nope', BODY)
    expect([unknown.status, unsigned.status, forged.status]).toEqual([401, 401, 401])
    const bodies = [await unknown.text(), await unsigned.text(), await forged.text()]
    expect(bodies).toEqual(['{"error":"unauthorized"}', '{"error":"unauthorized"}', '{"error":"unauthorized"}'])
    expect(kube.writes).toEqual([])
  })

  it('routes by the trigger-rules ConfigMap of the namespace, first match wins', async () => {
    const kube = fakeWith(template('pr-review'), template('fallback'))
    kube.configMaps.set(`${NS}/trigger-rules`, {
      metadata: { name: 'trigger-rules', namespace: NS },
      data: { rules: JSON.stringify([
        { name: 'prs', source: 'github', match: { type: 'pull_request' }, workflow: 'pr-review' },
        { name: 'rest', source: '*', match: {}, workflow: 'fallback' },
      ]) },
    })
    const { app } = appFor(kube)
    const pr = JSON.stringify({ action: 'opened', repository: { full_name: 'acme/shop' }, pull_request: { title: 'Fix cart' } })
    const res = await post(app, '/api/trigger/team', pr, signed(pr))
    expect(res.status).toBe(201)
    expect(await res.json()).toMatchObject({ template: 'pr-review', route: 'rule:prs', source: 'github', normalized: { type: 'pull_request', repository: 'acme/shop' } })
    const other = JSON.stringify({ title: 'x' })
    expect(await (await post(app, '/api/trigger/team', other, signed(other))).json()).toMatchObject({ template: 'fallback', route: 'rule:rest' })
  })

  it('a rule naming a missing workflow is 401 like any unknown template, and nothing is created (default rules)', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const incident = JSON.stringify({ event: { event_type: 'incident.triggered', data: { title: 'DB down', urgency: 'critical' } } })
    const res = await post(app, '/api/trigger/team', incident, signed(incident))
    expect([res.status, await res.text()]).toEqual([401, '{"error":"unauthorized"}'])
    expect(kube.writes).toEqual([])
  })

  it('no matching rule is 404 and an _intent rule 501, with purko\'s messages', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const low = JSON.stringify({ event: { data: { urgency: 'low' } } })
    const none = await post(app, '/api/trigger/team', low, signed(low))
    expect([none.status, await none.json()]).toEqual([404, { error: 'no matching rule found' }])
    kube.configMaps.set(`${NS}/trigger-rules`, { metadata: { name: 'trigger-rules', namespace: NS }, data: { rules: '[{"name":"catch-all","source":"*","match":{},"workflow":"_intent"}]' } })
    // The rules are remembered for a few seconds: a new process (or 10 s later) reads the new ones.
    const intent = await post(appFor(kube).app, '/api/trigger/team', low, signed(low))
    expect([intent.status, await intent.json()]).toEqual([501, { error: 'the _intent fallback requires Purko Pro' }])
    expect(kube.writes).toEqual([])
  })

  it('413 for a body over 1 MiB, before any API call', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) })
    const res = await post(app, '/api/trigger/team/deploy', big, signed(big))
    expect(res.status).toBe(413)
    expect(kube.calls).toBe(0)
  })

  it('413 at once when Content-Length declares more than 1 MiB, without reading the body', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({ pull(controller) { pulled++; controller.enqueue(new Uint8Array(1024)) } })
    const res = await app.request('/api/trigger/team/deploy', { method: 'POST', body, headers: { 'content-length': String(2 * 1024 * 1024) }, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect(pulled).toBeLessThanOrEqual(1)
    expect(kube.calls).toBe(0)
  })

  it('413 for a streamed body without Content-Length once it passes 1 MiB, reading no further', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({ pull(controller) { pulled++; controller.enqueue(new Uint8Array(64 * 1024)) } })
    const res = await app.request('/api/trigger/team/deploy', { method: 'POST', body, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect(pulled).toBeLessThan(20)
  })

  it('X-Trigger-Source names the source (rules and the trigger-source annotation); a bad one is 400', async () => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const res = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-trigger-source': 'alertmanager' }))
    const { run, source } = await res.json() as { run: string; source: string }
    expect(source).toBe('alertmanager')
    expect(kube.workflow(NS, run).metadata.annotations?.['purko.io/trigger-source']).toBe('alertmanager')
    expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-trigger-source': 'x'.repeat(64) }))).status).toBe(400)
  })

  it('413 when the run would be too large to store (the payload copied into every step without input)', async () => {
    const wf = workflowOf('fan', [{ name: 'a' }, { name: 'b' }, { name: 'c' }], { trigger: { webhook: { secret: { name: 'hook' } } } })
    wf.metadata.annotations = { 'purko.io/template': 'true' }
    const kube = fakeWith(wf)
    const { app } = appFor(kube)
    const body = JSON.stringify({ blob: 'x'.repeat(600 * 1024) })
    const res = await post(app, '/api/trigger/team/fan', body, signed(body))
    expect(res.status).toBe(413)
    expect(kube.writes).toEqual([])
  })

  it.each([
    ['not JSON', 'title=x'],
    ['a JSON array', '[{"title":"x"}]'],
  ])('400 for a body that is %s', async (_, body) => {
    const kube = fakeWith()
    const { app } = appFor(kube)
    const res = await post(app, '/api/trigger/team/deploy', body, signed(body))
    expect([res.status, await res.json()]).toEqual([400, { error: 'body must be a JSON object' }])
    expect(kube.writes).toEqual([])
  })

  it('400 for a path without a namespace, with purko\'s message', async () => {
    const { app } = appFor(fakeWith())
    const res = await post(app, '/api/trigger/', BODY)
    expect([res.status, await res.json()]).toEqual([400, { error: 'path must be /api/trigger/{namespace} or /api/trigger/{namespace}/{workflow-name}' }])
  })

  it('405 for anything but POST', async () => {
    const { app } = appFor(fakeWith())
    const res = await post(app, '/api/trigger/team/deploy', '', {}, 'GET')
    expect([res.status, res.headers.get('allow'), await res.json()]).toEqual([405, 'POST', { error: 'POST required' }])
  })

  it('429 with Retry-After over the rate limit of a template, before any API call; other templates are not held up', async () => {
    const kube = fakeWith(template('deploy'), template('other'))
    const { app } = appFor(kube, { ratePerSecond: 1, burst: 2 })
    const body = (n: number) => JSON.stringify({ title: `call ${n}` })
    expect((await post(app, '/api/trigger/team/deploy', body(1), signed(body(1)))).status).toBe(201)
    expect((await post(app, '/api/trigger/team/deploy', body(2), signed(body(2)))).status).toBe(201)
    const calls = kube.calls
    const limited = await post(app, '/api/trigger/team/deploy', body(3), signed(body(3)))
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('1')
    expect(kube.calls).toBe(calls)
    expect((await post(app, '/api/trigger/team/other', BODY, signed(BODY))).status).toBe(201)
  })

  describe('authentication before rate limiting: forged traffic has its own budget', () => {
    const forged = (n: number) => ({ 'x-hub-signature-256': githubSignature(`guess-${n}`, BODY) })

    it('a flood of forged calls to a template\'s path never makes its genuine deliveries 429', async () => {
      const kube = fakeWith()
      const { app } = appFor(kube, { ratePerSecond: 10, burst: 20 })
      const answers = new Set<number>()
      for (let i = 0; i < 100; i++) answers.add((await post(app, '/api/trigger/team/deploy', BODY, forged(i))).status)
      expect([...answers].sort()).toEqual([401, 429])
      const genuine = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))
      expect(genuine.status).toBe(201)
    })

    it('verifying a call to a known template costs no API call once its template and secret are known (a few seconds)', async () => {
      const kube = fakeWith()
      const { app, clock } = appFor(kube)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(201)
      const calls = kube.calls
      for (let i = 0; i < 20; i++) expect((await post(app, '/api/trigger/team/deploy', BODY, forged(i))).status).toBe(401)
      // One call for all twenty: the Warning Event of this minute.
      expect(kube.calls - calls).toBe(1)
      expect(kube.events).toHaveLength(1)
      // After the cache's lifetime the template and the secret are read again (a rotation is seen).
      clock.now = new Date(NOW.getTime() + 11_000)
      const before = kube.calls
      expect((await post(app, '/api/trigger/team/deploy', BODY, forged(99))).status).toBe(401)
      expect(kube.calls - before).toBe(2)
    })

    it('names that do not exist spend a per-process lookup budget, then get 429 before any API call', async () => {
      const kube = fakeWith()
      const { app } = appFor(kube, undefined, { lookups: { ratePerSecond: 1, burst: 5 } })
      const statuses: number[] = []
      for (let i = 0; i < 8; i++) statuses.push((await post(app, `/api/trigger/team/nope-${i}`, BODY, signed(BODY))).status)
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429])
      expect(kube.calls).toBe(5)
    })
  })


  it('400 for a Workflow that is not a template (once the caller is authenticated)', async () => {
    const kube = fakeWith(template('plain', { secret: { name: 'hook' } }, {}))
    const { app } = appFor(kube)
    const res = await post(app, '/api/trigger/team/plain', BODY, signed(BODY))
    expect(res.status).toBe(400)
    expect((await res.json()).error).toContain('is not a template')
    expect(kube.writes).toEqual([])
  })

  it('a run of a template is not a template itself', async () => {
    const kube = fakeWith(template('deploy-run-abc', { secret: { name: 'hook' } }, { 'purko.io/template': 'true', 'purko.io/workflow-template': 'deploy' }))
    const { app } = appFor(kube)
    expect((await post(app, '/api/trigger/team/deploy-run-abc', BODY, signed(BODY))).status).toBe(400)
  })

  it('allowUnauthenticated: true accepts an unsigned call, and logs it as unsafe', async () => {
    const kube = fakeWith(template('open', { allowUnauthenticated: true }))
    const { app, lines } = appFor(kube)
    expect((await post(app, '/api/trigger/team/open', BODY)).status).toBe(201)
    expect(lines.some((l) => l.includes('unauthenticated') && l.includes('unsafe'))).toBe(true)
  })

  describe('401 with no detail on any auth failure, and a Warning Event on the template saying what is wrong', () => {
    const T = NOW.getTime() / 1000
    it.each<[string, ReturnType<typeof template>, Record<string, string>, string, string, boolean?]>([
      ['no webhook secret configured', template('deploy', null), signed(BODY), 'WebhookNotConfigured', 'no spec.trigger.webhook.secret'],
      ['the Secret missing', template('deploy', { secret: { name: 'gone' } }), signed(BODY), 'WebhookSecretMissing', 'Secret team/gone does not exist'],
      ['the Secret without the key', template('deploy', { secret: { name: 'hook', key: 'hmac' } }), signed(BODY), 'WebhookSecretMissing', 'has no key "hmac"'],
      ['a Secret in another namespace', template('deploy', { secret: { name: 'hook', namespace: 'kube-system' } }), signed(BODY), 'WebhookSecretForbidden', 'kube-system'],
      ['no signature header', template(), {}, 'WebhookSignatureInvalid', 'no X-Hub-Signature-256 or X-Kinetic-Signature'],
      ['a wrong secret', template(), { 'x-hub-signature-256': githubSignature('guess', BODY) }, 'WebhookSignatureInvalid', 'does not match'],
      ['a tampered body', template(), { 'x-hub-signature-256': githubSignature(SECRET, `${BODY} `) }, 'WebhookSignatureInvalid', 'does not match'],
      ['a stale timestamp', template(), { 'x-kinetic-signature': kineticSignature(SECRET, BODY, T - 301) }, 'WebhookSignatureInvalid', 'more than 300 s'],
      ['a future timestamp', template(), { 'x-kinetic-signature': kineticSignature(SECRET, BODY, T + 301) }, 'WebhookSignatureInvalid', 'more than 300 s'],
      ['a malformed header', template(), { 'x-kinetic-signature': 'v1=abc' }, 'WebhookSignatureInvalid', 'malformed'],
    ])('%s', async (_, tpl, headers, reason, words) => {
      const kube = fakeWith(tpl)
      const { app, lines } = appFor(kube)
      const res = await post(app, '/api/trigger/team/deploy', BODY, headers)
      expect(res.status).toBe(401)
      expect(await res.text()).toBe('{"error":"unauthorized"}')
      expect(res.headers.get('www-authenticate')).toBeNull()
      expect(kube.writes).toEqual([])
      expect(kube.events.map((e) => [e.type, e.reason, e.involvedObject?.kind, e.involvedObject?.name])).toEqual([['Warning', reason, 'Workflow', 'deploy']])
      expect(kube.events[0]?.message).toContain(words)
      // Never the secret, never the signature, neither in the Event nor in the log.
      const signature = (headers['x-hub-signature-256'] ?? headers['x-kinetic-signature'] ?? '').replace(/^sha256=|^t=\d+,v1=/, '')
      for (const text of [kube.events[0]?.message ?? '', ...lines]) {
        expect(text).not.toContain(SECRET)
        if (signature.length > 8) expect(text).not.toContain(signature)
      }
    })

    it('reads no Secret of another namespace', async () => {
      const kube = fakeWith(template('deploy', { secret: { name: 'hook', namespace: 'kube-system' } }))
      kube.failNext('getSecret', new Error('must not be called'))
      const { app } = appFor(kube)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(401)
    })

    it('a flood of bad calls records one Event a minute per reason', async () => {
      const kube = fakeWith()
      const { app } = appFor(kube)
      for (let i = 0; i < 5; i++) await post(app, '/api/trigger/team/deploy', BODY, { 'x-hub-signature-256': githubSignature(`guess-${i}`, BODY) })
      expect(kube.events).toHaveLength(1)
    })

    it('an Event that cannot be written does not change the answer', async () => {
      const kube = fakeWith(template('deploy', null))
      kube.failNext('createEvent', new TransientError('events down'))
      const { app } = appFor(kube)
      expect((await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))).status).toBe(401)
    })
  })

  it('logs never contain the secret value on success either', async () => {
    const kube = fakeWith()
    const { app, lines } = appFor(kube)
    await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-github-delivery': 'd1' }))
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.join('\n')).not.toContain(SECRET)
    expect(lines.join('\n')).not.toContain(githubSignature(SECRET, BODY).slice(7))
  })

  it.each(['getWorkflow', 'getSecret', 'createWorkflow'] as const)('503 when %s meets an API outage; the sender\'s retry then creates the run', async (method) => {
    const kube = fakeWith()
    kube.failNext(method, new TransientError('connect ECONNREFUSED 10.96.0.1:443'))
    const { app } = appFor(kube)
    const headers = signed(BODY, { 'x-github-delivery': 'retry-1' })
    const down = await post(app, '/api/trigger/team/deploy', BODY, headers)
    expect(down.status).toBe(503)
    expect(down.headers.get('retry-after')).toBe('5')
    // Nothing internal is told to the outside caller.
    expect(await down.text()).not.toContain('10.96.0.1')
    expect((await post(app, '/api/trigger/team/deploy', BODY, headers)).status).toBe(201)
    expect(kube.writes.filter((w) => w.startsWith('create Workflow/'))).toHaveLength(1)
  })

  it('503 when the rules ConfigMap cannot be read', async () => {
    const kube = fakeWith()
    kube.failNext('getConfigMap', new TransientError('timeout'))
    const { app } = appFor(kube)
    expect((await post(app, '/api/trigger/team', BODY, signed(BODY))).status).toBe(503)
  })

  it('500 without detail for an unexpected failure', async () => {
    const kube = fakeWith()
    kube.failNext('getWorkflow', new Error('workflows.purko.io is forbidden: User "system:serviceaccount:kinetic-system:webhook-trigger"'))
    const { app, lines } = appFor(kube)
    const res = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY))
    expect([res.status, await res.json()]).toEqual([500, { error: 'internal error' }])
    expect(lines.some((l) => l.includes('forbidden'))).toBe(true)
  })
})

describe('webhook-trigger on the embedded API server', () => {
  let api: ApiServer
  let custom: CustomObjectsApi
  let core: CoreV1Api
  let kube: KubeClient

  beforeAll(async () => {
    api = await startApiServer()
    const kc = api.kubeConfigObject()
    custom = kc.makeApiClient(CustomObjectsApi)
    core = kc.makeApiClient(CoreV1Api)
    const ext = kc.makeApiClient(ApiextensionsV1Api)
    const dir = join(import.meta.dirname, '../../crds')
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
    }
    await core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined)
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'hook' }, stringData: { secret: SECRET } } })
    const { status: _s, ...tpl } = template()
    const { uid: _u, resourceVersion: _rv, generation: _g, ...metadata } = tpl.metadata
    await custom.createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', body: { ...tpl, metadata } })
    kube = new KubeClient(kc)
  })

  afterAll(async () => {
    await api.close()
  })

  const runs = async () => {
    const list = await custom.listNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', labelSelector: 'kinetic.dev/template=deploy' }) as { items: Array<{ metadata: { name: string; annotations?: Record<string, string>; ownerReferences?: Array<{ uid: string }> } }> }
    return list.items
  }

  it('a signed call creates one run the CRD accepts, owned by the template; the redelivery is 200 duplicate', async () => {
    const { app } = appFor(kube)
    const first = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-github-delivery': 'emb-1' }))
    expect(first.status).toBe(201)
    const second = await post(app, '/api/trigger/team/deploy', BODY, signed(BODY, { 'x-github-delivery': 'emb-2' }))
    expect(second.status).toBe(200)
    const { run } = await first.json() as { run: string }
    expect((await second.json() as { run: string }).run).toBe(run)
    const items = await runs()
    expect(items.map((i) => i.metadata.name)).toEqual([run])
    const tplUid = ((await custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', name: 'deploy' })) as { metadata: { uid: string } }).metadata.uid
    expect(run).toBe(`deploy-run-${deliverySuffix(tplUid, githubKey(BODY))}`)
    expect(items[0]?.metadata.ownerReferences?.[0]?.uid).toBe(tplUid)
  })

  it('a bad signature is 401, creates nothing, and leaves a Warning Event on the template', async () => {
    const { app } = appFor(kube)
    const before = (await runs()).length
    const res = await post(app, '/api/trigger/team/deploy', BODY, { 'x-hub-signature-256': githubSignature('guess', BODY) })
    expect(res.status).toBe(401)
    expect((await runs()).length).toBe(before)
    const events = await kube.listEvents(NS, { kind: 'Workflow', name: 'deploy' })
    expect(events.map((e) => [e.type, e.reason])).toContainEqual(['Warning', 'WebhookSignatureInvalid'])
  })

  it('a default rule naming a missing workflow is 401 and creates nothing', async () => {
    const { app } = appFor(kube)
    const before = (await custom.listNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' }) as { items: unknown[] }).items.length
    const push = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'acme/shop' } })
    const res = await post(app, '/api/trigger/team', push, signed(push))
    expect([res.status, await res.json()]).toEqual([401, { error: 'unauthorized' }])
    const after = (await custom.listNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' }) as { items: unknown[] }).items.length
    expect(after).toBe(before)
  })
})
