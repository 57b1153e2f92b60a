// The console's action endpoint forwarding to a stub run-control: a real HTTP server on
// 127.0.0.1 that records what it was sent and answers as told. The console app is served on
// 127.0.0.1 too where the peer address matters (proxy mode).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Hono } from 'hono'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createApp } from '../../../functions/run-control/index.js'
import { actionRoutes, MAX_ACTION_BYTES } from '../../../shared/console/auth/actions.js'
import { newSession, sealSession, SESSION_COOKIE } from '../../../shared/console/auth/session.js'
import type { ConsoleDeps } from '../../../shared/console/context.js'
import { silentLogger } from '../../../shared/log.js'
import { runControlConfig } from '../../../shared/run-control/config.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { consoleDeps, listen, NOW, SESSION_KEY } from './support.js'

interface Received { method: string; url: string; headers: IncomingHttpHeaders; body: string }

const ALICE_TOKEN = 'alice-token-5f5f'
const CONSOLE_TOKEN = 'console-sa-token-6e6e'
let runControl: Server
let runControlUrl: string
const received: Received[] = []
let answer: { status: number; body: string; headers?: Record<string, string> } = { status: 200, body: '{}' }

beforeAll(async () => {
  runControl = createServer((req, res) => {
    let body = ''
    req.on('data', (b: Buffer) => { body += b.toString() })
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      res.writeHead(answer.status, { 'content-type': 'application/json', 'x-internal': 'not for the browser', ...(answer.headers ?? {}) })
      res.end(answer.body)
    })
  })
  await new Promise<void>((resolve) => runControl.listen(0, '127.0.0.1', resolve))
  runControlUrl = `http://127.0.0.1:${(runControl.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => runControl.close(resolve))
})
beforeEach(() => {
  received.length = 0
  answer = { status: 200, body: JSON.stringify({ status: 'approved', user: 'alice' }) }
})

function setup(env: Record<string, string> = {}, extra: Partial<ConsoleDeps> = {}, kube?: EmbeddedKube) {
  const made = consoleDeps({ KINETIC_CONSOLE_ACTIONS: 'true', KINETIC_RUN_CONTROL_URL: runControlUrl, ...env }, extra, kube)
  const app = new Hono().route('/actions', actionRoutes(made.deps))
  return { ...made, app }
}
const aliceCookie = () => `${SESSION_COOKIE}=${sealSession(Buffer.from(SESSION_KEY, 'base64'), newSession(ALICE_TOKEN, 'alice', ['team-a'], NOW))}`
const post = (app: Hono, path: string, opts: { headers?: Record<string, string>; body?: string } = {}) => app.request(path, {
  method: 'POST',
  headers: { 'x-kinetic-console': '1', 'content-type': 'application/json', host: 'console.example', cookie: aliceCookie(), ...(opts.headers ?? {}) },
  body: opts.body ?? JSON.stringify({ reason: 'window open' }),
})

describe('POST /actions/* in token mode', () => {
  it("forwards to run-control's /api/<same path> with the person's own token and the body; never the cookie", async () => {
    const { app, lines } = setup()
    const res = await post(app, '/actions/approve/team-a/deploy/ship', { headers: { 'idempotency-key': 'k-1' } })
    expect([res.status, await res.json()]).toEqual([200, { status: 'approved', user: 'alice' }])
    expect(received).toHaveLength(1)
    const [sent] = received
    expect(sent).toMatchObject({ method: 'POST', url: '/api/approve/team-a/deploy/ship', body: JSON.stringify({ reason: 'window open' }) })
    expect(sent!.headers).toMatchObject({ authorization: `Bearer ${ALICE_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': 'k-1' })
    expect(sent!.headers).not.toHaveProperty('cookie')
    expect(sent!.headers).not.toHaveProperty('impersonate-user')
    expect(lines.join('\n')).not.toContain(ALICE_TOKEN)
    expect(lines.map((l) => JSON.parse(l))).toContainEqual(expect.objectContaining({ action: 'approve/team-a/deploy/ship', user: 'alice', status: 200 }))
  })

  it.each([
    [401, { error: 'unauthorized' }],
    [403, { error: 'forbidden', message: 'alice may not approve workflows.purko.io team-a/deploy' }],
    [404, { error: 'not_found', message: 'Workflow team-a/deploy not found' }],
    [409, { error: 'conflict', message: 'Workflow team-a/deploy has already finished (Succeeded)' }],
    [503, { error: 'unavailable', message: 'The Kubernetes API is unavailable; try again shortly' }],
  ])("answers run-control's %s and JSON unchanged", async (status, body) => {
    const { app } = setup()
    answer = { status, body: JSON.stringify(body), headers: status === 503 ? { 'retry-after': '5' } : {} }
    const res = await post(app, '/actions/approve/team-a/deploy/ship')
    expect([res.status, await res.json()]).toEqual([status, body])
    expect(res.headers.get('x-internal')).toBeNull()
    if (status === 503) expect(res.headers.get('retry-after')).toBe('5')
  })

  it('sends nothing and answers 401 when nobody is signed in (anonymous reading included)', async () => {
    for (const env of [{}, { KINETIC_CONSOLE_ANONYMOUS_READ: 'true' }] as Record<string, string>[]) {
      const { app } = setup(env)
      const res = await post(app, '/actions/cancel/team-a/deploy', { headers: { cookie: '' } })
      expect(res.status).toBe(401)
      expect(await res.json()).toMatchObject({ error: 'unauthorized' })
    }
    expect(received).toEqual([])
  })
})

