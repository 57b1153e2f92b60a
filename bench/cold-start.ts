// Cold start on the real hot path: for every function, spawn its process and time it from spawn
// to the answer of the first request that needs the Kubernetes API, handled to the end against
// the embedded API server (local/apiserver) seeded with what that request needs. A bare node:http
// server is measured in the same interleaved rounds. After each answer the bench checks the
// effect (the next Job exists, the output is stored...) so a fast error cannot pass for a start.
// Each function runs three ways: the plain ES module build before the code cache (--before, a
// dist/ built by the previous scripts/build.mjs), the current build on the host Node, and the
// current build started as knative/services/<name>.yaml starts it (command, args, env, cwd of
// the image; the image's Node is this Node binary, see scripts/build-base-image.mjs).
// run-control and recipes-mcp run with their caller check off, as on the local plane (the embedded
// API server has no TokenReview).
// Run: node --import tsx bench/cold-start.ts [--rounds 5] [--before <dist>] [--dist <dist>] [--only a,b]
import { spawn, spawnSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { Agent, createServer as createHttpServer, request, type Server } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { ApiextensionsV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition, type V1Job } from '@kubernetes/client-node'
import { CloudEvent, HTTP } from 'cloudevents'
import { parseAllDocuments } from 'yaml'
import { startApiServer, type ApiServer } from '../local/apiserver/index.js'
import { kubeconfigYaml } from '../local/apiserver/kubeconfig.js'
import { freePort } from '../local/free-port.js'
import { callerAuthEnv } from '../local/function-env.js'
import { ANNOTATION_CANCEL, ANNOTATION_TEMPLATE } from '../shared/schemas/labels.js'
import { median, percentile } from './stats.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const NS = 'ai-agents'
const PURKO = { group: 'purko.io', version: 'v1alpha1' }

/** What to start: a Node script and the environment it gets on top of $PORT. */
export interface ServerUnderTest {
  name: string
  script: string
  env: Record<string, string>
  /** Node's arguments instead of `[script]`, e.g. a Service's args. */
  args?: string[]
  cwd?: string
}

/** One HTTP request, already encoded. */
export interface EncodedEvent {
  headers: Record<string, string>
  body: string
  /** Default POST / (a CloudEvent). */
  method?: string
  path?: string
}

/** One cold start: the first HTTP status the fresh process answered, and how long that took. */
export interface ColdStart {
  status: number
  ms: number
}

function encode(event: CloudEvent<unknown>): EncodedEvent {
  const message = HTTP.binary(event)
  return { headers: message.headers as Record<string, string>, body: message.body as string }
}

/**
 * A Job update as the jobs ApiServerSource would send it, for a Job without the
 * purko.io/workflow label: a function answers it without calling the Kubernetes API.
 */
export function unrelatedJobEvent(): EncodedEvent {
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'nightly-backup', namespace: 'ai-agents', uid: '00000000-0000-4000-8000-000000000001', resourceVersion: '1', labels: { app: 'backup' } },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'backup', image: 'backup' }] } } },
    status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
  }
  return encode(new CloudEvent({
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://10.96.0.1:443',
    subject: '/apis/batch/v1/namespaces/ai-agents/jobs/nightly-backup',
    datacontenttype: 'application/json',
    data: job,
    kind: 'Job',
    apiversion: 'batch/v1',
    name: 'nightly-backup',
    namespace: 'ai-agents',
    kineticsource: 'jobs',
  }))
}

/** A Workflow update during deletion, as the workflows source sends it: nothing left to do. */
export function deletingWorkflowEvent(): EncodedEvent {
  const workflow = {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: {
      name: 'research', namespace: 'ai-agents', uid: '00000000-0000-4000-8000-000000000002', generation: 1, resourceVersion: '7',
      deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['example.com/hold'],
    },
    spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }] },
  }
  return encode(new CloudEvent({
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://10.96.0.1:443',
    subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/research',
    datacontenttype: 'application/json',
    data: workflow,
    kind: 'Workflow',
    apiversion: 'purko.io/v1alpha1',
    name: 'research',
    namespace: 'ai-agents',
    kineticsource: 'workflows',
  }))
}

