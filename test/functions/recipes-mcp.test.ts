// recipes-mcp through the SDK's real MCP client over HTTP on 127.0.0.1 (the Hono app served by
// @hono/node-server), with EmbeddedKube as the API server: TokenReview and SubjectAccessReview
// answers are configured per test, and every write and review is recorded.
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { pino } from 'pino'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/recipes-mcp/index.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { Logger } from '../../shared/log.js'
import { recipeConfig, type RecipeEnv } from '../../shared/recipe/plan/config.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import pkg from '../../package.json' with { type: 'json' }

const NS = 'team-a'
const TOKEN = 'alice-token-9f8e7d'
const ALICE = { username: 'alice', uid: 'u-alice', groups: ['devs', 'system:authenticated'], extra: { scopes: ['x'] } }

const servers: ServerType[] = []
const clients: Client[] = []
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
})
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
})

function recipe(name: string, spec: unknown, meta: { namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> } = {}, status?: WorkflowRecipeStatus): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name, namespace: meta.namespace ?? NS, ...(meta.annotations ? { annotations: meta.annotations } : {}), ...(meta.labels ? { labels: meta.labels } : {}) },
    spec, ...(status ? { status } : {}),
  })
}

const WEB = {
  description: 'A web page',
  version: '1.0.0',
  inputs: [
    { name: 'greeting', type: 'string', default: 'Hello', description: 'What the page says' },
    { name: 'size', type: 'string', enum: ['s', 'm'] },
  ],
  profiles: [{ name: 'small', values: { size: 's' } }, { name: 'medium', values: { size: 'm' } }],
  profile: 'small',
  workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', env: [{ name: 'GREETING', value: '{{inputs.greeting}}' }], ports: [{ name: 'http', port: 80 }] }],
}
const template = (extra: Record<string, string> = {}) => recipe('hello-web', WEB, { annotations: { 'purko.io/template': 'true', ...extra } })

/** A log that keeps every line, to prove what never appears in one. */
function capturingLog(): { log: Logger; lines: string[] } {
  const lines: string[] = []
  return { log: pino({ level: 'debug', base: { function: 'recipes-mcp' } }, { write: (l: string) => void lines.push(l) }) as Logger, lines }
}