describe('refusals before anything is sent', () => {
  it.each([
    ['without the console header', { 'x-kinetic-console': '' }],
    ['from another origin', { origin: 'https://evil.example' }],
    ['from an opaque origin', { origin: 'null' }],
  ])('refuses a POST %s (403)', async (_, headers) => {
    const { app } = setup()
    const res = await post(app, '/actions/cancel/team-a/deploy', { headers })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ error: 'forbidden' })
    expect(received).toEqual([])
  })

  it('accepts its own origin, whatever the scheme the browser saw', async () => {
    const { app } = setup()
    expect((await post(app, '/actions/cancel/team-a/deploy', { headers: { origin: 'https://console.example' } })).status).toBe(200)
  })

  it('is read only unless actions are on: 403 read_only', async () => {
    const { app } = setup({ KINETIC_CONSOLE_ACTIONS: 'false' })
    const res = await post(app, '/actions/approve/team-a/deploy/ship')
    expect([res.status, await res.json()]).toEqual([403, { error: 'read_only', message: 'This console is read only (KINETIC_CONSOLE_ACTIONS is not true)' }])
    expect(received).toEqual([])
  })

  it('refuses a body over 64 KiB (413)', async () => {
    const { app } = setup()
    const res = await post(app, '/actions/rerun/team-a/deploy', { body: JSON.stringify({ reason: 'x'.repeat(MAX_ACTION_BYTES) }) })
    expect(res.status).toBe(413)
    expect(received).toEqual([])
  })

  it('answers 405 for anything but POST', async () => {
    const { app } = setup()
    const res = await app.request('/actions/approve/team-a/deploy/ship')
    expect([res.status, res.headers.get('allow')]).toEqual([405, 'POST'])
  })
})

describe('run-control not answering', () => {
  it('is 503 unavailable naming run-control when nothing listens there', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const { app } = setup({ KINETIC_RUN_CONTROL_URL: `http://127.0.0.1:${port}` })
    const res = await post(app, '/actions/cancel/team-a/deploy')
    expect([res.status, await res.json()]).toEqual([503, { error: 'unavailable', message: `run-control (http://127.0.0.1:${port}) is unreachable; try again shortly` }])
  })

  it('is 503 saying run-control did not answer in time when the request times out', async () => {
    const timedOut: typeof fetch = async () => { throw new DOMException('The operation was aborted due to timeout', 'TimeoutError') }
    const { app } = setup({}, { fetch: timedOut })
    const res = await post(app, '/actions/cancel/team-a/deploy')
    expect([res.status, await res.json()]).toEqual([503, { error: 'unavailable', message: `run-control (${runControlUrl}) did not answer within 10 s; try again shortly` }])
  })
})

