// The recipes MCP server's auth on a real kube-apiserver (spec §14.2): the function
// runs as its own process with the shipped ServiceAccount and ClusterRole kinetic-recipes-mcp;
// its callers' tokens come from the TokenRequest API (and, for the shipped agent identity, from
// the token Secret kube-controller-manager fills), are checked by real TokenReviews, and every
// tool call by real SubjectAccessReviews for the caller. The client is the MCP SDK's own, over
// HTTP on 127.0.0.1. Two processes: one configured exactly as knative/services/recipes-mcp.yaml
// (no audience), one with KINETIC_RECIPES_MCP_AUDIENCE set.
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { eventually } from '../support/eventually.js'
import { startFunctionProcess, type FunctionProcess } from '../support/function-process.js'
import type { AuditEvent } from '../../cluster/control-plane.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'mcp-team'
const AGENTS = 'ai-agents'
const AUDIENCE = 'recipes-mcp'
const FUNCTION_USER = 'system:serviceaccount:kinetic-system:recipes-mcp'
const AUTHOR = `system:serviceaccount:${NS}:author`
const RECIPES = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes`
const manifests = loadManifests()
const spec = (image = 'nginx:1.27') => ({ workloads: [{ name: 'web', kind: 'Deployment', image }] })

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content?: Array<{ type: string; text?: string }> }
type Running = FunctionProcess

describeCluster('recipes-mcp authenticates and authorizes every caller with the API server (real TokenReview and SubjectAccessReview)', () => {
  const cp = useControlPlane({ controllerManager: true, auditLog: true })
  const running: Running[] = []
  let shipped: Running
  let withAudience: Running
  const tokens = new Map<string, string>()

  /** A TokenRequest for a ServiceAccount of NS (10 minutes, the shortest the API allows). */
  async function tokenFor(account: string, audiences?: string[], namespace = NS): Promise<string> {
    const req = await cp.current.admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${account}/token`, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600, ...(audiences ? { audiences } : {}) },
    })
    tokens.set(`${account}:${audiences?.join(',') ?? ''}`, req.status.token)
    return req.status.token
  }

  async function connect(server: Running, token: string | undefined): Promise<Client> {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
    const client = new Client({ name: 'cluster-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }))
    return client
  }

  async function call(server: Running, token: string, name: string, args: Record<string, unknown>): Promise<ToolResult> {
    const client = await connect(server, token)
    try {
      return (await client.callTool({ name, arguments: args })) as ToolResult
    } finally {
      await client.close()
    }
  }

  /** What initialize answers without the SDK, to see the status and headers themselves. */
  const initialize = (server: Running, token?: string) => fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  })

  const recipesNow = async () => (await cp.current.admin.request<{ items: KubeObject[] }>('GET', RECIPES)).items
    .map((r) => `${r.metadata?.name}@${r.metadata?.resourceVersion}`).sort()

  // The audit record of a request is written as its answer goes out, so wait until the log is quiet.
  async function settledAudit(): Promise<AuditEvent[]> {
    let last = -1
    for (let i = 0; i < 40; i++) {
      const events = cp.current.auditEvents()
      if (events.length === last) return events
      last = events.length
      await new Promise((r) => setTimeout(r, 75))
    }
    return cp.current.auditEvents()
  }
  const recipeWritesSince = (events: AuditEvent[], from: number) => events.slice(from)
    .filter((e) => e.user.username === FUNCTION_USER && e.objectRef?.resource === 'workflowrecipes' && !['get', 'list', 'watch'].includes(e.verb))

  beforeAll(async () => {
    const admin = cp.current.admin
    for (const file of ['workflowrecipes', 'workflowrecipepolicies', 'mcpservers']) {
      const crd = (await import('yaml')).parse((await import('node:fs')).readFileSync(join(ROOT, 'crds', `${file}.purko.io.yaml`), 'utf8'))
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    }
    // As shipped: kinetic-system, the function's account and role, the people's roles, and platform/'s agent identity.
    const shippedFiles = ['namespace.yaml', 'rbac/recipes-mcp.yaml', 'admission/recipe-roles.yaml']
    for (const m of manifests.filter((x) => shippedFiles.includes(x.file))) await admin.apply(m.doc)
    for (const ns of [NS, AGENTS]) await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
    for (const account of ['author', 'outsider', 'gone']) await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace: NS } })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'author', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-recipe-author' },
      subjects: [{ kind: 'ServiceAccount', name: 'author', namespace: NS }] })
    await admin.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-password', namespace: NS }, stringData: { password: 'not-for-authors' } })
    for (let i = 0; i < 100 && !(await admin.get('/apis/purko.io/v1alpha1')); i++) await new Promise((r) => setTimeout(r, 100))
    admin.forgetDiscovery()
    for (const m of manifests.filter((x) => x.file === 'platform/recipes-mcp.yaml')) await admin.apply(m.doc)

    const service = manifests.find((m) => m.kind === 'Service' && m.name === 'recipes-mcp')!
    const serviceEnv = Object.fromEntries((service.doc.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>)
      .flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])))
    const { path } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'recipes-mcp')
    ;[shipped, withAudience] = await Promise.all([
      startFunction({ ...serviceEnv, KUBECONFIG: path }),
      startFunction({ ...serviceEnv, KUBECONFIG: path, KINETIC_RECIPES_MCP_AUDIENCE: AUDIENCE }),
    ])
    running.push(shipped, withAudience)
  }, 90_000)

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()))
    // No caller's token is ever written to a log.
    for (const r of running) for (const token of tokens.values()) expect(r.output().includes(token)).toBe(false)
  })

  it('the function runs as its own ServiceAccount: the TokenReviews and SubjectAccessReviews are its requests', async () => {
    const token = await tokenFor('author')
    expect((await call(shipped, token, 'list-recipes', { namespace: NS })).isError).toBeFalsy()
    const reviews = (await settledAudit()).filter((e) => ['tokenreviews', 'subjectaccessreviews'].includes(e.objectRef?.resource ?? ''))
    expect(new Set(reviews.filter((e) => e.user.username !== 'system:kube-controller-manager').map((e) => `${e.user.username} ${e.verb} ${e.objectRef?.resource} ${e.responseStatus?.code}`)))
      .toEqual(new Set([`${FUNCTION_USER} create tokenreviews 201`, `${FUNCTION_USER} create subjectaccessreviews 201`]))
  })

  it('no token, a malformed one, or one of a deleted ServiceAccount: 401 with WWW-Authenticate: Bearer, and the SDK client cannot connect', async () => {
    const orphan = await tokenFor('gone')
    await cp.current.admin.request('DELETE', `/api/v1/namespaces/${NS}/serviceaccounts/gone`)
    await eventually('ServiceAccount gone deleted', async () => (await cp.current.admin.get(`/api/v1/namespaces/${NS}/serviceaccounts/gone`)) === null)
    for (const token of [undefined, 'not-a-token', orphan]) {
      const res = await initialize(shipped, token)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
      await expect(connect(shipped, token)).rejects.toThrow()
    }
  })

  it('an allowed caller lists and deploys; the recipe is theirs, marked deployed over MCP', async () => {
    const token = await tokenFor('author')
    const listed = await call(shipped, token, 'list-recipes', { namespace: NS })
    expect(listed.isError).toBeFalsy()
    expect(listed.structuredContent).toMatchObject({ items: [] })
    const deployed = await call(shipped, token, 'deploy-recipe', { namespace: NS, name: 'shop', spec: spec() })
    expect(deployed.isError, JSON.stringify(deployed.structuredContent)).toBeFalsy()
    expect(deployed.structuredContent).toMatchObject({ namespace: NS, name: 'shop', created: true, dryRun: false })
    const live = await cp.current.admin.get<KubeObject>(`${RECIPES}/shop`)
    expect(live?.metadata?.annotations).toMatchObject({ 'purko.io/deployed-by': AUTHOR, 'purko.io/deployed-via': 'mcp' })
    // The write was the function's own, after the caller's access was reviewed.
    const writes = (await settledAudit()).filter((e) => e.objectRef?.resource === 'workflowrecipes' && e.verb === 'create' && e.objectRef?.namespace === NS)
    expect([...new Set(writes.map((e) => e.user.username))]).toEqual([FUNCTION_USER])
    const again = await call(shipped, token, 'list-recipes', { namespace: NS })
    expect((again.structuredContent?.items as Array<{ name: string }>).map((i) => i.name)).toEqual(['shop'])
  })

  it('a caller without the role gets Forbidden for every tool, and nothing is written', async () => {
    const token = await tokenFor('outsider')
    const before = await recipesNow()
    const from = (await settledAudit()).length
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['list-recipes', { namespace: NS }, 'list'],
      ['get-recipe', { namespace: NS, name: 'shop' }, 'get'],
      ['deploy-recipe', { namespace: NS, name: 'intruder', spec: spec() }, 'create'],
      ['deploy-recipe', { namespace: NS, name: 'shop', spec: spec('nginx:1.28') }, 'update'],
      ['delete-recipe', { namespace: NS, name: 'shop' }, 'delete'],
    ]
    for (const [tool, args, verb] of cases) {
      const result = await call(shipped, token, tool, args)
      expect(result.isError, `${tool} ${JSON.stringify(args)}`).toBe(true)
      expect(result.structuredContent?.error, tool).toMatchObject({ code: 'Forbidden', details: { verb, group: 'purko.io', resource: 'workflowrecipes', namespace: NS } })
    }
    expect(await recipesNow()).toEqual(before)
    expect(recipeWritesSince(await settledAudit(), from).map((e) => `${e.verb} ${e.objectRef?.name ?? ''}`)).toEqual([])
  })

  it('deploying a spec that names a Secret the caller may not read is Forbidden on that Secret, and writes nothing', async () => {
    const token = await tokenFor('author')
    const before = await recipesNow()
    const from = (await settledAudit()).length
    const withSecret = { workloads: [{ ...spec().workloads[0], envSecret: [{ name: 'DB_PASSWORD', secretName: 'db-password', key: 'password' }] }] }
    const result = await call(shipped, token, 'deploy-recipe', { namespace: NS, name: 'with-secret', spec: withSecret })
    expect(result.isError).toBe(true)
    expect(result.structuredContent?.error).toMatchObject({ code: 'Forbidden', details: { verb: 'get', group: '', resource: 'secrets', namespace: NS, name: 'db-password' } })
    expect(await recipesNow()).toEqual(before)
    expect(recipeWritesSince(await settledAudit(), from)).toEqual([])
    // The function itself never reads the Secret: it has no right to.
    expect((await settledAudit()).slice(from).filter((e) => e.user.username === FUNCTION_USER && e.objectRef?.resource === 'secrets')).toEqual([])
  })

  it('with KINETIC_RECIPES_MCP_AUDIENCE set, only tokens requested for that audience pass: the API server\'s own and other audiences get 401', async () => {
    const forRecipes = await tokenFor('author', [AUDIENCE])
    expect((await call(withAudience, forRecipes, 'list-recipes', { namespace: NS })).isError).toBeFalsy()
    for (const wrong of [await tokenFor('author'), await tokenFor('author', ['someone-else'])]) {
      expect((await initialize(withAudience, wrong)).status).toBe(401)
    }
    // As shipped (no audience) a token for another audience is not the API server's either.
    expect((await initialize(shipped, forRecipes)).status).toBe(401)
  })

  it('the shipped agent identity (platform/recipes-mcp.yaml) authenticates, is granted nothing, and gets exactly what is bound to it', async () => {
    // kube-controller-manager's token controller fills the ServiceAccount token Secret.
    const encoded = await eventually('the token of Secret ai-agents/recipes-mcp-token', async () =>
      (await cp.current.admin.get<KubeObject & { data?: Record<string, string> }>(`/api/v1/namespaces/${AGENTS}/secrets/recipes-mcp-token`))?.data?.token)
    const token = Buffer.from(encoded, 'base64').toString('utf8')
    tokens.set('recipes-mcp-client', token)
    // Discovery works with it (tools/list needs no review), the tools refuse.
    const client = await connect(shipped, token)
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['delete-recipe', 'deploy-recipe', 'get-recipe', 'get-recipe-status', 'list-recipes'])
    } finally {
      await client.close()
    }
    expect((await call(shipped, token, 'list-recipes', { namespace: AGENTS })).structuredContent?.error).toMatchObject({ code: 'Forbidden' })
    // The grant knative/README.md gives.
    await cp.current.admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'agents-recipe-author', namespace: AGENTS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-recipe-author' },
      subjects: [{ kind: 'ServiceAccount', name: 'recipes-mcp-client', namespace: AGENTS }] })
    await eventually('the RoleBinding to take effect', async () => !(await call(shipped, token, 'list-recipes', { namespace: AGENTS })).isError)
    const deployed = await call(shipped, token, 'deploy-recipe', { namespace: AGENTS, name: 'from-an-agent', spec: spec() })
    expect(deployed.isError, JSON.stringify(deployed.structuredContent)).toBeFalsy()
    expect((await cp.current.admin.get<KubeObject>(`/apis/purko.io/v1alpha1/namespaces/${AGENTS}/workflowrecipes/from-an-agent`))?.metadata?.annotations)
      .toMatchObject({ 'purko.io/deployed-by': `system:serviceaccount:${AGENTS}:recipes-mcp-client` })
    // Still nothing elsewhere.
    expect((await call(shipped, token, 'list-recipes', { namespace: NS })).structuredContent?.error).toMatchObject({ code: 'Forbidden' })
  })
})

/** Starts recipes-mcp as its own process; `url` is its MCP endpoint. */
async function startFunction(env: Record<string, string>): Promise<Running> {
  const fn = await startFunctionProcess('recipes-mcp', env)
  return { ...fn, url: `${fn.url}/mcp` }
}