async function start(kube: EmbeddedKube, env: RecipeEnv = {}, log = capturingLog()): Promise<{ url: string; lines: string[] }> {
  const app = createApp({ kube, log: log.log, recipes: recipeConfig(env), version: pkg.version })
  const url = await new Promise<string>((resolve) => {
    servers.push(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`)))
  })
  return { url, lines: log.lines }
}

async function connect(url: string, token: string | null = TOKEN): Promise<Client> {
  const client = new Client({ name: 'recipes-mcp-test', version: '1.0.0' })
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {}
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))
  clients.push(client)
  return client
}

/** A EmbeddedKube where alice's token authenticates and she may do `grants` (verb resource [namespace] [name]). */
function kubeWith(objects: { recipes?: WorkflowRecipe[] } = {}, ...grants: [string, string, string?, string?][]): EmbeddedKube {
  const kube = new EmbeddedKube(objects)
  kube.tokens.set(TOKEN, ALICE)
  for (const [verb, resource, namespace, name] of grants) kube.allow('alice', verb, resource, namespace, name)
  return kube
}

type Structured = Record<string, any>
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; structured: Structured; text: string }> {
  const result = await client.callTool({ name, arguments: args })
  const content = result.content as { type: string; text: string }[]
  expect(content).toHaveLength(1)
  return { isError: result.isError === true, structured: result.structuredContent as Structured, text: content[0]!.text }
}

async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<Structured> {
  const r = await call(client, name, args)
  expect(r.isError, r.text).toBe(false)
  expect(JSON.parse(r.text)).toEqual(r.structured)
  return r.structured
}

async function refused(client: Client, name: string, args: Record<string, unknown>): Promise<{ code: string; message: string; details?: Structured }> {
  const r = await call(client, name, args)
  expect(r.isError).toBe(true)
  expect(r.text).toBe(r.structured.error.message)
  return r.structured.error
}

const recipeWrites = (kube: EmbeddedKube) => kube.writes.filter((w) => w.includes('WorkflowRecipe'))

describe('recipes-mcp: transport, server info and tools/list', () => {
  it('initializes as kinetic-recipes with the package version and the tools capability, and lists the five tools with strict schemas and hints', async () => {
    const { url } = await start(kubeWith())
    const client = await connect(url)
    expect(client.getServerVersion()).toEqual({ name: 'kinetic-recipes', version: pkg.version })
    expect(client.getServerCapabilities()?.tools).toBeDefined()

    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['list-recipes', 'get-recipe', 'deploy-recipe', 'delete-recipe', 'get-recipe-status'])
    for (const t of tools) {
      expect(t.inputSchema).toMatchObject({ type: 'object', additionalProperties: false })
      if (t.name !== 'list-recipes') expect(t.inputSchema.required).toEqual(expect.arrayContaining(['namespace', 'name']))
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
    for (const readOnly of ['list-recipes', 'get-recipe', 'get-recipe-status']) expect(byName[readOnly]!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false })
    expect(byName['delete-recipe']!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true })
    expect(byName['deploy-recipe']!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false })

    const deploy = byName['deploy-recipe']!.inputSchema as Structured
    expect(deploy.properties.namespace).toEqual({ type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })
    expect(deploy.properties.name).toEqual({ type: 'string', maxLength: 40, pattern: '^[a-z]([-a-z0-9]*[a-z0-9])?$' })
    expect(deploy.properties.template).toMatchObject({ type: 'object', additionalProperties: false, required: ['name'] })
    expect(deploy.properties.manifest).toMatchObject({ type: 'string', maxLength: 524288 })
    expect(deploy.properties.values).toMatchObject({ type: 'object', maxProperties: 64, additionalProperties: { type: ['string', 'number', 'boolean'] } })
    expect(deploy.properties.labels).toMatchObject({ type: 'object', maxProperties: 16, additionalProperties: { type: 'string', maxLength: 63 } })
    expect(deploy.properties.dryRun).toMatchObject({ type: 'boolean', default: false })
    expect(deploy).not.toHaveProperty('oneOf')
    const list = byName['list-recipes']!.inputSchema as Structured
    expect(list.properties.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 500, default: 100 })
    expect(list.properties.labelSelector).toMatchObject({ maxLength: 1024 })
    expect(list.properties.kind).toMatchObject({ enum: ['all', 'templates', 'instances'], default: 'all' })
    expect((byName['get-recipe-status']!.inputSchema as Structured).properties.history).toMatchObject({ minimum: 0, maximum: 20, default: 5 })
    expect((byName['delete-recipe']!.inputSchema as Structured).properties.orphan).toMatchObject({ type: 'boolean', default: false })
  })

  it('is stateless: each protocol version of the spec is accepted, no session id is issued, answers are JSON', async () => {
    const { url } = await start(kubeWith())
    for (const protocolVersion of ['2025-03-26', '2025-06-18']) {
      const res = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'curl', version: '1' } } }),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('application/json')
      expect(res.headers.get('mcp-session-id')).toBeNull()
      expect(await res.json()).toMatchObject({ result: { protocolVersion, serverInfo: { name: 'kinetic-recipes' }, capabilities: { tools: {} } } })
    }
    // A tools/call with no initialize before it, as a stateless server must take it.
    const res = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    })
    expect((await res.json()).result.tools).toHaveLength(5)
  })

  it('answers 405 with Allow: POST to GET and DELETE, and 204 on /health/readiness', async () => {
    const { url } = await start(kubeWith())
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${url}/mcp`, { method, headers: { authorization: `Bearer ${TOKEN}` } })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('POST')
    }
    expect((await fetch(`${url}/health/readiness`)).status).toBe(204)
  })
})

describe('recipes-mcp: authentication', () => {
  const initialize = (url: string, headers: Record<string, string>) => fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  })

  it('answers 401 with WWW-Authenticate: Bearer without a token, with an unknown one, and with one for another audience, and does nothing', async () => {
    const kube = kubeWith({ recipes: [template()] }, ['*', '*'])
    kube.tokens.set('other-audience', { username: 'bob', audiences: ['https://elsewhere'] })
    const { url, lines } = await start(kube, { KINETIC_RECIPES_MCP_AUDIENCE: 'recipes-mcp' })
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic YWxpY2U6eA==' }, { authorization: 'Bearer other-audience' }]
    for (const headers of attempts) {
      const res = await initialize(url, headers)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
    }
    // Only the two bearer tokens were reviewed, each for the configured audience.
    expect(kube.tokenReviews).toEqual([{ audiences: ['recipes-mcp'], username: null }, { audiences: ['recipes-mcp'], username: null }])
    await expect(connect(url, 'nope')).rejects.toThrow()
    expect(kube.accessReviews).toEqual([])
    expect(kube.writes).toEqual([])
    expect(lines.join('\n')).not.toContain('other-audience')

    // The right token for the right audience gets in.
    const client = await connect(url)
    expect((await ok(client, 'list-recipes', { namespace: NS })).items).toHaveLength(1)
    expect(kube.tokenReviews.at(-1)).toEqual({ audiences: ['recipes-mcp'], username: 'alice' })
  })

  it('with KINETIC_RECIPES_MCP_AUTH=none allows every call as anonymous, reviews nothing, and says so once at start', async () => {
    const kube = new EmbeddedKube({ recipes: [template()] })
    const { url, lines } = await start(kube, { KINETIC_RECIPES_MCP_AUTH: 'none' })
    expect(lines.filter((l) => l.includes('KINETIC_RECIPES_MCP_AUTH=none'))).toHaveLength(1)
    const client = await connect(url, null)
    const result = await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', template: { name: 'hello-web' } })
    expect(result.created).toBe(true)
    expect(kube.recipe(NS, 'shop')!.metadata.annotations).toMatchObject({ 'purko.io/deployed-by': 'anonymous', 'purko.io/deployed-via': 'mcp' })
    expect(kube.tokenReviews).toEqual([])
    expect(kube.accessReviews).toEqual([])
    expect(lines.some((l) => l.includes('"user":"anonymous"') && l.includes('"tool":"deploy-recipe"'))).toBe(true)
  })
})

