// Tracing's cost. 1) Cold start and per-event cost of a built function (dead-letter: no Kubernetes
// API, so the figures are the HTTP shell's own) with tracing off (no OTEL_* variable) and on
// (OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP stand-in that answers 200), interleaved rounds of
// the same build. 2) The exporter's memory while 10,000 handled events each record a span, as the
// functions do (batched every 200 ms), to a collector that answers and to one that is unreachable.
// The stand-in is a bare node:http server: what is measured is Kinetic's side, not a collector's.
// --base <dist>: a dist/ built from the commit before tracing, measured in the same rounds.
// Run: node --import tsx bench/telemetry.ts [--rounds 7] [--events 300] [--base <dist>]
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { CloudEvent, HTTP } from 'cloudevents'
import { freePort } from '../local/free-port.js'
import { createSpanSink } from '../shared/telemetry/exporter.js'
import { functionSpan } from '../shared/telemetry/function-span.js'
import { median, printTable } from './stats.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const { values: opts } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, events: { type: 'string', default: '300' }, base: { type: 'string' } } })
const ROUNDS = Number(opts.rounds)
const EVENTS = Number(opts.events)

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A stand-in OTLP endpoint: drains each export request and answers 200 with an empty body. */
async function otlpStandIn(): Promise<{ url: string; server: Server; requests: () => number }> {
  let count = 0
  const server = createServer((req, res) => {
    count++
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests: () => count }
}

function encoded(i: number): { headers: Record<string, string>; body: string } {
  const m = HTTP.binary(new CloudEvent({ id: `ev-${i}`, type: 'dev.knative.apiserver.resource.update', source: 'bench', subject: '/apis/batch/v1/namespaces/ns/jobs/j', data: { kind: 'Job' } }))
  return { headers: m.headers as Record<string, string>, body: m.body as string }
}

function post(port: number, event: { headers: Record<string, string>; body: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: event.headers, agent: false }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(event.body)
  })
}

/** Spawn to the first answered event, then the mean time of `EVENTS` more, one after another. */
async function measure(main: string, env: Record<string, string>): Promise<{ startMs: number; perEventMs: number }> {
  const port = await freePort()
  const t0 = performance.now()
  const child = spawn(process.execPath, [main], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env }, stdio: 'ignore' })
  try {
    let startMs = Number.NaN
    for (;;) {
      try {
        const status = await post(port, encoded(0))
        if (status !== 202) throw new Error(`first event answered ${status}`)
        startMs = performance.now() - t0
        break
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') throw err
        if (performance.now() - t0 > 30_000) throw new Error('the function did not listen within 30 s')
        await new Promise((r) => setTimeout(r, 2))
      }
    }
    const t1 = performance.now()
    for (let i = 1; i <= EVENTS; i++) await post(port, encoded(i))
    return { startMs, perEventMs: (performance.now() - t1) / EVENTS }
  } finally {
    child.kill('SIGKILL')
  }
}

async function coldStart(): Promise<void> {
  const out = mkdtempSync(join(tmpdir(), 'kinetic-bench-telemetry-'))
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--only', 'dead-letter', '--outdir', out], { cwd: ROOT, encoding: 'utf8' })
  if (built.status !== 0) throw new Error(`build failed: ${built.stderr}`)
  const main = join(out, 'functions', 'dead-letter', 'main.js')
  const standIn = await otlpStandIn()
  const rows: Record<string, Array<{ startMs: number; perEventMs: number }>> = { off: [], on: [], base: [] }
  const baseMain = opts.base ? join(opts.base, 'functions', 'dead-letter', 'main.js') : undefined
  await measure(main, {}) // one start to warm the file cache
  if (baseMain) await measure(baseMain, {})
  for (let r = 0; r < ROUNDS; r++) {
    if (baseMain) rows.base!.push(await measure(baseMain, {}))
    rows.off!.push(await measure(main, {}))
    rows.on!.push(await measure(main, { OTEL_EXPORTER_OTLP_ENDPOINT: standIn.url }))
  }
  standIn.server.close()
  const line = (name: string, label = name) => [label, median(rows[name]!.map((x) => x.startMs)).toFixed(1), median(rows[name]!.map((x) => x.perEventMs)).toFixed(3)]
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} cores`)
  printTable(`dead-letter, built bundle, ${ROUNDS} interleaved rounds (median); per event: ${EVENTS} events one after another`, ['tracing', 'cold start ms', 'per event ms'], [
    ...(baseMain ? [line('base', 'before tracing existed')] : []), line('off'), line('on'),
  ])
  console.log(`OTLP export requests received while tracing was on: ${standIn.requests()}\n`)
}

async function exporterMemory(reachable: boolean): Promise<string[]> {
  const standIn = await otlpStandIn()
  const port = reachable ? undefined : await freePort()
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = reachable ? standIn.url : `http://127.0.0.1:${port}`
  const { otlpShipper } = await import('../shared/telemetry/otlp.js')
  const sink = createSpanSink(true, async () => otlpShipper(process.env), () => {})
  gc()
  const before = process.memoryUsage()
  let peakHeap = 0
  let peakRss = 0
  const t0 = performance.now()
  for (let i = 0; i < 10_000; i++) {
    const now = Date.now()
    sink.record(functionSpan('step-job-finished', { id: `ev-${i}`, type: 'dev.knative.apiserver.resource.update', source: 'bench', subject: `/apis/batch/v1/namespaces/ns/jobs/j${i}`, time: new Date(now).toISOString() }, 202, { advanced: [{ runId: `run-${i % 50}`, jobName: `wf-s${i % 7}-run-${i % 50}` }], apiCalls: 3 }, now, now + 1))
    // Events arrive over the network: let the event loop turn, as a function's would between requests.
    if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1))
    if (i % 500 === 0) {
      const m = process.memoryUsage()
      peakHeap = Math.max(peakHeap, m.heapUsed - before.heapUsed)
      peakRss = Math.max(peakRss, m.rss - before.rss)
    }
  }
  const elapsed = performance.now() - t0
  const t1 = performance.now()
  await sink.flush(5000)
  const finalFlush = performance.now() - t1
  gc()
  const after = process.memoryUsage()
  standIn.server.close()
  const mib = (b: number) => (b / 1024 / 1024).toFixed(1)
  return [reachable ? 'answers' : 'unreachable', mib(peakHeap), mib(peakRss), mib(after.heapUsed - before.heapUsed), String(sink.dropped()), String(standIn.requests()), (elapsed / 10_000 * 1000).toFixed(1), finalFlush.toFixed(0)]
}

await coldStart()
const memory = [await exporterMemory(true), await exporterMemory(false)]
printTable('exporter memory, 10,000 events each recording a span (MiB above the start)', ['collector', 'peak heap', 'peak rss', 'heap after gc', 'dropped', 'export requests', 'µs per event', 'last flush ms'], memory)
process.exit(0)
