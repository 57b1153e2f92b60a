// Memory of each function: RSS after its first event and after 10,000 events, one process per
// function started as its Knative Service starts it (`node dist/functions/<name>/main.js`, the
// Service's env), against the embedded API server. The events are real: a workload run through
// the embedded local plane first (bench/support/event-corpus.ts) and every delivery recorded;
// each function then gets its own Trigger's events again, round and round, 8 in flight. Functions
// without a Trigger get the HTTP calls they serve (console pages, run-control API calls, webhook
// calls, MCP tool calls); dead-letter gets the recorded events as a dead-letter sink would.
// RSS is VmRSS from /proc before any forced GC; heap is read after two forced GCs
// (bench/support/memory-probe.cjs), so growth of the heap means objects still referenced.
// Run: node --import tsx bench/memory.ts   (BENCH_EVENTS=10000, BENCH_INFLIGHT=8,
//      BENCH_FUNCTIONS=a,b to pick some, BENCH_FUNCTION_SECONDS=n to cap each function's time,
//      BENCH_SKIP_BUILD=1 to use dist/ as it is)
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toBinary, type KEvent } from '../local/knative/cloud-event.js'
import { loadKnativeManifests } from '../local/knative/manifests.js'
import type { KubeObject } from '../local/knative/kube-http.js'
import { callerAuthEnv, localConsoleEnv } from '../local/function-env.js'
import type { LocalPlane } from '../local/plane.js'
import { NS, recordEventCorpus } from './support/event-corpus.js'
import { serviceEnv, startFunctionProcess, type FunctionProcess } from './support/function-process.js'
import { printTable } from './stats.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000)
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 8)
// A function slower than this stops early; the table then says how many events it got.
const BUDGET_MS = Number(process.env.BENCH_FUNCTION_SECONDS ?? 0) * 1000 || Number.POSITIVE_INFINITY
const ONLY = process.env.BENCH_FUNCTIONS ? new Set(process.env.BENCH_FUNCTIONS.split(',')) : undefined
const CHECKPOINTS = [...new Set([Math.round(EVENTS / 10), Math.round(EVENTS / 2), EVENTS])].filter((n) => n > 1)
const MIB = 1024 * 1024

/** One HTTP request, ready to send. */
interface Call {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string | Uint8Array
}

function eventCall(event: KEvent): Call {
  const { headers, body } = toBinary(event)
  return { method: 'POST', path: '/', headers, ...(body !== undefined ? { body } : {}) }
}

function send(base: string, call: Call): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${call.path}`, { method: call.method, headers: call.headers }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    })
    req.once('error', reject)
    req.end(call.body)
  })
}

type Run = KubeObject & { status?: { phase?: string; stepStatuses?: Array<{ name: string; phase?: string }> } }

/** What the functions without a Trigger are called with, built from the objects the workload left. */
async function apiCalls(name: string, plane: LocalPlane): Promise<Call[]> {
  const list = await plane.kube.get<{ items: Run[] }>(`/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`)
  const runs = (list?.items ?? []).map((w) => ({ name: String(w.metadata?.name), phase: w.status?.phase, steps: (w.status?.stepStatuses ?? []).map((s) => s.name) }))
  const finished = runs.filter((r) => r.phase === 'Succeeded' || r.phase === 'Failed')
  const json = { 'content-type': 'application/json' }
  switch (name) {
    case 'console':
      return [
        '/workflows', '/agents', '/agents/ai-agents/planner', '/mcpservers', '/providers', '/recipes', '/recipes/ai-agents/hello-web',
        ...runs.flatMap((r) => [`/workflows/${NS}/${r.name}`, ...r.steps.slice(0, 2).map((s) => `/workflows/${NS}/${r.name}/steps/${s}`)]),
      ].map((path) => ({ method: 'GET', path, headers: { accept: 'text/html' } }))
    case 'run-control':
      return finished.flatMap((r): Call[] => [
        ...r.steps.map((s): Call => ({ method: 'GET', path: `/api/logs/${NS}/${r.name}/${s}`, headers: {} })),
        { method: 'POST', path: `/api/approve/${NS}/${r.name}/${r.steps[0]}`, headers: json, body: '{}' },
        { method: 'POST', path: `/api/cancel/${NS}/${r.name}`, headers: json, body: '{}' },
      ])
    case 'webhook-trigger':
      return [
        { method: 'POST', path: `/api/trigger/${NS}/no-such-template`, headers: json, body: '{"alert":"disk full"}' },
        ...finished.slice(0, 5).map((r): Call => ({ method: 'POST', path: `/api/trigger/${NS}/${r.name}`, headers: json, body: '{"alert":"disk full"}' })),
      ]
    case 'recipes-mcp': {
      const mcp = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
      const rpc = (id: number, method: string, params: unknown): Call => ({ method: 'POST', path: '/mcp', headers: mcp, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
      return [
        rpc(1, 'tools/list', {}),
        rpc(2, 'tools/call', { name: 'list-recipes', arguments: { namespace: NS, kind: 'templates' } }),
        rpc(3, 'tools/call', { name: 'get-recipe', arguments: { namespace: NS, name: 'hello-web' } }),
        rpc(4, 'tools/call', { name: 'get-recipe-status', arguments: { namespace: NS, name: 'hello' } }),
      ]
    }
    default:
      return []
  }
}

/** A dead-letter sink's view of the recorded events: the Broker's knativeerror* extensions added. */
function deadLettered(events: Map<string, KEvent[]>, urlOf: (fn: string) => string): KEvent[] {
  return [...events.entries()].flatMap(([fn, list]) => list.map((e) => ({ ...e, extensions: { ...e.extensions, knativeerrordest: urlOf(fn), knativeerrorcode: 503 } })))
}

/** A stand-in Broker ingress for the events functions publish themselves (K_SINK, KINETIC_EVENT_SINK). */
async function startSink(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => { req.resume(); req.once('end', () => { res.statusCode = 202; res.end() }) })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const address = server.address()
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/kinetic-system/default`, close: () => server.close() }
}