describe('recipes-mcp: deploy-recipe', () => {
  it('instantiates a template: its spec, values merged, profile replaced, labels, the ownership marks; reports the evaluation and the objects', async () => {
    const kube = kubeWith({ recipes: [template()] }, ['get', 'workflowrecipes', NS, 'hello-web'], ['create', 'workflowrecipes', NS, 'shop'])
    const { url, lines } = await start(kube)
    const client = await connect(url)
    const result = await ok(client, 'deploy-recipe', {
      namespace: NS, name: 'shop', template: { name: 'hello-web' }, profile: 'medium', values: { greeting: 'Hi' }, labels: { team: 'a' },
    })
    expect(result).toEqual({
      namespace: NS, name: 'shop', created: true, updated: false, dryRun: false, generation: 1, phase: 'Candidate',
      specValid: true, errors: [], approvalRequired: false,
      policy: { compliant: true, evaluated: [], violations: [] },
      objects: [
        { kind: 'Service', namespace: 'sandbox-recipes', name: 'team-a-shop-web-5101637e' },
        { kind: 'Deployment', namespace: 'sandbox-recipes', name: 'team-a-shop-web-5101637e' },
      ],
    })
    const stored = kube.recipe(NS, 'shop')!
    expect(stored.metadata.annotations).toEqual({ 'purko.io/recipe-template': `${NS}/hello-web`, 'purko.io/deployed-by': 'alice', 'purko.io/deployed-via': 'mcp' })
    expect(stored.metadata.labels).toEqual({ team: 'a' })
    expect(stored.spec.profile).toBe('medium')
    expect(stored.spec.values).toEqual({ greeting: 'Hi' })
    expect(stored.spec.workloads).toEqual(template().spec.workloads)
    expect(recipeWrites(kube)).toEqual(['create WorkflowRecipe/shop'])
    // The reviews are the caller's, with everything the TokenReview said about her.
    expect(kube.accessReviews).toEqual([
      { ...ALICE, user: 'alice', verb: 'get', group: 'purko.io', resource: 'workflowrecipes', namespace: NS, name: 'hello-web', allowed: true },
      { ...ALICE, user: 'alice', verb: 'create', group: 'purko.io', resource: 'workflowrecipes', namespace: NS, name: 'shop', allowed: true },
    ].map(({ username: _u, ...r }) => r))
    expect(lines.join('\n')).not.toContain(TOKEN)
  })

  it('refuses a template that is not one, a deprecated one and an absent one, writing nothing', async () => {
    const kube = kubeWith({
      recipes: [recipe('plain', WEB), template({ 'purko.io/deprecate': 'true' }), recipe('old', WEB, { annotations: { 'purko.io/template': 'true' } }, { phase: 'Deprecated' })],
    }, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'a', template: { name: 'plain' } })).toMatchObject({ code: 'NotATemplate' })
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'a', template: { name: 'hello-web' } })).toMatchObject({ code: 'TemplateDeprecated' })
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'a', template: { name: 'old' } })).toMatchObject({ code: 'TemplateDeprecated' })
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'a', template: { name: 'gone', namespace: 'elsewhere' } }))
      .toMatchObject({ code: 'NotFound', message: 'Template elsewhere/gone not found' })
    expect(kube.writes).toEqual([])
  })

  it('asks get on every Secret the resulting spec names; a denial is Forbidden with the attributes and writes nothing', async () => {
    const spec = {
      workloads: [{
        name: 'api', kind: 'Deployment', image: 'api:1', transport: 'http', ports: [{ name: 'http', port: 8080 }],
        envSecret: [{ name: 'DB_URL', secretName: 'db', key: 'url' }],
        mcp: { auth: 'bearer', tokenSecret: { secretName: 'api-token', key: 'token' } },
      }],
      tests: [{ name: 'smoke', image: 'curl:8', envSecret: [{ name: 'T', secretName: 'db', key: 'url' }] }],
    }
    const kube = kubeWith({}, ['create', 'workflowrecipes', NS], ['get', 'secrets', NS, 'db'])
    const client = await connect((await start(kube)).url)
    const error = await refused(client, 'deploy-recipe', { namespace: NS, name: 'api', spec })
    expect(error).toEqual({
      code: 'Forbidden', message: 'alice may not get secrets api-token in namespace team-a',
      details: { verb: 'get', group: '', resource: 'secrets', namespace: NS, name: 'api-token' },
    })
    expect(kube.accessReviews.map((r) => `${r.verb} ${r.resource}/${r.name} ${r.allowed}`)).toEqual(['create workflowrecipes/api true', 'get secrets/api-token false', 'get secrets/db true'])
    expect(kube.writes).toEqual([])
    expect(kube.dryRuns).toEqual([])

    kube.allow('alice', 'get', 'secrets', NS, 'api-token')
    expect((await ok(client, 'deploy-recipe', { namespace: NS, name: 'api', spec })).created).toBe(true)
  })

  it('replaces only a recipe deployed through MCP (update is asked), and never a hand-made one', async () => {
    const handMade = recipe('gitops', WEB, { labels: { owner: 'flux' } })
    const kube = kubeWith({ recipes: [handMade] }, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'gitops', spec: WEB })).toMatchObject({ code: 'NotManagedByMcp' })
    expect(kube.writes).toEqual([])
    expect(kube.accessReviews.map((r) => r.verb)).toEqual(['update'])

    await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: WEB, labels: { tier: 'web' } })
    kube.putRecipe({ ...kube.recipe(NS, 'shop')!, status: { phase: 'Active', revision: 1, currentRevision: 1 } })
    const updated = await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: { ...WEB, version: '1.1.0' }, values: { greeting: 'Yo' } })
    expect(updated).toMatchObject({ created: false, updated: true, generation: 2, phase: 'Candidate', specValid: true })
    const stored = kube.recipe(NS, 'shop')!
    expect(stored.spec.version).toBe('1.1.0')
    expect(stored.metadata.labels).toEqual({ tier: 'web' })
    expect(stored.status?.phase).toBe('Active')
    // The same spec again: nothing new to deploy, the phase stays.
    expect(await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: { ...WEB, version: '1.1.0' }, values: { greeting: 'Yo' } }))
      .toMatchObject({ updated: true, generation: 2, phase: 'Active' })
  })

  it('takes a YAML or JSON manifest whose name matches, refuses reserved annotations, other kinds, two sources and purko.io/ labels', async () => {
    const kube = kubeWith({}, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const yaml = [
      'apiVersion: purko.io/v1alpha1', 'kind: WorkflowRecipe',
      'metadata: {name: shop, namespace: team-a, labels: {app: shop}, annotations: {note: hi}}',
      'spec:', '  workloads:', '    - {name: web, kind: Deployment, image: "nginx:1.27"}',
    ].join('\n')
    expect((await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', manifest: yaml })).created).toBe(true)
    expect(kube.recipe(NS, 'shop')!.metadata).toMatchObject({ labels: { app: 'shop' }, annotations: { note: 'hi', 'purko.io/deployed-via': 'mcp' } })
    const json = JSON.stringify({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: {}, spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] } })
    expect((await ok(client, 'deploy-recipe', { namespace: NS, name: 'json', manifest: json })).created).toBe(true)
    kube.writes.length = 0

    for (const annotation of ['purko.io/approve', 'purko.io/reject', 'purko.io/approved-by', 'purko.io/retry', 'purko.io/rollback', 'purko.io/orphan', 'purko.io/deployed-by', 'purko.io/deployed-via']) {
      const manifest = JSON.stringify({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { annotations: { [annotation]: '1' } }, spec: {} })
      const error = await refused(client, 'deploy-recipe', { namespace: NS, name: 'evil', manifest })
      expect(error).toEqual({ code: 'InvalidArguments', message: `manifest carries reserved annotations: ${annotation}` })
    }
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ manifest: yaml.replace('name: shop', 'name: other') }, /metadata.name "other" is not the name argument "x"|metadata.name/],
      [{ manifest: yaml.replace('namespace: team-a', 'namespace: team-b') }, /metadata.namespace "team-b"/],
      [{ manifest: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n' }, /is a ConfigMap \(v1\), not a purko.io\/v1alpha1 WorkflowRecipe/],
      [{ manifest: `${yaml}\n---\n${yaml}` }, /exactly one WorkflowRecipe, found 2 documents/],
      [{ manifest: 'spec: [unclosed' }, /not valid YAML or JSON/],
      [{ spec: WEB, template: { name: 'hello-web' } }, /exactly one of template, spec or manifest, not template and spec/],
      [{}, /Give exactly one of template, spec or manifest/],
      [{ spec: WEB, labels: { 'purko.io/recipe': 'x' } }, /labels may not use the purko.io\/ prefix: purko.io\/recipe/],
    ]
    for (const [args, message] of cases) {
      const error = await refused(client, 'deploy-recipe', { namespace: NS, name: 'shop', ...args })
      expect(error.code).toBe('InvalidArguments')
      expect(error.message).toMatch(message)
    }
    expect(kube.writes).toEqual([])
  })

  it('refuses a manifest over 512 KiB: over 524288 characters by the schema (-32602), over 524288 bytes by the handler', async () => {
    const kube = kubeWith({}, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const head = 'apiVersion: purko.io/v1alpha1\nkind: WorkflowRecipe\nspec: {}\n# '
    await expect(client.callTool({ name: 'deploy-recipe', arguments: { namespace: NS, name: 'big', manifest: head + 'x'.repeat(512 * 1024) } }))
      .rejects.toMatchObject({ code: -32602, message: expect.stringContaining('manifest') })
    const wide = head + 'é'.repeat(300 * 1024)
    expect(wide.length).toBeLessThan(512 * 1024)
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'big', manifest: wide })).toMatchObject({ code: 'InvalidArguments', message: expect.stringMatching(/bytes, more than the 524288 allowed/) })
    expect(kube.writes).toEqual([])
  })

  it('dryRun sends a dry run and writes nothing, with the same evaluation', async () => {
    const kube = kubeWith({ recipes: [template()] }, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const result = await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', template: { name: 'hello-web' }, dryRun: true })
    expect(result).toMatchObject({ created: true, dryRun: true, generation: 1, specValid: true, objects: expect.arrayContaining([{ kind: 'Deployment', namespace: 'sandbox-recipes', name: 'team-a-shop-web-5101637e' }]) })
    expect(kube.recipe(NS, 'shop')).toBeUndefined()
    expect(kube.writes).toEqual([])
    expect(kube.dryRuns).toEqual(['create WorkflowRecipe/shop'])
  })

  it('a dry run whose computed value and includeWhen an agent made catastrophic answers at once with the reasons (issue 27, item 2)', async () => {
    const kube = kubeWith({}, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const spec = {
      inputs: [{ name: 'name', type: 'string', default: `${'a'.repeat(48)}!` }, { name: 'csv', type: 'string', default: 'x,'.repeat(2000) }],
      computed: [{ name: 'plain', expression: "inputs.name.matches('^(a+)+$')" }, { name: 'slow', expression: "inputs.csv.split(',').exists(a, inputs.csv.split(',').size() == 0)" }],
      workloads: [
        { name: 'web', kind: 'Deployment', image: 'nginx:1.27', ports: [{ name: 'http', port: 80 }], env: [{ name: 'PLAIN', value: '{{computed.plain}}' }] },
        { name: 'side', kind: 'Deployment', image: 'nginx:1.27', includeWhen: "inputs.csv.split(',').exists(a, inputs.csv.split(',').size() == 0)" },
      ],
    }
    const result = await ok(client, 'deploy-recipe', { namespace: NS, name: 'costly', spec, dryRun: true })
    expect(result.specValid).toBe(false)
    expect(result.errors.map((e: { reason: string; message: string }) => [e.reason, e.message])).toEqual(expect.arrayContaining([
      ['ComputedValueError', expect.stringMatching(/^computed "slow": evaluation cost limit exceeded/)],
      ['IncludeWhenError', expect.stringMatching(/^workload "side": includeWhen: evaluation cost limit exceeded/)],
    ]))
    expect(JSON.stringify(result.errors)).not.toContain('computed "plain"')
    expect(kube.writes).toEqual([])
  })

  it('tells approval and policy findings from the in-process evaluation, and an invalid spec from the API server with its causes', async () => {
    const policy = {
      apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'digests' },
      spec: { mode: 'Audit', images: { requireDigest: true } },
    }
    const kube = kubeWith({ recipePolicies: [policy as never] } as never, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const result = await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: { ...WEB, requireApproval: true } })
    expect(result).toMatchObject({
      approvalRequired: true, approveCommand: 'kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=1',
      policy: { compliant: false, evaluated: ['digests'], violations: [expect.objectContaining({ policy: 'digests', mode: 'Audit', workload: 'web' })] },
    })

    const broken = await ok(client, 'deploy-recipe', { namespace: NS, name: 'broken', spec: { workloads: [{ name: 'web', kind: 'Deployment', image: '{{inputs.missing}}' }] } })
    expect(broken).toMatchObject({ specValid: false, objects: [], approvalRequired: false })
    expect(broken.errors[0]).toMatchObject({ message: expect.stringContaining('missing') })

    expect(result.policy).not.toHaveProperty('unavailable')
    // Without read access to policies (spec §14.2 gives the function none), the result says so.
    kube.failNext('listRecipePolicies', new Error('workflowrecipepolicies.purko.io is forbidden'))
    const blind = await ok(client, 'deploy-recipe', { namespace: NS, name: 'blind', spec: WEB })
    expect(blind.policy).toEqual({ compliant: true, evaluated: [], violations: [], unavailable: 'recipes-mcp could not read WorkflowRecipePolicies; the controller evaluates them' })

    kube.writes.length = 0
    const error = await refused(client, 'deploy-recipe', { namespace: NS, name: 'pod', spec: { workloads: [{ name: 'web', kind: 'Pod', image: 'x:1' }] } })
    // The API server's causes: the field, then its note that the CEL rules were not run.
    expect(error).toMatchObject({ code: 'Invalid', details: { causes: [
      expect.objectContaining({ field: expect.stringContaining('kind'), message: expect.any(String) }),
      expect.objectContaining({ message: expect.stringContaining('some validation rules were not checked') }),
    ] } })
    expect(kube.writes).toEqual([])
  })

  it('retries a lost resourceVersion race once, then answers Conflict; an unavailable API server is Unavailable', async () => {
    const kube = kubeWith({}, ['*', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: WEB })
    kube.failNext('replaceRecipe', new ConflictError('WorkflowRecipe team-a/shop: the object has been modified'))
    expect(await ok(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: { ...WEB, version: '2' } })).toMatchObject({ updated: true, generation: 2 })
    kube.failNext('replaceRecipe', new ConflictError('modified')).failNext('replaceRecipe', new ConflictError('WorkflowRecipe team-a/shop: the object has been modified'))
    expect(await refused(client, 'deploy-recipe', { namespace: NS, name: 'shop', spec: { ...WEB, version: '3' } })).toMatchObject({ code: 'Conflict' })
    expect(kube.recipe(NS, 'shop')!.spec.version).toBe('2')
    kube.failNext('getRecipe', new TransientError('Could not get WorkflowRecipe: 503'))
    expect(await refused(client, 'get-recipe', { namespace: NS, name: 'shop' })).toMatchObject({ code: 'Unavailable' })
  })

  it('anything else is Internal: the caller gets the request id only, the log has the error under the same id', async () => {
    const kube = kubeWith({}, ['*', 'workflowrecipes'])
    const { url, lines } = await start(kube)
    const client = await connect(url)
    kube.failNext('getRecipe', new Error('WorkflowRecipe team-a/shop does not match its schema'))
    const error = await refused(client, 'get-recipe', { namespace: NS, name: 'shop' })
    const requestId = /^Internal error \(request (\d+)\)$/.exec(error.message)?.[1]
    expect(error.code).toBe('Internal')
    expect(requestId).toBeDefined()
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'Tool call failed unexpectedly')
    expect(logged).toMatchObject({ level: 50, tool: 'get-recipe', user: 'alice', requestId, namespace: NS, name: 'shop', outcome: 'Internal', err: 'WorkflowRecipe team-a/shop does not match its schema' })
    expect(lines.join('\n')).not.toContain(TOKEN)
  })
})

