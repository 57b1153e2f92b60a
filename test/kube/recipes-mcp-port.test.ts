// The Kube port verbs of the recipes MCP server through the real client-node adapter: recipe
// list pages, create/replace (dry run, 422 causes, resourceVersion guard) and delete against
// the embedded API server with Kinetic's CRDs; TokenReview and SubjectAccessReview, which the
// embedded API server does not serve, against a stub HTTP endpoint that records what the
// client sends (the cluster tier, test/cluster/recipes-mcp-auth.test.ts, runs the real ones).
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ApiextensionsV1Api, KubeConfig, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConflictError, RefusedError, TransientError } from '../../shared/core/errors.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'

const NS = 'recipes-mcp-port'

const recipe = (name: string, labels?: Record<string, string>, spec: unknown = { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] }) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
  metadata: { name, namespace: NS, ...(labels ? { labels } : {}), annotations: { 'purko.io/deployed-via': 'mcp' } },
  spec,
}) as unknown as WorkflowRecipe

describe('KubeClient recipe writes for recipes-mcp on the embedded API server', () => {
  let api: ApiServer
  let kube: KubeClient

  beforeAll(async () => {
    api = await startApiServer()
    const kc = api.kubeConfigObject()
    kube = new KubeClient(kc)
    const ext = kc.makeApiClient(ApiextensionsV1Api)
    const dir = join(import.meta.dirname, '../../crds')
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
    }
  })

  afterAll(async () => {
    await api?.close()
  })

  it('creates a recipe (generation 1, server fields set), answers exists the second time, and a dry run stores nothing', async () => {
    const dry = await kube.createRecipe(recipe('dry'), { dryRun: true })
    expect(dry).toMatchObject({ metadata: { name: 'dry', namespace: NS, generation: 1 } })
    expect(await kube.getRecipe(NS, 'dry')).toBeNull()

    const created = await kube.createRecipe(recipe('shop', { app: 'shop' }))
    expect(created).toMatchObject({ metadata: { name: 'shop', uid: expect.any(String), resourceVersion: expect.any(String), generation: 1 } })
    expect(await kube.createRecipe(recipe('shop'))).toBe('exists')
    // CRD defaults are applied by the API server.
    expect((await kube.getRecipe(NS, 'shop'))!.spec).toMatchObject({ requireApproval: false })
  })

  it('refuses an invalid recipe with a RefusedError 422 carrying the causes, on a dry run too', async () => {
    for (const dryRun of [false, true]) {
      const err = await kube.createRecipe(recipe('bad', undefined, { workloads: [{ name: 'web', kind: 'Pod', image: 'x:1' }] }), { dryRun }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(RefusedError)
      expect(err).toMatchObject({ code: 422, message: expect.stringContaining('bad') })
      expect((err as RefusedError).causes).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining('kind'), message: expect.any(String) })]))
    }
    expect(await kube.getRecipe(NS, 'bad')).toBeNull()
  })

  it('replaces guarded by resourceVersion (generation up on a spec change), a dry run changes nothing, a stale version is a ConflictError', async () => {
    const live = (await kube.getRecipe(NS, 'shop'))!
    const next = { ...live, spec: { ...live.spec, version: '2' } }
    const dry = await kube.replaceRecipe(next, { dryRun: true })
    expect(dry.spec.version).toBe('2')
    expect((await kube.getRecipe(NS, 'shop'))!.spec.version).toBeUndefined()

    const replaced = await kube.replaceRecipe(next)
    expect(replaced.metadata.generation).toBe(2)
    expect(replaced.metadata.uid).toBe(live.metadata.uid)
    await expect(kube.replaceRecipe({ ...next, spec: { ...next.spec, version: '3' } })).rejects.toBeInstanceOf(ConflictError)
    await expect(kube.replaceRecipe({ ...recipe('never'), metadata: { ...recipe('never').metadata, resourceVersion: '1' } })).rejects.toBeInstanceOf(ConflictError)
    const invalid = await kube.replaceRecipe({ ...replaced, spec: { ...replaced.spec, workloads: [{ name: 'web', kind: 'Pod' }] } as never }).catch((e: unknown) => e)
    expect(invalid).toMatchObject({ name: 'RefusedError', code: 422 })
  })

  it('lists one page at a time with continue, by namespace or cluster-wide, by label selector', async () => {
    for (const name of ['p1', 'p2', 'p3']) await kube.createRecipe(recipe(name, { page: 'yes' }))
    const first = await kube.listRecipes({ namespace: NS, labelSelector: 'page=yes', limit: 2 })
    expect(first.items.map((r) => r.metadata.name)).toEqual(['p1', 'p2'])
    expect(first.continue).toEqual(expect.any(String))
    const rest = await kube.listRecipes({ namespace: NS, labelSelector: 'page=yes', limit: 2, continue: first.continue! })
    expect(rest.items.map((r) => r.metadata.name)).toEqual(['p3'])
    expect(rest.continue).toBeUndefined()
    const all = await kube.listRecipes({})
    expect(all.items.map((r) => r.metadata.name)).toEqual(expect.arrayContaining(['shop', 'p1', 'p2', 'p3']))
    expect((await kube.listRecipes({ labelSelector: 'app=shop' })).items.map((r) => r.metadata.name)).toEqual(['shop'])
    await expect(kube.listRecipes({ labelSelector: 'app in (' })).rejects.toMatchObject({ name: 'RefusedError', code: 400 })
  })

  it('deletes a recipe (true), and answers false for one that is not there', async () => {
    expect(await kube.deleteRecipe(NS, 'p3')).toBe(true)
    expect(await kube.getRecipe(NS, 'p3')).toBeNull()
    expect(await kube.deleteRecipe(NS, 'p3')).toBe(false)
  })
})

