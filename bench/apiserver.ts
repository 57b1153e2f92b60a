// Embedded API server benchmark: requests per second over real HTTP on 127.0.0.1, through
// @kubernetes/client-node (what the functions use) and through plain keep-alive fetch (the
// server's own cost with a thin client), plus watch fan-out: N watchers on ConfigMaps while one
// ConfigMap is patched M times. The Workflow status PUT is what a function does once per event.
// Run: node --import tsx bench/apiserver.ts   (BENCH_API_REQUESTS=2000, BENCH_WATCH_PATCHES=200)
import { readdirSync, readFileSync } from 'node:fs'
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node'
import { parseAllDocuments } from 'yaml'
import { startApiServer, type KubeObject } from '../local/apiserver/index.js'

const REQUESTS = Number(process.env.BENCH_API_REQUESTS ?? 2000)
const PATCHES = Number(process.env.BENCH_WATCH_PATCHES ?? 200)
const CONCURRENCY = 8
const NS = 'default'
const WF = { group: 'purko.io', version: 'v1alpha1', plural: 'workflows', namespace: NS }

const server = await startApiServer()
const kc = server.kubeConfigObject()
const core = kc.makeApiClient(CoreV1Api)
const custom = kc.makeApiClient(CustomObjectsApi)
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)

async function http<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
  const res = await fetch(`${server.url}${path}`, {
    method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': contentType } }),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`)
  return JSON.parse(text) as T
}

// The generated CRDs, so Workflow writes pay for the real schema validation and defaulting.
const crdDir = new URL('../crds/', import.meta.url)
for (const file of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
  for (const doc of parseAllDocuments(readFileSync(new URL(file, crdDir), 'utf8'))) {
    const obj = doc.toJSON() as KubeObject | null
    if (obj?.kind === 'CustomResourceDefinition') await http('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', obj)
  }
}
while ((await fetch(`${server.url}/apis/purko.io/v1alpha1`)).status !== 200) await new Promise((r) => setTimeout(r, 20))

// One ConfigMap and one Workflow per in-flight worker, so status PUTs never conflict.
for (let w = 0; w < CONCURRENCY; w++) {
  await http('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: `bench-${w}` }, data: { n: '0' } })
  await http('POST', `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`, {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: `bench-${w}` },
    spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'draft', agentRef: { name: 'writer' }, dependsOn: ['plan'] }] },
  })
}

/** A status as workflow-changed writes it mid-run; `i` makes every write a real change. */
function statusOf(i: number) {
  return {
    phase: 'Running', message: `1/2 steps completed (${i})`, observedGeneration: 1, totalSteps: 2, completedSteps: 1, failedSteps: 0,
    startTime: '2026-01-01T00:00:00Z', runId: 'bench-run',
    stepStatuses: [
      { name: 'plan', phase: 'Succeeded', jobName: 'bench-plan-run', outputRef: 'bench-outputs' },
      { name: 'draft', phase: 'Running', jobName: `bench-draft-run-${i}` },
    ],
  }
}

interface Rate { label: string; client: string; perSecond: number; p50: number; p99: number }