/** A resync tick exactly as knative/sources/resync.yaml sends it. */
export function resyncTickEvent(): EncodedEvent {
  return encode(new CloudEvent({
    type: 'dev.knative.sources.ping',
    source: '/apis/v1/namespaces/kinetic-system/pingsources/resync',
    datacontenttype: 'application/json',
    data: { reason: 'resync' },
    kineticsource: 'resync',
  }))
}

/** A stand-in API server: every list is empty, everything else is 404; it counts requests. */
export async function startStubApiServer(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0
  const server: Server = createHttpServer((req, res) => {
    count++
    req.resume()
    const path = (req.url ?? '').split('?')[0] ?? ''
    // After /api/v1 or /apis/<group>/<version>, a collection is `<plural>` or `namespaces/<ns>/<plural>`.
    const rest = path.split('/').slice(path.startsWith('/api/') ? 3 : 4)
    const isList = req.method === 'GET' && (rest.length === 1 || (rest.length === 3 && rest[0] === 'namespaces'))
    res.setHeader('content-type', 'application/json')
    if (isList) {
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '1' }, items: [] }))
    } else {
      res.statusCode = 404
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}


function send(port: number, event: EncodedEvent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: event.method ?? 'POST', path: event.path ?? '/', headers: event.headers, agent: false }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    })
    req.once('error', reject)
    req.end(event.method === 'GET' ? undefined : event.body)
  })
}

/**
 * Spawns `server`, POSTs `event` every few milliseconds until the process answers, then stops it.
 * Rejects if the process exits first or does not answer within `timeoutMs`.
 */
export async function timeToFirstAnswer(server: ServerUnderTest, event: EncodedEvent, timeoutMs = 30_000): Promise<ColdStart> {
  const port = await freePort()
  const env: Record<string, string | undefined> = { ...process.env, ...server.env, PORT: String(port) }
  // The bench itself runs under a TypeScript loader; the servers under test must not.
  delete env.NODE_OPTIONS
  const started = performance.now()
  const child = spawn(process.execPath, server.args ?? [server.script], { env, cwd: server.cwd, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  let exited: string | undefined
  const exit = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`
    resolve()
  }))
  try {
    while (performance.now() - started < timeoutMs) {
      if (exited) throw new Error(`${server.name} ${exited} before answering: ${stderr.trim().slice(-500)}`)
      try {
        const status = await send(port, event)
        return { status, ms: performance.now() - started }
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
    }
    throw new Error(`${server.name} did not answer within ${timeoutMs} ms`)
  } finally {
    if (!exited) child.kill('SIGKILL')
    await exit
  }
}


/** A proxy in front of the embedded API server that counts each request by method and path. */
async function startCountingProxy(target: string): Promise<{ url: string; take: () => Map<string, number>; close: () => Promise<void> }> {
  let counts = new Map<string, number>()
  const agent = new Agent({ keepAlive: true })
  const upstream = new URL(target)
  const server: Server = createHttpServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? ''
    const key = `${req.method} ${path}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forward.once('error', () => res.destroy())
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    take: () => { const taken = counts; counts = new Map(); return taken },
    close: () => { agent.destroy(); server.closeAllConnections(); return new Promise((resolve) => server.close(() => resolve())) },
  }
}

function cloudEvent(type: string, data: unknown, extensions: Record<string, string>): EncodedEvent {
  return encode(new CloudEvent({ type, source: 'https://10.96.0.1:443', datacontenttype: 'application/json', data: data as object, ...extensions }))
}

/** An event of the one ApiServerSource (knative/sources/resources.yaml), with Knative's own extensions. */
function objectEvent(type: string, object: Record<string, any>): EncodedEvent {
  const [, version] = String(object.apiVersion).split('/')
  return cloudEvent(type, object, { kind: object.kind, apiversion: object.apiVersion, name: object.metadata.name, namespace: object.metadata.namespace ?? NS, kineticsource: 'resources', subject: `/${version ?? ''}` })
}

function ping(source: string, data: Record<string, unknown> = {}): EncodedEvent {
  return encode(new CloudEvent({ type: 'dev.knative.sources.ping', source: `/apis/v1/namespaces/kinetic-system/pingsources/${source}`, datacontenttype: 'application/json', data, kineticsource: source }))
}

/** What the seeding and the checks use: client-node over the embedded server (not counted). */
interface Cluster {
  api: ApiServer
  core: CoreV1Api
  batch: BatchV1Api
  custom: CustomObjectsApi
  /** workflow-changed in this process, to bring a run to the state a probe starts from. */
  workflowChanged: (event: EncodedEvent) => Promise<number>
}

const getWorkflow = (c: Cluster, name: string) => c.custom.getNamespacedCustomObject({ ...PURKO, namespace: NS, plural: 'workflows', name }) as Promise<Record<string, any>>

async function createChain(c: Cluster, name: string, namespace = NS): Promise<Record<string, any>> {
  return c.custom.createNamespacedCustomObject({
    ...PURKO, namespace, plural: 'workflows',
    body: {
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name },
      spec: { steps: [
        { name: 'a', agentRef: { name: 'writer' } },
        { name: 'b', agentRef: { name: 'writer' }, dependsOn: ['a'] },
        { name: 'c', agentRef: { name: 'writer' }, dependsOn: ['b'] },
      ] },
    },
  }) as Promise<Record<string, any>>
}