describe('POST /actions/* in proxy and local mode', () => {
  it("sends the console ServiceAccount's token with Impersonate-User and one Impersonate-Group per group", async () => {
    const { deps } = setup({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1' }, { ownToken: async () => CONSOLE_TOKEN })
    const server = await listen(new Hono().route('/actions', actionRoutes(deps)))
    try {
      const res = await fetch(`${server.url}/actions/run/team-a/nightly`, {
        method: 'POST',
        headers: { 'x-kinetic-console': '1', 'x-forwarded-user': 'alice@example.com', 'x-forwarded-groups': 'team-a,oncall', cookie: 'other=1' },
        body: '{"parameters":{"env":"dev"}}',
      })
      expect(res.status).toBe(200)
    } finally {
      await server.close()
    }
    const [sent] = received
    expect(sent).toMatchObject({ url: '/api/run/team-a/nightly', body: '{"parameters":{"env":"dev"}}' })
    expect(sent!.headers).toMatchObject({ authorization: `Bearer ${CONSOLE_TOKEN}`, 'impersonate-user': 'alice@example.com', 'impersonate-group': 'team-a, oncall' })
    expect(sent!.headers).not.toHaveProperty('cookie')
    expect(sent!.headers).not.toHaveProperty('x-forwarded-user')
  })

  it('answers 503 in proxy mode when the console has no token of its own to send', async () => {
    const { deps } = setup({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1' }, { ownToken: async () => undefined })
    const server = await listen(new Hono().route('/actions', actionRoutes(deps)))
    try {
      const res = await fetch(`${server.url}/actions/cancel/team-a/deploy`, { method: 'POST', headers: { 'x-kinetic-console': '1', 'x-forwarded-user': 'alice' } })
      expect([res.status, await res.json()]).toEqual([503, { error: 'unavailable', message: 'The console has no ServiceAccount token to call run-control with' }])
    } finally {
      await server.close()
    }
    expect(received).toEqual([])
  })

  it('names the local admin with Impersonate-User on the local plane, with no token', async () => {
    const { app } = setup({ KINETIC_CONSOLE_AUTH: 'local' })
    expect((await post(app, '/actions/cancel/team-a/deploy', { headers: { cookie: '' } })).status).toBe(200)
    expect(received[0]!.headers).toMatchObject({ 'impersonate-user': 'kinetic-local-admin', 'impersonate-group': 'system:masters' })
    expect(received[0]!.headers).not.toHaveProperty('authorization')
  })
})

describe('through the real run-control', () => {
  it('a proxy-mode approval reaches run-control as alice via the console, and alice is who is recorded', async () => {
    const kube = new EmbeddedKube({ identities: false, workflows: [{
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'deploy', namespace: 'team-a', uid: 'u1' },
      spec: { steps: [{ name: 'ship', agentRef: { name: 'shipper' } }], parallelism: 1, failureStrategy: 'failFast' },
    }] })
    const consoleUser = 'system:serviceaccount:kinetic-system:console'
    kube.tokens.set(CONSOLE_TOKEN, { username: consoleUser })
    kube.allow(consoleUser, 'impersonate', 'users', undefined, 'alice').allow(consoleUser, 'impersonate', 'groups')
    kube.allow('oncall', 'approve', 'workflows', 'team-a')
    const rc = await listen(createApp({ kube, log: silentLogger, now: () => NOW, config: runControlConfig({}) }))
    const { deps } = setup({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1', KINETIC_RUN_CONTROL_URL: rc.url }, { ownToken: async () => CONSOLE_TOKEN }, kube) // one cluster: the console's and run-control's
    const consoleServer = await listen(new Hono().route('/actions', actionRoutes(deps)))
    try {
      const res = await fetch(`${consoleServer.url}/actions/approve/team-a/deploy/ship`, {
        method: 'POST', headers: { 'x-kinetic-console': '1', 'x-forwarded-user': 'alice', 'x-forwarded-groups': 'team-a, oncall' }, body: '{}',
      })
      expect([res.status, await res.json()]).toEqual([200, { status: 'approved', workflow: 'deploy', step: 'ship', namespace: 'team-a', user: 'alice' }])
    } finally {
      await consoleServer.close()
      await rc.close()
    }
    expect(kube.accessReviews.map((r) => `${r.user} ${r.verb} ${r.resource} ${r.name}`)).toEqual([
      `${consoleUser} impersonate users alice`, `${consoleUser} impersonate groups team-a`, `${consoleUser} impersonate groups oncall`, 'alice approve workflows deploy',
    ])
    expect(kube.events.map((e) => e.message)).toEqual([`alice via ${consoleUser} approved step ship`])
  })
})