/** Runs `op` `count` times with CONCURRENCY workers; `op` gets the worker's index and a counter. */
async function rate(label: string, client: string, op: (worker: number, i: number) => Promise<unknown>, count = REQUESTS): Promise<Rate> {
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, worker) => {
    while (next < count) {
      const i = next++
      const t = performance.now()
      await op(worker, i)
      latencies.push(performance.now() - t)
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { label, client, perSecond: count / seconds, p50: latencies[Math.floor(latencies.length / 2)]!, p99: latencies[Math.floor(latencies.length * 0.99)]! }
}

// Status PUTs carry the resourceVersion of the previous write, as the functions' guarded write does.
const lastWorkflow = new Map<string, KubeObject>()
for (let w = 0; w < CONCURRENCY; w++) lastWorkflow.set(`bench-${w}`, await http<KubeObject>('GET', `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/bench-${w}`))
const putStatus = async (w: number, i: number, send: (name: string, body: KubeObject) => Promise<unknown>) => {
  const name = `bench-${w}`
  lastWorkflow.set(name, await send(name, { ...lastWorkflow.get(name)!, status: statusOf(i) }) as KubeObject)
}

const rates: Rate[] = []
// Warm the JIT and both clients' connection pools first.
await rate('warm-up', 'fetch', (w) => http('GET', `/api/v1/namespaces/${NS}/configmaps/bench-${w}`), 500)
await rate('warm-up', 'client-node', (w) => core.readNamespacedConfigMap({ namespace: NS, name: `bench-${w}` }), 500)
for (const [client, get, patch, put] of [
  ['client-node',
    (w: number) => core.readNamespacedConfigMap({ namespace: NS, name: `bench-${w}` }),
    (w: number, i: number) => core.patchNamespacedConfigMap({ namespace: NS, name: `bench-${w}`, body: { data: { n: String(i) } } }, merge),
    (w: number, i: number) => putStatus(w, i, (name, body) => custom.replaceNamespacedCustomObjectStatus({ ...WF, name, body })),
  ],
  ['fetch keep-alive',
    (w: number) => http('GET', `/api/v1/namespaces/${NS}/configmaps/bench-${w}`),
    (w: number, i: number) => http('PATCH', `/api/v1/namespaces/${NS}/configmaps/bench-${w}`, { data: { n: String(i) } }, 'application/merge-patch+json'),
    (w: number, i: number) => putStatus(w, i, (name, body) => http('PUT', `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/${name}/status`, body)),
  ],
] as const) {
  rates.push(await rate('GET ConfigMap', client, get))
  rates.push(await rate('merge-PATCH ConfigMap', client, patch))
  rates.push(await rate('PUT Workflow /status', client, put))
}

interface FanOut { watchers: number; patchesPerSecond: number; eventsPerSecond: number; patchedMs: number; allSeenMs: number }

/**
 * N client-node watches on the ConfigMaps of the namespace; one ConfigMap patched PATCHES times
 * with CONCURRENCY in flight. Each patch changes data, so each is exactly one MODIFIED event.
 */
async function fanOut(watchers: number): Promise<FanOut> {
  const name = `fan-out-${watchers}`
  await http('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name }, data: { n: 'start' } })
  const seen = new Array<number>(watchers).fill(0)
  const doneAt = new Array<number>(watchers).fill(0)
  let target = 1
  let allSeen!: () => void
  let waiting = new Promise<void>((r) => { allSeen = r })
  const rv = (await http<{ metadata: { resourceVersion: string } }>('GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`)).metadata.resourceVersion
  const aborts = await Promise.all(Array.from({ length: watchers }, (_, w) => new Watch(kc).watch(
    `/api/v1/namespaces/${NS}/configmaps`, { resourceVersion: rv },
    (type, obj: KubeObject) => {
      if (type !== 'MODIFIED' || obj.metadata?.name !== name) return
      seen[w]! += 1
      if (seen[w] === target) {
        doneAt[w] = performance.now()
        if (seen.every((s) => s >= target)) allSeen()
      }
    },
    () => {},
  )))
  // A first patch proves every watch is live before the clock starts.
  await http('PATCH', `/api/v1/namespaces/${NS}/configmaps/${name}`, { data: { n: 'ready' } }, 'application/merge-patch+json')
  await waiting
  target = 1 + PATCHES
  waiting = new Promise<void>((r) => { allSeen = r })
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < PATCHES) {
      const i = next++
      await http('PATCH', `/api/v1/namespaces/${NS}/configmaps/${name}`, { data: { n: String(i) } }, 'application/merge-patch+json')
    }
  }))
  const patched = performance.now()
  // A lost watch event would otherwise hang the run instead of failing it.
  let timer: NodeJS.Timeout | undefined
  await Promise.race([waiting, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`watchers saw ${seen.join(',')} of ${target} events`)), 60_000)
  })])
  clearTimeout(timer)
  for (const a of aborts) a.abort()
  const last = Math.max(...doneAt)
  return {
    watchers,
    patchesPerSecond: PATCHES / ((patched - started) / 1000),
    eventsPerSecond: (watchers * PATCHES) / ((last - started) / 1000),
    patchedMs: patched - started,
    allSeenMs: last - started,
  }
}

const fans: FanOut[] = []
for (const n of [1, 10, 50]) fans.push(await fanOut(n))
await server.close()

const table = (head: string[], rows: string[][]) => {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
  console.log(line(head))
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
  for (const r of rows) console.log(line(r))
}
console.log(`Embedded API server over HTTP on 127.0.0.1, ${CONCURRENCY} requests in flight, ${REQUESTS} requests per row (Node ${process.version})`)
table(['request', 'client', 'req/s', 'p50 ms', 'p99 ms'],
  rates.map((r) => [r.label, r.client, r.perSecond.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2)]))
console.log('')
console.log(`Watch fan-out: N client-node watches on ConfigMaps, one ConfigMap merge-patched ${PATCHES} times (fetch, ${CONCURRENCY} in flight)`)
table(['watchers', 'patches/s', 'watch events/s (all watchers)', 'last patch returned, ms', 'all watchers saw last change, ms'],
  fans.map((f) => [String(f.watchers), f.patchesPerSecond.toFixed(0), f.eventsPerSecond.toFixed(0), f.patchedMs.toFixed(0), f.allSeenMs.toFixed(0)]))
console.log('Times are from the first patch. A watcher can see the last change before its patch response is read, so the last column may be the smaller.')
