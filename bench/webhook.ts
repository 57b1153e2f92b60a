// webhook-trigger benchmark, two figures:
//   requests/s of one process: the function's app (functions/webhook-trigger/index.ts) served
//     in-process on node:http by @hono/node-server, called over HTTP with fetch by 1, 8 and 32
//     concurrent senders for a fixed time, every call GitHub-signed. Three answers are measured:
//     201 (a new body each call: HMAC, run create; the template and Secret are read once per
//     10 s), 200 duplicate (one body: the create answers AlreadyExists, then the run is read),
//     and 401 (a wrong secret: HMAC only; one Warning Event a minute).
//     Against the embedded API server (local/apiserver, in this process: it shares the CPU with
//     the senders and the function) through the real client-node adapter, twice: as the product
//     connects, and as EmbeddedKube, the tests' double (the same client and server, one
//     kept-alive connection pool; seeded through the server's store). The rate limit is off here.
//   webhook-to-first-Job latency: the local plane (embedded API server, every Knative Service of
//     knative/ as its own process, webhook-trigger and workflow-changed included, the Knative
//     emulation delivering the run's Workflow event): from just before the signed POST to
//     webhook-trigger until this process's watch sees the run's first step Job. Sequential,
//     after one warm-up run; p50/p95 over N.
// Run: node --import tsx bench/webhook.ts   (BENCH_WEBHOOK_SECONDS=3, BENCH_WEBHOOK_RUNS=20)
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { serve } from '@hono/node-server'
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { createApp } from '../functions/webhook-trigger/index.js'
import { startApiServer } from '../local/apiserver/index.js'
import { freePort } from '../local/free-port.js'
import { listAndWatch, type KubeObject } from '../local/knative/kube-http.js'
import { startLocalPlane } from '../local/plane.js'
import { KubeClient } from '../shared/kube/client.js'
import type { Kube } from '../shared/kube/port.js'
import { silentLogger } from '../shared/log.js'
import { RateLimiter } from '../shared/webhook/rate-limit.js'
import { githubSignature } from '../shared/webhook/signature.js'
import { EmbeddedKube } from '../test/support/embedded-kube.js'
import { WorkflowSchema } from '../shared/schemas/workflow.js'
import { percentile, printTable } from './stats.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 3)
const RUNS = Number(process.env.BENCH_WEBHOOK_RUNS ?? 20)
const CONCURRENCY = [1, 8, 32]
const NS = 'bench-webhook'
const SECRET = 'bench-webhook-secret'
/** A delivery's body; a run is named by what is signed (the body), so each new delivery has its own. */
const bodyOf = (n: string) => JSON.stringify({ action: 'opened', repository: { full_name: 'acme/shop' }, pull_request: { title: `Bench ${n}` }, parameters: { env: 'bench' } })
const BODY = bodyOf('the-same-delivery')
const SIGNATURE = githubSignature(SECRET, BODY)

const templateObject = (name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
  metadata: { name, namespace: NS, annotations: { 'purko.io/template': 'true' } },
  spec: {
    description: 'webhook bench',
    trigger: { webhook: { secret: { name: 'hook' } } },
    steps: [{ name: 'review', agentRef: { name: 'writer' } }, { name: 'report', agentRef: { name: 'writer' }, dependsOn: ['review'], input: { task: 'report' } }],
  },
})

type Kind = '201 new run' | '200 duplicate' | '401 wrong secret'

/** Calls/s of `concurrency` senders looping for SECONDS against the URL, every answer checked. */
async function throughput(url: string, kind: Kind, concurrency: number): Promise<{ rps: number; p50: number; p95: number }> {
  let seq = 0
  const latencies: number[] = []
  const until = performance.now() + SECONDS * 1000
  const want = kind === '201 new run' ? 201 : kind === '200 duplicate' ? 200 : 401
  const sender = async (id: number) => {
    while (performance.now() < until) {
      const body = kind === '201 new run' ? bodyOf(`d-${concurrency}-${id}-${seq++}`) : BODY
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-hub-signature-256': kind === '401 wrong secret' ? githubSignature('guess', body) : githubSignature(SECRET, body),
      }
      const start = performance.now()
      const res = await fetch(url, { method: 'POST', headers, body })
      await res.arrayBuffer()
      latencies.push(performance.now() - start)
      if (res.status !== want) throw new Error(`${kind}: answered ${res.status}`)
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, (_, i) => sender(i)))
  const elapsed = (performance.now() - started) / 1000
  return { rps: latencies.length / elapsed, p50: percentile(latencies, 50), p95: percentile(latencies, 95) }
}

