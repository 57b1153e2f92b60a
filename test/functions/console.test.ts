import { readdirSync, readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import { ApiextensionsV1Api, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { ASSET_CACHE_CONTROL, createApp } from '../../functions/console/index.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { KubeHttp, type KubeObject } from '../../local/knative/kube-http.js'
import { loadAssets, type ConsoleAssets } from '../../shared/console/assets.js'
import { consoleConfig } from '../../shared/console/auth/config.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'

/**
 * Every route of the console function over real HTTP on 127.0.0.1, reading the embedded API
 * server with Kinetic's CRDs: what answers, with which status and headers, who is sent to sign in.
 */
const ROOT = join(import.meta.dirname, '../..')
const NS = 'ai-agents'
const RUN = 'wf-one'
const CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
const NOW = new Date('2026-03-01T12:00:00Z')

let api: ApiServer
let runRv = ''
const servers: ServerType[] = []

/** The console with `env` on a real port; its Kube is the embedded server's admin. */
async function consoleWith(env: Record<string, string>, kc = api.kubeConfigObject()): Promise<string> {
  const app = createApp({ config: consoleConfig(env), log: silentLogger, now: () => NOW, kubeFor: () => new KubeClient(kc) })
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const LOCAL = { KINETIC_CONSOLE_AUTH: 'local', KINETIC_CONSOLE_ACTIONS: 'true', KINETIC_CONSOLE_SECURE_COOKIES: 'false' }
let local: string

const get = (url: string, init?: RequestInit) => fetch(url, { redirect: 'manual', ...init })

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(ROOT, 'crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  const http = new KubeHttp(kc)
  await http.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  const planner = parseAllDocuments(readFileSync(join(ROOT, 'examples', 'local', '10-agents.yaml'), 'utf8')).map((d) => d.toJSON() as KubeObject)[0] as KubeObject
  await http.apply(planner)
  await http.apply({
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: RUN, namespace: NS },
    spec: { parameters: { release: 'v1' }, steps: [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'publish', agentRef: { name: 'planner' }, dependsOn: ['plan'] }] },
  } as KubeObject)
  const kube = new KubeClient(kc)
  const wf = await kube.getWorkflow(NS, RUN)
  const written = await kube.patchWorkflowStatus(NS, RUN, wf?.metadata.resourceVersion ?? '', {
    phase: 'Running', startTime: '2026-03-01T11:58:00Z', stepStatuses: [{ name: 'plan', phase: 'Succeeded', startTime: '2026-03-01T11:58:00Z', completionTime: '2026-03-01T11:59:00Z' }, { name: 'publish', phase: 'Running', startTime: '2026-03-01T11:59:00Z' }],
  } as never)
  runRv = written.metadata.resourceVersion ?? ''
  local = await consoleWith(LOCAL)
})

afterAll(async () => {
  for (const s of servers) s.close()
  await api?.close()
})

const PAGES = ['/workflows', `/workflows/${NS}/${RUN}`, `/workflows/${NS}/${RUN}/steps/plan`, '/agents', `/agents/${NS}/planner`, '/mcpservers', '/providers', '/recipes']