interface Figures {
  name: string
  mix: string
  first: { rss: number; heap: number }
  at: Array<{ events: number; rss: number; heap: number; heapTotal: number }>
  peak: number
  statuses: Map<number, number>
  seconds: number
  events: number
}

/** Sends `total` calls cycling through `calls`, `INFLIGHT` at a time, reading memory at each checkpoint. */
async function drive(fn: FunctionProcess, calls: Call[], statuses: Map<number, number>, from: number, to: number, deadline = Number.POSITIVE_INFINITY): Promise<number> {
  let next = from
  const worker = async () => {
    while (next < to && performance.now() < deadline) {
      const i = next++
      let status: number
      try {
        status = await send(fn.url, calls[i % calls.length] as Call)
      } catch {
        status = 0
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: INFLIGHT }, worker))
  return next
}

async function measure(fn: FunctionProcess, calls: Call[], mix: string): Promise<Figures> {
  const statuses = new Map<number, number>()
  const started = performance.now()
  const deadline = started + BUDGET_MS
  await drive(fn, calls, statuses, 0, 1)
  // Let the first event's deferred work (log flush, sockets) settle before reading.
  await new Promise((r) => setTimeout(r, 200))
  const first = { rss: fn.rss().rss, heap: (await fn.heap()).heapUsed }
  const at: Figures['at'] = []
  let done = 1
  for (const checkpoint of CHECKPOINTS) {
    if (done >= checkpoint || performance.now() >= deadline) break
    done = await drive(fn, calls, statuses, done, checkpoint, deadline)
    await new Promise((r) => setTimeout(r, 200))
    const rss = fn.rss().rss
    const heap = await fn.heap()
    at.push({ events: done, rss, heap: heap.heapUsed, heapTotal: heap.heapTotal })
  }
  return { name: fn.name, mix, first, at, peak: fn.rss().peak, statuses, seconds: (performance.now() - started) / 1000, events: done }
}

function describeMix(calls: Call[], events?: KEvent[]): string {
  if (events) {
    const kinds = new Map<string, number>()
    for (const e of events) {
      const key = `${String(e.extensions.kind ?? e.type.replace(/^dev\.knative\.(apiserver\.resource|sources)\./, ''))} ${e.type.split('.').pop()}`
      kinds.set(key, (kinds.get(key) ?? 0) + 1)
    }
    return `${events.length} recorded: ${[...kinds.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, n]) => `${n} ${k}`).join(', ')}`
  }
  return `${calls.length} distinct calls`
}

const mib = (bytes: number) => (bytes / MIB).toFixed(1)