/** The function in this process on a free port, over the given Kube. */
async function serveFunction(kube: Kube): Promise<{ url: string; close: () => Promise<void> }> {
  const port = await freePort()
  const off = () => new RateLimiter({ ratePerSecond: 0, burst: 1 })
  const app = createApp({ kube, log: silentLogger, now: () => new Date(), limiter: off(), refusedLimiter: off(), lookupLimiter: off() })
  const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' })
  await new Promise((r) => setTimeout(r, 50))
  return { url: `http://127.0.0.1:${port}/api/trigger/${NS}/review`, close: () => new Promise((r) => server.close(() => r(undefined))) }
}

async function requestsPerSecond(): Promise<Array<{ backend: string; kind: Kind; concurrency: number; rps: number; p50: number; p95: number }>> {
  const rows: Array<{ backend: string; kind: Kind; concurrency: number; rps: number; p50: number; p95: number }> = []
  // Embedded API server.
  const api = await startApiServer()
  try {
    const kc = api.kubeConfigObject()
    const ext = kc.makeApiClient(ApiextensionsV1Api)
    const dir = join(ROOT, 'crds')
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
    }
    const core = kc.makeApiClient(CoreV1Api)
    await core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined)
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'hook' }, stringData: { secret: SECRET } } })
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', body: templateObject('review') })
    const fn = await serveFunction(new KubeClient(kc))
    try {
      for (const kind of ['201 new run', '200 duplicate', '401 wrong secret'] as Kind[]) {
        // The duplicate needs its run first.
        if (kind === '200 duplicate') await fetch(fn.url, { method: 'POST', headers: { 'x-hub-signature-256': SIGNATURE, 'x-github-delivery': 'the-same-delivery' }, body: BODY })
        await throughput(fn.url, kind, 4) // warm-up
        for (const c of CONCURRENCY) rows.push({ backend: 'embedded API server', kind, concurrency: c, ...(await throughput(fn.url, kind, c)) })
      }
    } finally {
      await fn.close()
    }
  } finally {
    await api.close()
  }
  // EmbeddedKube: the same server with kept-alive connections.
  const kube = new EmbeddedKube()
  kube.namespaces.set(NS, { metadata: { name: NS } })
  kube.putWorkflow(WorkflowSchema.parse({ ...templateObject('review'), metadata: { ...templateObject('review').metadata, uid: 'uid-review' } }))
  kube.secrets.set(`${NS}/hook`, { metadata: { name: 'hook', namespace: NS }, data: { secret: Buffer.from(SECRET).toString('base64') } })
  const fn = await serveFunction(kube)
  try {
    for (const kind of ['201 new run', '200 duplicate', '401 wrong secret'] as Kind[]) {
      if (kind === '200 duplicate') await fetch(fn.url, { method: 'POST', headers: { 'x-hub-signature-256': SIGNATURE, 'x-github-delivery': 'the-same-delivery' }, body: BODY })
      await throughput(fn.url, kind, 4)
      for (const c of CONCURRENCY) rows.push({ backend: 'EmbeddedKube (kept-alive)', kind, concurrency: c, ...(await throughput(fn.url, kind, c)) })
    }
  } finally {
    await fn.close()
  }
  return rows
}