describe('recipes-mcp: schema violations are JSON-RPC -32602', () => {
  it('refuses unknown properties, bad patterns, out-of-range limits and wrong types before doing anything', async () => {
    const kube = kubeWith({}, ['*', '*'])
    const client = await connect((await start(kube)).url)
    const bad: [string, Record<string, unknown>][] = [
      ['deploy-recipe', { namespace: NS, name: 'shop', spec: {}, extra: true }],
      ['deploy-recipe', { namespace: NS, name: 'Shop', spec: {} }],
      ['deploy-recipe', { namespace: NS, name: 'a'.repeat(41), spec: {} }],
      ['deploy-recipe', { namespace: NS, name: 'shop', spec: {}, values: { a: { nested: true } } }],
      ['deploy-recipe', { namespace: NS, name: 'shop', spec: {}, labels: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }],
      ['deploy-recipe', { namespace: NS, name: 'shop', template: { name: 'x', extra: 1 } }],
      ['list-recipes', { limit: 501 }],
      ['list-recipes', { kind: 'everything' }],
      ['list-recipes', { labelSelector: 'a'.repeat(1025) }],
      ['get-recipe', { namespace: NS }],
      ['get-recipe-status', { namespace: NS, name: 'shop', history: 21 }],
      ['delete-recipe', { namespace: 'x'.repeat(64), name: 'shop' }],
      ['delete-recipe', { namespace: NS, name: 'shop', orphan: 'yes' }],
      ['no-such-tool', {}],
    ]
    for (const [name, args] of bad) {
      await expect(client.callTool({ name, arguments: args }), `${name} ${JSON.stringify(args).slice(0, 80)}`).rejects.toMatchObject({ code: -32602 })
    }
    expect(kube.accessReviews).toEqual([])
    expect(kube.writes).toEqual([])
  })
})