async function main(): Promise<void> {
  if (process.env.BENCH_SKIP_BUILD !== '1') {
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })
    if (build.status !== 0) throw new Error('npm run build failed')
  }
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-memory-'))
  const sink = await startSink()
  const t0 = performance.now()
  const corpus = await recordEventCorpus({ root: ROOT, scratch, chains: 8, steps: 3 })
  const recordSeconds = (performance.now() - t0) / 1000
  const rows: Figures[] = []
  try {
    const services = loadKnativeManifests(join(ROOT, 'knative')).services
      .filter((s) => existsSync(join(ROOT, 'dist', 'functions', s.metadata.name, 'main.js')))
      .filter((s) => !ONLY || ONLY.has(s.metadata.name))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    for (const svc of services) {
      const name = svc.metadata.name
      const env: Record<string, string> = {
        KUBECONFIG: corpus.plane.kubeconfigPath,
        K_SINK: sink.url,
        KINETIC_EVENT_SINK: sink.url,
        // Caller authentication as the local plane sets it (the embedded server has no TokenReview).
        ...callerAuthEnv(serviceEnv(svc), false),
        ...(name === 'console' ? localConsoleEnv(undefined) : {}),
      }
      const fn = await startFunctionProcess(ROOT, svc, env, scratch)
      try {
        let calls: Call[]
        let mix: string
        const recorded = name === 'dead-letter' ? deadLettered(corpus.events, (f) => corpus.plane.functions.get(f)?.url ?? f) : corpus.events.get(name)
        if (recorded && recorded.length > 0) {
          calls = recorded.map(eventCall)
          mix = describeMix(calls, recorded)
        } else {
          calls = await apiCalls(name, corpus.plane)
          mix = describeMix(calls)
        }
        if (calls.length === 0) {
          console.log(`skipped ${name}: the workload gave it no events and it serves no HTTP calls here`)
          continue
        }
        const figures = await measure(fn, calls, mix)
        rows.push(figures)
        const last = figures.at[figures.at.length - 1]!
        console.log(`${name}: ${figures.events} in ${figures.seconds.toFixed(1)} s, RSS ${mib(figures.first.rss)} -> ${mib(last.rss)} MiB, heap ${mib(figures.first.heap)} -> ${mib(last.heap)} MiB`)
      } finally {
        await fn.stop()
      }
    }
  } finally {
    sink.close()
    await corpus.plane.stop()
    if (process.env.BENCH_KEEP_SCRATCH === '1') console.log(`function logs kept in ${scratch}`)
    else rmSync(scratch, { recursive: true, force: true })
  }

  printTable(
    `Memory per function, MiB: one process each (node dist/functions/<name>/main.js, its Service's env) against the embedded API server, ${EVENTS} events ${INFLIGHT} in flight (Node ${process.version}).
RSS is VmRSS before any forced GC; heap is heapUsed after two forced GCs. Target: < 80 MiB RSS and no growth. Event corpus recorded in ${recordSeconds.toFixed(0)} s.`,
    ['function', 'events', 'first-event RSS', ...CHECKPOINTS.map((n) => `RSS @${n}`), 'peak RSS', 'RSS growth', 'first heap', ...CHECKPOINTS.map((n) => `heap @${n}`), 'heap growth', 'heapTotal last', 'events/s', 'answers'],
    rows.map((r) => {
      const last = r.at[r.at.length - 1] ?? { ...r.first, events: 1 }
      const mid = r.at[0] ?? last
      // Readings are in checkpoint order; a function stopped early by BENCH_FUNCTION_SECONDS has fewer (see 'events').
      const column = (read: (a: Figures['at'][number]) => number) => CHECKPOINTS.map((_, i) => (r.at[i] ? mib(read(r.at[i])) : '-'))
      return [
        r.name, String(r.events), mib(r.first.rss), ...column((a) => a.rss), mib(r.peak),
        `${last.rss >= mid.rss ? '+' : ''}${mib(last.rss - mid.rss)}`,
        mib(r.first.heap), ...column((a) => a.heap),
        `${last.heap >= mid.heap ? '+' : ''}${mib(last.heap - mid.heap)}`,
        'heapTotal' in last ? mib(last.heapTotal) : '-',
        (r.events / r.seconds).toFixed(0),
        [...r.statuses.entries()].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${n}x${s}`).join(' '),
      ]
    }),
  )
  console.log('Growth is counted from the first checkpoint (after the process has warmed up: JIT, connection pools, caches of code) to the last.')
  printTable('Event mix per function', ['function', 'mix'], rows.map((r) => [r.name, r.mix]))
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