/** Webhook POST -> the run's first step Job seen, on the local plane; plus the POST's own answer time. */
async function webhookToFirstJob(): Promise<{ total: number[]; answer: number[] }> {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-webhook-'))
  const plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs') })
  const stop = new AbortController()
  try {
    const webhook = plane.functions.get('webhook-trigger')
    if (!webhook) throw new Error('the local plane runs no webhook-trigger (knative/services/webhook-trigger.yaml missing?)')
    await plane.kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await plane.kube.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer', namespace: NS }, spec: { model: { provider: 'offline', name: 'scripted' } } })
    await plane.kube.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hook', namespace: NS }, stringData: { secret: SECRET } } as KubeObject)
    await plane.kube.apply(templateObject('review') as KubeObject)
    // Steps wait for their agent's identity, which agent-changed makes: wait for it once.
    const agentPath = `/apis/purko.io/v1alpha1/namespaces/${NS}/agents/writer`
    for (let i = 0; i < 600 && !((await plane.kube.get(agentPath)) as { status?: { serviceAccountName?: string } } | null)?.status?.serviceAccountName; i++) {
      await new Promise((r) => setTimeout(r, 100))
    }
    const firstJob = new Map<string, number>()
    const waiters = new Map<string, () => void>()
    let synced!: () => void
    const ready = new Promise<void>((r) => { synced = r })
    const onJob = (job: KubeObject) => {
      const run = job.metadata?.labels?.['purko.io/workflow']
      if (!run || firstJob.has(run)) return
      firstJob.set(run, performance.now())
      waiters.get(run)?.()
    }
    void listAndWatch(plane.kube, `/apis/batch/v1/namespaces/${NS}/jobs`, '', {
      onList: (items) => { for (const i of items) onJob(i) },
      onEvent: (ev) => { if (ev.type !== 'DELETED') onJob(ev.object) },
      synced,
    }, stop.signal)
    await ready
    const total: number[] = []
    const answer: number[] = []
    for (let i = 0; i <= RUNS; i++) {
      const start = performance.now()
      const sent = bodyOf(`latency-${i}`)
      const res = await fetch(`${webhook.url}/api/trigger/${NS}/review`, {
        method: 'POST', body: sent,
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': githubSignature(SECRET, sent) },
      })
      const answered = performance.now()
      const body = await res.json() as { run?: string }
      if (res.status !== 201 || !body.run) throw new Error(`webhook answered ${res.status} ${JSON.stringify(body)}`)
      const run = body.run
      await new Promise<void>((resolve, reject) => {
        if (firstJob.has(run)) return resolve()
        const timer = setTimeout(() => reject(new Error(`no Job for ${run} within 60 s`)), 60_000)
        waiters.set(run, () => { clearTimeout(timer); resolve() })
      })
      // Run 0 warms up the function processes (client loading, first planner call).
      if (i === 0) continue
      total.push((firstJob.get(run) as number) - start)
      answer.push(answered - start)
    }
    return { total, answer }
  } finally {
    stop.abort()
    await plane.stop()
    rmSync(scratch, { recursive: true, force: true })
  }
}

const rps = await requestsPerSecond()
printTable(`webhook-trigger requests/s, one in-process server (Node ${process.version}, ${SECONDS} s per row, rate limit off)`,
  ['backend', 'answer', 'senders', 'calls/s', 'p50 ms', 'p95 ms'],
  rps.map((r) => [r.backend, r.kind, String(r.concurrency), r.rps.toFixed(0), r.p50.toFixed(1), r.p95.toFixed(1)]))

const latency = await webhookToFirstJob()
printTable(`webhook POST to the run's first step Job, local plane (embedded API server, functions as processes), ${RUNS} sequential runs after a warm-up`,
  ['ms', 'p50', 'p95', 'min', 'max'],
  [
    ['POST -> first Job seen by a watch', ...[50, 95].map((p) => percentile(latency.total, p).toFixed(0)), Math.min(...latency.total).toFixed(0), Math.max(...latency.total).toFixed(0)],
    ['  of which the 201 answer', ...[50, 95].map((p) => percentile(latency.answer, p).toFixed(0)), Math.min(...latency.answer).toFixed(0), Math.max(...latency.answer).toFixed(0)],
  ])
process.exit(0)