describe('recipes-mcp: list, get and status', () => {
  const many = () => [
    template(),
    ...['a1', 'a2', 'a3'].map((n) => recipe(n, WEB, { labels: { app: 'shop' } }, { phase: 'Active', revision: 2, currentRevision: 2, readyWorkloads: '1/1', mcpServers: [{ workload: 'web', url: 'http://web/mcp' }] })),
    recipe('b1', WEB, { namespace: 'team-b' }, { phase: 'Failed' }),
  ]

  it('pages through list-recipes with continue, filters by kind, phase and label, and asks list where it lists', async () => {
    const kube = kubeWith({ recipes: many() }, ['list', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    const first = await ok(client, 'list-recipes', { limit: 2 })
    expect(first.items.map((i: Structured) => i.name)).toEqual(['a1', 'a2'])
    expect(first.continue).toEqual(expect.any(String))
    const second = await ok(client, 'list-recipes', { limit: 2, continue: first.continue })
    expect(second.items.map((i: Structured) => i.name)).toEqual(['a3', 'hello-web'])
    const last = await ok(client, 'list-recipes', { limit: 2, continue: second.continue })
    expect(last.items.map((i: Structured) => `${i.namespace}/${i.name}`)).toEqual(['team-b/b1'])
    expect(last).not.toHaveProperty('continue')
    expect(kube.accessReviews.map((r) => r.namespace)).toEqual([undefined, undefined, undefined])

    expect(first.items[0]).toEqual({
      namespace: NS, name: 'a1', template: false, deprecated: false, phase: 'Active', reason: null, description: 'A web page', version: '1.0.0',
      profile: 'small', revision: 2, currentRevision: 2, readyWorkloads: '1/1', mcpEndpoints: [{ workload: 'web', url: 'http://web/mcp' }],
      createdAt: kube.recipe(NS, 'a1')!.metadata.creationTimestamp, // the API server's
    })
    expect((await ok(client, 'list-recipes', { namespace: NS, kind: 'templates' })).items.map((i: Structured) => i.name)).toEqual(['hello-web'])
    expect((await ok(client, 'list-recipes', { namespace: NS, kind: 'instances', labelSelector: 'app=shop' })).items).toHaveLength(3)
    expect((await ok(client, 'list-recipes', { phase: ['Failed'] })).items.map((i: Structured) => i.name)).toEqual(['b1'])
    expect(kube.accessReviews.at(-2)).toMatchObject({ verb: 'list', namespace: NS })
    expect(await refused(client, 'list-recipes', { labelSelector: 'app shop' })).toMatchObject({ code: 'InvalidArguments', message: expect.stringContaining('unable to parse') })
  })

  it('refuses a list the caller may not make (Forbidden, namespace in the details)', async () => {
    const kube = kubeWith({ recipes: many() }, ['list', 'workflowrecipes', NS])
    const client = await connect((await start(kube)).url)
    expect((await ok(client, 'list-recipes', { namespace: NS })).items).toHaveLength(4)
    expect(await refused(client, 'list-recipes', {})).toEqual({
      code: 'Forbidden', message: 'alice may not list workflowrecipes.purko.io cluster-wide',
      details: { verb: 'list', group: 'purko.io', resource: 'workflowrecipes', namespace: null, name: null },
    })
  })

  it('get-recipe gives the spec, the inputs to fill in and the profile names; an absent one is NotFound', async () => {
    const kube = kubeWith({ recipes: [template()] }, ['get', 'workflowrecipes', NS])
    const client = await connect((await start(kube)).url)
    const detail = await ok(client, 'get-recipe', { namespace: NS, name: 'hello-web' })
    expect(detail).toMatchObject({
      namespace: NS, name: 'hello-web', template: true, generation: 1, labels: {}, phase: null, profiles: ['small', 'medium'],
      inputs: [
        { name: 'greeting', type: 'string', required: false, default: 'Hello', description: 'What the page says' },
        { name: 'size', type: 'string', required: true, enum: ['s', 'm'] },
      ],
    })
    expect(detail.spec.workloads[0].image).toBe('nginx:1.27')
    expect(await refused(client, 'get-recipe', { namespace: NS, name: 'nope' })).toMatchObject({ code: 'NotFound', message: 'WorkflowRecipe team-a/nope not found' })
    expect(await refused(client, 'get-recipe', { namespace: 'team-b', name: 'hello-web' })).toMatchObject({ code: 'Forbidden' })
  })

  it('get-recipe-status gives the lifecycle, the approve command while it waits, and the latest history entries', async () => {
    const history = Array.from({ length: 8 }, (_, i) => ({ time: `2026-03-01T10:0${i}:00Z`, to: i % 2 ? 'Candidate' : 'PendingApproval', reason: `r${i}` }))
    const waiting = recipe('shop', { ...WEB, requireApproval: true }, {}, {
      phase: 'PendingApproval', reason: 'AwaitingApproval', message: 'Waiting', observedGeneration: 1, revision: 0,
      approval: { required: true, state: 'Pending', generation: 1, requiredBy: ['recipe'] },
      conditions: [{ type: 'Ready', status: 'False', reason: 'PendingApproval', message: 'm', lastTransitionTime: '2026-03-01T10:00:00Z', observedGeneration: 1 }],
      history,
    })
    const kube = kubeWith({ recipes: [waiting] }, ['get', 'workflowrecipes', NS, 'shop'])
    const client = await connect((await start(kube)).url)
    const status = await ok(client, 'get-recipe-status', { namespace: NS, name: 'shop', history: 3 })
    expect(status).toMatchObject({
      namespace: NS, name: 'shop', phase: 'PendingApproval', reason: 'AwaitingApproval', generation: 1, observedGeneration: 1,
      approval: { required: true, state: 'Pending', generation: 1 },
      approveCommand: 'kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=1',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PendingApproval', message: 'm' }],
      workloads: [], tests: [], mcpServers: [],
    })
    expect(status.history.map((h: Structured) => h.reason)).toEqual(['r5', 'r6', 'r7'])
    expect((await ok(client, 'get-recipe-status', { namespace: NS, name: 'shop' })).history).toHaveLength(5)
    expect((await ok(client, 'get-recipe-status', { namespace: NS, name: 'shop', history: 0 })).history).toEqual([])
  })
})

describe('recipes-mcp: delete-recipe', () => {
  const deployed = () => recipe('shop', WEB, { annotations: { 'purko.io/deployed-via': 'mcp' } }, { phase: 'Active', resolved: { order: ['db', 'api', 'web'] } })

  it('deletes: found, deleted, the workloads in reverse topological order; an absent recipe is found: false', async () => {
    const kube = kubeWith({ recipes: [{ ...deployed(), metadata: { ...deployed().metadata, finalizers: ['purko.io/recipe-finalizer'] } }] }, ['delete', 'workflowrecipes', NS])
    const client = await connect((await start(kube)).url)
    expect(await ok(client, 'delete-recipe', { namespace: NS, name: 'shop' })).toEqual({
      namespace: NS, name: 'shop', found: true, deleted: true, orphaned: false, deletionOrder: ['web', 'api', 'db'],
    })
    expect(kube.recipe(NS, 'shop')!.metadata.deletionTimestamp).toBeDefined()
    expect(kube.accessReviews.map((r) => `${r.verb} ${r.name}`)).toEqual(['delete shop'])
    expect(await ok(client, 'delete-recipe', { namespace: NS, name: 'never' })).toEqual({
      namespace: NS, name: 'never', found: false, deleted: false, orphaned: false, deletionOrder: [],
    })
  })

  it('orphan asks patch too, sets purko.io/orphan before deleting; a denial is Forbidden with no side effect', async () => {
    const kube = kubeWith({ recipes: [deployed()] }, ['delete', 'workflowrecipes', NS])
    const client = await connect((await start(kube)).url)
    expect(await refused(client, 'delete-recipe', { namespace: NS, name: 'shop', orphan: true })).toMatchObject({
      code: 'Forbidden', details: { verb: 'patch', group: 'purko.io', resource: 'workflowrecipes', namespace: NS, name: 'shop' },
    })
    expect(kube.writes).toEqual([])
    expect(kube.recipe(NS, 'shop')).toBeDefined()

    kube.allow('alice', 'patch', 'workflowrecipes', NS, 'shop')
    expect(await ok(client, 'delete-recipe', { namespace: NS, name: 'shop', orphan: true })).toEqual({
      namespace: NS, name: 'shop', found: true, deleted: true, orphaned: true, deletionOrder: [],
    })
    expect(kube.writes).toEqual(['patch WorkflowRecipe/shop', 'delete WorkflowRecipe/shop'])
    expect(kube.recipe(NS, 'shop')).toBeUndefined()
  })

  it('refuses a delete the caller may not make, leaving the recipe', async () => {
    const kube = kubeWith({ recipes: [deployed()] }, ['get', 'workflowrecipes'])
    const client = await connect((await start(kube)).url)
    expect(await refused(client, 'delete-recipe', { namespace: NS, name: 'shop' })).toMatchObject({ code: 'Forbidden', details: { verb: 'delete' } })
    expect(kube.writes).toEqual([])
  })
})