/** Plays the Job controller and kubelet: a pod with the step's log, then the Job's Complete condition. */
async function completeJob(c: Cluster, job: V1Job, log: string): Promise<V1Job> {
  const name = job.metadata!.name!
  const pod = `${name}-pod`
  await c.core.createNamespacedPod({ namespace: NS, body: { metadata: { name: pod, labels: { 'job-name': name } }, spec: { containers: [{ name: 'step-executor', image: 'x' }] } } })
  c.api.store.appendPodLog(NS, pod, log)
  const now = new Date()
  return c.batch.replaceNamespacedJobStatus({ namespace: NS, name, body: { ...job, status: { succeeded: 1, startTime: now, completionTime: now, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: now }] } } })
}

/** One probe: makes the state a round starts from, the request, and the check of its effect. */
interface Probe {
  describe: string
  env?: Record<string, string>
  prepare: (c: Cluster, round: string) => Promise<{ request: EncodedEvent; check: () => Promise<string | undefined> }>
}

// For probes whose effect the bench does not read back: the table says so instead of 'checked'.
const ok = async () => 'answer only'

const PROBES: Record<string, Probe> = {
  'step-job-finished': {
    describe: 'step a of a running 3-step chain finished (pod log OUTPUT:{...})',
    prepare: async (c, round) => {
      const name = `chain-${round}`
      await createChain(c, name)
      await c.workflowChanged(objectEvent('dev.knative.apiserver.resource.add', await getWorkflow(c, name)))
      const runId = (await getWorkflow(c, name)).status?.runId as string
      const done = await completeJob(c, await c.batch.readNamespacedJob({ namespace: NS, name: `${name}-a-${runId}` }), 'OUTPUT:{"response":"done"}\n')
      return {
        request: objectEvent('dev.knative.apiserver.resource.update', done as Record<string, any>),
        check: async () => {
          const outputs = await c.core.readNamespacedConfigMap({ namespace: NS, name: `${name}-outputs` })
          if (!outputs.data?.a) return 'no output stored'
          await c.batch.readNamespacedJob({ namespace: NS, name: `${name}-b-${runId}` })
          const phases = ((await getWorkflow(c, name)).status?.stepStatuses ?? []).map((s: { phase: string }) => s.phase).join(',')
          return phases.startsWith('Succeeded,Running') ? undefined : `status ${phases}`
        },
      }
    },
  },
  'workflow-changed': {
    describe: 'a new 3-step Workflow: first Job',
    prepare: async (c, round) => {
      const name = `new-${round}`
      const created = await createChain(c, name)
      return {
        request: objectEvent('dev.knative.apiserver.resource.add', created),
        check: async () => {
          const runId = (await getWorkflow(c, name)).status?.runId as string | undefined
          if (!runId) return 'no runId'
          await c.batch.readNamespacedJob({ namespace: NS, name: `${name}-a-${runId}` })
          return undefined
        },
      }
    },
  },
  'resync-tick': { describe: 'resync tick over 100+ unfinished runs', prepare: async () => ({ request: resyncTickEvent(), check: ok }) },
  'agent-changed': {
    describe: 'a new Agent: its ServiceAccount',
    prepare: async (c, round) => {
      const name = `agent-${round}`
      const created = await c.custom.createNamespacedCustomObject({ ...PURKO, namespace: NS, plural: 'agents', body: { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name }, spec: { model: { provider: 'offline', name: 'scripted' } } } }) as Record<string, any>
      return {
        request: objectEvent('dev.knative.apiserver.resource.add', created),
        check: async () => { await c.core.readNamespacedServiceAccount({ namespace: NS, name: `agent-${name}-sa` }); return undefined },
      }
    },
  },
  'autonomy-tick': { describe: 'autonomy tick', prepare: async () => ({ request: ping('autonomy', { reason: 'autonomy' }), check: ok }) },
  'llmprovider-changed': { describe: 'llmproviders probe tick', prepare: async () => ({ request: ping('llmproviderprobe'), check: ok }) },
  'memoryprovider-changed': { describe: 'memoryproviders recheck tick', prepare: async () => ({ request: ping('memoryrecheck'), check: ok }) },
  'mcpserver-changed': { describe: 'mcpservers resync tick', prepare: async () => ({ request: ping('mcpserverresync'), check: ok }) },
  'recipe-policy-changed': { describe: 'recipe policies resync tick', prepare: async () => ({ request: ping('recipepolicyresync'), check: ok }) },
  'workflowrecipe-changed': { describe: 'recipes resync tick', prepare: async () => ({ request: ping('recipesresync'), check: ok }) },
  'schedule-fired': { describe: 'a template schedule ping (template absent)', prepare: async (_, round) => ({ request: ping('schedule', { namespace: NS, name: `tpl-${round}`, uid: '00000000-0000-4000-8000-00000000000b' }), check: ok }) },
  'workflow-template-changed': {
    describe: 'a new Workflow (not a template)',
    prepare: async (c, round) => ({ request: objectEvent('dev.knative.apiserver.resource.add', await createChain(c, `tpl-new-${round}`)), check: ok }),
  },
  'recipe-child-changed': {
    describe: 'a recipe-labelled Deployment update (recipe absent)',
    prepare: async (_, round) => ({
      request: objectEvent('dev.knative.apiserver.resource.update', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `child-${round}`, namespace: NS, uid: '00000000-0000-4000-8000-00000000000c', resourceVersion: '3', labels: { 'purko.io/recipe': `recipe-${round}` } }, spec: {} }),
      check: ok,
    }),
  },
  'dead-letter': { describe: 'a dead-lettered event (never calls the API)', prepare: async () => ({ request: { ...ping('resync'), headers: { ...ping('resync').headers, 'ce-knativeerrorcode': '503' } }, check: ok }) },
  console: {
    describe: 'GET /workflows, local auth',
    env: { KINETIC_CONSOLE_AUTH: 'local' },
    prepare: async () => ({ request: { method: 'GET', path: '/workflows', headers: {}, body: '' }, check: ok }),
  },
  'run-control': {
    describe: 'POST /api/cancel of a running Workflow',
    // The embedded API server has no TokenReview: as on the local plane, run-control allows the call as anonymous.
    env: callerAuthEnv(serviceStart('run-control').env, false),
    prepare: async (c, round) => {
      const name = `cancel-${round}`
      await createChain(c, name)
      return {
        request: { path: `/api/cancel/${NS}/${name}`, headers: { 'content-type': 'application/json' }, body: '{}' },
        check: async () => ((await getWorkflow(c, name)).metadata?.annotations?.[ANNOTATION_CANCEL] === 'true' ? undefined : 'no cancel annotation'),
      }
    },
  },
  'webhook-trigger': {
    describe: 'a signed webhook POST to a template: a new run',
    prepare: async (c, round) => {
      const template = `hook-${round}`
      await c.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: template }, stringData: { secret: 'bench' } } })
      await c.custom.createNamespacedCustomObject({
        ...PURKO, namespace: NS, plural: 'workflows',
        body: {
          apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: template, annotations: { [ANNOTATION_TEMPLATE]: 'true' } },
          spec: { trigger: { webhook: { secret: { name: template } } }, steps: [{ name: 'a', agentRef: { name: 'writer' } }] },
        },
      })
      const body = JSON.stringify({ round })
      const signature = createHmac('sha256', 'bench').update(body).digest('hex')
      return {
        request: { path: `/api/trigger/${NS}/${template}`, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${signature}`, 'x-github-delivery': `delivery-${round}` }, body },
        check: async () => {
          const runs = await c.custom.listNamespacedCustomObject({ ...PURKO, namespace: NS, plural: 'workflows' }) as { items: Array<Record<string, any>> }
          return runs.items.some((w) => w.metadata?.name !== template && String(w.metadata?.name).startsWith(template)) ? undefined : 'no run Workflow'
        },
      }
    },
  },
  'recipes-mcp': {
    describe: 'MCP tools/call list-recipes',
    env: callerAuthEnv(serviceStart('recipes-mcp').env, false),
    prepare: async () => ({
      request: { path: '/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list-recipes', arguments: { namespace: NS } } }) },
      check: ok,
    }),
  },
}

/** The Service's container: node's arguments, and the literal env values. */
function serviceStart(name: string): { args: string[]; env: Record<string, string> } {
  const file = join(ROOT, 'knative', 'services', `${name}.yaml`)
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const service = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Array<{ command?: string[]; args?: string[]; env?: Array<{ name: string; value?: string }> }> } } } }
    const container = service?.kind === 'Service' ? service.spec?.template?.spec?.containers?.[0] : undefined
    if (!container) continue
    if (container.command?.[0] !== 'node') throw new Error(`${file}: the container does not start node`)
    const env: Record<string, string> = {}
    for (const entry of container.env ?? []) if (entry.value !== undefined) env[entry.name] = entry.value
    return { args: [...container.command.slice(1), ...(container.args ?? [])], env }
  }
  throw new Error(`${file} has no Service`)
}

async function seed(api: ApiServer): Promise<Cluster> {
  const kc = api.kubeConfigObject()
  const core = kc.makeApiClient(CoreV1Api)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(ROOT, 'crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const crd = doc.toJS() as V1CustomResourceDefinition
      if (crd?.kind === 'CustomResourceDefinition') await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(JSON.stringify(crd)) })
    }
  }
  const custom = kc.makeApiClient(CustomObjectsApi)
  await custom.createNamespacedCustomObject({ ...PURKO, namespace: NS, plural: 'agents', body: { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer' }, spec: { model: { provider: 'offline', name: 'scripted' } } } })
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'agent-writer-sa' } } })
  const [{ createApp }, { KubeClient }, { readRuntimeConfig }, { noKineticEvents }, { silentLogger }] = await Promise.all([
    import('../functions/workflow-changed/index.js'), import('../shared/kube/client.js'), import('../shared/config.js'), import('../shared/engine/kinetic-events.js'), import('../shared/log.js'),
  ])
  const app = createApp({ kube: new KubeClient(kc), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events: noKineticEvents })
  const cluster: Cluster = {
    api, core, batch: kc.makeApiClient(BatchV1Api), custom,
    workflowChanged: async (event) => (await app.fetch(new Request('http://in-process/', { method: 'POST', headers: event.headers, body: event.body }))).status,
  }
  // The resync tick's load: 100 runs with a step Job still running.
  for (let i = 0; i < 100; i++) {
    const name = `idle-${i}`
    await createChain(cluster, name)
    await cluster.workflowChanged(objectEvent('dev.knative.apiserver.resource.add', await getWorkflow(cluster, name)))
  }
  return cluster
}

interface Variant { label: string; server: (name: string, env: Record<string, string>) => ServerUnderTest | undefined }

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, before: { type: 'string' }, dist: { type: 'string' }, only: { type: 'string' } } })
  const rounds = Number(values.rounds)
  const work = mkdtempSync(join(tmpdir(), 'kinetic-cold-start-'))
  // Its own dist/ (or --dist, one scripts/build.mjs already wrote), so a build elsewhere cannot
  // swap the files under a running round. The image's working directory holds dist/.
  if (values.dist) symlinkSync(values.dist, join(work, 'dist'))
  else {
    const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(work, 'dist')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } })
    if (built.status !== 0) throw new Error('scripts/build.mjs failed')
  }
  const names = Object.keys(PROBES).filter((n) => existsSync(join(ROOT, 'functions', n, 'main.ts')) && (!values.only || values.only.split(',').includes(n)))
  const missing = readdirSync(join(ROOT, 'functions')).filter((n) => existsSync(join(ROOT, 'functions', n, 'main.ts')) && !PROBES[n])
  if (missing.length > 0) console.log(`no probe yet for: ${missing.join(', ')}`)

  const api = await startApiServer()
  const proxy = await startCountingProxy(api.url)
  const kubeconfig = join(work, 'kubeconfig')
  writeFileSync(kubeconfig, kubeconfigYaml(proxy.url, NS))
  try {
    const cluster = await seed(api)
    const base = { KUBECONFIG: kubeconfig, LOG_LEVEL: 'info' }
    const variants: Variant[] = [
      ...(values.before ? [{ label: 'before (plain ESM)', server: (name: string, env: Record<string, string>) => ({ name, script: join(values.before!, 'functions', name, 'main.js'), env }) }] : []),
      { label: 'code cache, host Node', server: (name, env) => ({ name, script: join(work, 'dist', 'functions', name, 'main.js'), env }) },
      { label: 'as in image', server: (name, env) => { const start = serviceStart(name); return { name, script: '', args: start.args, cwd: work, env: { ...start.env, ...env } } } },
    ]
    const results = new Map<string, Array<{ ms: number; status: number; calls: number; failure?: string }>>()
    const bare: number[] = []
    for (let round = 0; round < rounds; round++) {
      bare.push((await timeToFirstAnswer({ name: 'bare', script: join(ROOT, 'bench', 'bare-server.mjs'), env: {} }, unrelatedJobEvent())).ms)
      for (const name of names) {
        for (const [v, variant] of variants.entries()) {
          const server = variant.server(name, { ...base, ...PROBES[name]!.env })
          if (!server) continue
          const { request: event, check } = await PROBES[name]!.prepare(cluster, `${round}-${v}`)
          proxy.take()
          const answer = await timeToFirstAnswer(server, event)
          const calls = [...proxy.take().values()].reduce((a, b) => a + b, 0)
          const failure = await check().catch((error: unknown) => String(error).slice(0, 120))
          const key = `${name}\t${variant.label}`
          results.set(key, [...(results.get(key) ?? []), { ...answer, calls, ...(failure ? { failure } : {}) }])
        }
      }
      process.stderr.write(`round ${round + 1}/${rounds} done, load ${loadavg()[0]!.toFixed(1)}\n`)
    }
    const bareMedian = median(bare)
    console.log(`\nCold start to the first answer of a request that needs the API (spawn → answer), ${rounds} interleaved rounds, Node ${process.versions.node}, load average ${loadavg().map((l) => l.toFixed(1)).join('/')} on ${(await import('node:os')).cpus().length} cores`)
    console.log(`bare node:http: median ${bareMedian.toFixed(0)} ms, p95 ${percentile(bare, 95).toFixed(0)} ms`)
    for (const variant of variants) {
      const rows = names.map((name) => {
        const runs = results.get(`${name}\t${variant.label}`) ?? []
        const ms = runs.map((r) => r.ms)
        const failures = [...new Set(runs.map((r) => r.failure).filter(Boolean))]
        return {
          function: name,
          probe: PROBES[name]!.describe,
          'median ms': Math.round(median(ms)),
          'p95 ms': Math.round(percentile(ms, 95)),
          'vs bare': `${(median(ms) / bareMedian).toFixed(2)}x`,
          'API calls': [...new Set(runs.map((r) => r.calls))].join('/'),
          status: [...new Set(runs.map((r) => r.status))].join('/'),
          effect: failures.length === 0 ? 'checked' : failures.join('; '),
        }
      })
      console.log(`\n${variant.label}`)
      console.table(rows)
    }
  } finally {
    await proxy.close()
    await api.close()
    rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