describe('KubeClient TokenReview and SubjectAccessReview (stub API endpoint)', () => {
  let server: Server
  let kube: KubeClient
  const requests: { path: string; body: any }[] = []
  let answer: (path: string, body: any) => { status: number; body: unknown } = () => ({ status: 500, body: {} })

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = ''
      req.on('data', (c) => { raw += c })
      req.on('end', () => {
        const body = raw ? JSON.parse(raw) : undefined
        requests.push({ path: req.url ?? '', body })
        const out = answer(req.url ?? '', body)
        res.writeHead(out.status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(out.body))
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const kc = new KubeConfig()
    kc.loadFromOptions({
      clusters: [{ name: 'stub', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'sa', token: 'function-sa-token' }],
      contexts: [{ name: 'stub', cluster: 'stub', user: 'sa' }],
      currentContext: 'stub',
    })
    kube = new KubeClient(kc)
  })

  afterAll(async () => {
    await new Promise((r) => server.close(r))
  })

  it('reviews a token for the audiences and returns who it belongs to; an unauthenticated token is null', async () => {
    answer = (_p, body) => ({
      status: 201,
      body: { ...body, status: body.spec.token === 'good'
        ? { authenticated: true, audiences: body.spec.audiences, user: { username: 'system:serviceaccount:a:b', uid: 'u1', groups: ['system:serviceaccounts'], extra: { 'authentication.kubernetes.io/pod-name': ['p'] } } }
        : { authenticated: false, error: 'invalid bearer token' } },
    })
    expect(await kube.reviewToken('good', ['recipes-mcp'])).toEqual({
      username: 'system:serviceaccount:a:b', uid: 'u1', groups: ['system:serviceaccounts'], extra: { 'authentication.kubernetes.io/pod-name': ['p'] },
    })
    expect(requests.at(-1)).toEqual({
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'good', audiences: ['recipes-mcp'] } },
    })
    expect(await kube.reviewToken('bad')).toBeNull()
    expect(requests.at(-1)!.body.spec).toEqual({ token: 'bad' })
  })

  it("asks a SubjectAccessReview with the caller's user, uid, groups, extra and the resource attributes; denied or unanswered is false", async () => {
    answer = (_p, body) => ({ status: 201, body: { ...body, status: { allowed: body.spec.resourceAttributes.verb === 'get' } } })
    const caller = { username: 'alice', uid: 'u-a', groups: ['devs'], extra: { scopes: ['s'] } }
    expect(await kube.reviewAccess(caller, { verb: 'get', group: '', resource: 'secrets', namespace: 'team-a', name: 'db' })).toBe(true)
    expect(requests.at(-1)).toEqual({
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
        spec: { user: 'alice', uid: 'u-a', groups: ['devs'], extra: { scopes: ['s'] }, resourceAttributes: { verb: 'get', group: '', resource: 'secrets', namespace: 'team-a', name: 'db' } },
      },
    })
    expect(await kube.reviewAccess({ username: 'alice' }, { verb: 'list', group: 'purko.io', resource: 'workflowrecipes' })).toBe(false)
    expect(requests.at(-1)!.body.spec).toEqual({ user: 'alice', resourceAttributes: { verb: 'list', group: 'purko.io', resource: 'workflowrecipes' } })
    // An explicit deny wins over allowed (a webhook authorizer may answer both).
    answer = (_p, body) => ({ status: 201, body: { ...body, status: { allowed: true, denied: true } } })
    expect(await kube.reviewAccess(caller, { verb: 'get', group: '', resource: 'secrets' })).toBe(false)
  })

  it('classifies failures like every other call: 5xx is transient', async () => {
    answer = () => ({ status: 503, body: { kind: 'Status', message: 'unavailable' } })
    const before = requests.length
    await expect(kube.reviewToken('good')).rejects.toBeInstanceOf(TransientError)
    await expect(kube.reviewAccess({ username: 'a' }, { verb: 'get', group: '', resource: 'x' })).rejects.toBeInstanceOf(TransientError)
    expect(requests.length).toBe(before + 2)
  })
})