describe('the console function on the embedded API server', () => {
  it('sends / to the run list', async () => {
    const res = await get(`${local}/`)
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/workflows')
  })

  it.each(PAGES)('answers %s with a whole HTML document, the security headers and no caching', async (path) => {
    const res = await get(`${local}${path}`)
    const body = await res.text()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('referrer-policy')).toBe('same-origin')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(body).toMatch(/^<!doctype html>/i)
    expect(body).toContain('<html lang="en">')
    expect(body).toContain('kinetic-local-admin')
    // No inline script: the CSP would block it.
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })

  it('shows the run with its steps and live stream address', async () => {
    const body = await (await get(`${local}/workflows/${NS}/${RUN}`)).text()
    expect(body).toContain('data-step="plan"')
    expect(body).toContain('data-step="publish"')
    expect(body).toContain(`/live/workflows/${NS}/${RUN}?rv=${runRv}`)
  })

  it.each([
    [`/workflows/${NS}/missing`],
    [`/workflows/${NS}/${RUN}/steps/missing`],
    [`/agents/${NS}/missing`],
    [`/recipes/${NS}/missing`],
    ['/no-such-page'],
  ])('answers %s with a 404 page that still carries the headers', async (path) => {
    const res = await get(`${local}${path}`)
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(await res.text()).toContain('<html lang="en">')
  })

  it('answers ?fragment=1 with the page body only, for the client to insert', async () => {
    const res = await get(`${local}/workflows/${NS}/${RUN}/steps/plan?fragment=1`)
    const body = await res.text()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(body).not.toContain('<html')
    expect(body).not.toContain('<nav')
    expect(body).toContain('plan')
  })

  it('serves the stylesheet and scripts a page links under their content hash, cached for good', async () => {
    const page = await (await get(`${local}/workflows/${NS}/${RUN}`)).text()
    const links = [...page.matchAll(/(?:href|src)="(\/assets\/[0-9a-f]+\/[^"]+)"/g)].map((m) => m[1] as string)
    expect(links.some((l) => l.endsWith('/console.css'))).toBe(true)
    expect(links.some((l) => l.endsWith('/run.js'))).toBe(true)
    for (const link of links) {
      const res = await get(`${local}${link}`)
      expect(res.status, link).toBe(200)
      expect(res.headers.get('content-type'), link).toMatch(link.endsWith('.css') ? /^text\/css/ : /^text\/javascript/)
      expect(res.headers.get('cache-control'), link).toBe(ASSET_CACHE_CONTROL)
      expect((await res.arrayBuffer()).byteLength, link).toBeGreaterThan(0)
    }
    const stale = links[0]!.replace(/\/assets\/[0-9a-f]+\//, '/assets/0000000000000000/')
    expect((await get(`${local}${stale}`)).status).toBe(404)
    expect((await get(`${local}/assets/`)).status).toBe(404)
  })

  it.each([
    [`/live/workflows/${NS}/${RUN}?rv=RV`],
    [`/live/logs/${NS}/${RUN}/plan`],
  ])('streams %s as server-sent events until the browser leaves', async (path) => {
    const leave = new AbortController()
    const res = await get(`${local}${path.replace('RV', runRv)}`, { signal: leave.signal })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    leave.abort()
    await res.body?.cancel().catch(() => {})
  })

  it('passes the action endpoints through: a post without the console header is refused', async () => {
    const res = await get(`${local}/actions/approve/${NS}/${RUN}/publish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(res.status).toBe(403)
  })

  it('answers every action with 403 read_only when actions are off', async () => {
    const readOnly = await consoleWith({ ...LOCAL, KINETIC_CONSOLE_ACTIONS: 'false' })
    const res = await get(`${readOnly}/actions/approve/${NS}/${RUN}/publish`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-kinetic-console': '1' }, body: '{}' })
    expect(res.status).toBe(403)
    expect(JSON.stringify(await res.json())).toContain('read_only')
  })
})

describe('the console starting', () => {
  it('is not ready until its assets are bundled, so no first page waits for them', async () => {
    let release!: (assets: ConsoleAssets) => void
    const bundling = new Promise<ConsoleAssets>((resolve) => { release = resolve })
    const app = createApp({ config: consoleConfig(LOCAL), log: silentLogger, now: () => NOW, kubeFor: () => new KubeClient(api.kubeConfigObject()) }, bundling)
    expect((await app.request('/health/readiness')).status).toBe(503)
    release(await loadAssets())
    await bundling
    expect((await app.request('/health/readiness')).status).toBe(204)
  })
})

describe('the console when the API server is gone', () => {
  it('answers pages with a 503 page that says so, not a stack or JSON', async () => {
    const gone = await startApiServer()
    const kc = gone.kubeConfigObject()
    await gone.close()
    const down = await consoleWith(LOCAL, kc)
    const res = await get(`${down}/workflows/${NS}/${RUN}`)
    expect(res.status).toBe(503)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(await res.text()).toContain('<html lang="en">')
  })
})

describe('the console when nobody is identified', () => {
  it('sends someone not signed in (token mode) to /signin, remembering the page they asked for', async () => {
    const token = await consoleWith({ KINETIC_CONSOLE_AUTH: 'token', KINETIC_CONSOLE_SESSION_KEY: Buffer.alloc(32, 7).toString('base64') })
    const res = await get(`${token}/workflows/${NS}/${RUN}?page=2`)
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe(`/signin?next=${encodeURIComponent(`/workflows/${NS}/${RUN}?page=2`)}`)
    expect((await get(`${token}/agents`)).headers.get('location')).toBe('/signin?next=%2Fagents')

    const signin = await get(`${token}/signin`)
    expect(signin.status).toBe(200)
    expect(signin.headers.get('content-security-policy')).toBe(CSP)
    const signinPage = await signin.text()
    expect(signinPage).toContain('<form')
    // The sign-in page is styled and scripted like every other page.
    expect(signinPage).toMatch(/<link rel="stylesheet" href="\/assets\/[^"]+\/console\.css"/)

    // A live stream cannot follow a redirect: it is told it is not signed in.
    expect((await get(`${token}/live/workflows/${NS}/${RUN}?rv=${runRv}`)).status).toBe(401)
  })

  it('tells someone the proxy did not identify (proxy mode) so, and ignores forwarded headers from an untrusted peer', async () => {
    const proxy = await consoleWith({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8' })
    const res = await get(`${proxy}/workflows`, { headers: { 'x-forwarded-user': 'mallory', 'x-forwarded-groups': 'system:masters' } })
    expect(res.status).toBe(401)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    const body = await res.text()
    expect(body).toContain('<html lang="en">')
    expect(body).not.toContain('mallory')
  })
})
