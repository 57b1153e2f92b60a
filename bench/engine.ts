// Engine benchmark: the function's own cost (time inside Kubernetes API calls subtracted) of one step-finished event as the Workflow grows (10 / 1,000 / 10,000
// steps), Kubernetes API calls per event (port calls: bench/api-calls.ts counts HTTP requests), and the largest object written. Runs the real
// step-job-finished function in-process against EmbeddedKube (the real client over HTTP to the
// embedded API server, in this process); the time spent in each API call (client, HTTP and
// server) is taken out, so the figures are the function's own cost.
// Usage: npm run bench -- engine   (or: node --import tsx bench/engine.ts; BENCH_EVENTS=2000, BENCH_MEMO=off)
import { createApp as stepJobFinished } from '../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../functions/workflow-changed/index.js'
import { createEngineMemo } from '../shared/engine/memo.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../test/support/deliver.js'
import { EmbeddedKube } from '../test/support/embedded-kube.js'
import { testDeps } from '../test/support/engine-deps.js'
import { agentOf, workflowOf } from '../test/support/objects.js'
import type { Kube } from '../shared/kube/port.js'

/** Wraps a Kube so the time spent inside API calls can be taken out of the figures. */
function timed(kube: EmbeddedKube): { kube: Kube; spent: () => number } {
  let spentUs = 0
  const proxy = new Proxy(kube, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      return async (...args: unknown[]) => {
        const start = process.hrtime.bigint()
        try {
          return await value.apply(target, args)
        } finally {
          spentUs += Number(process.hrtime.bigint() - start) / 1000
        }
      }
    },
  })
  return { kube: proxy, spent: () => spentUs }
}

interface Row { steps: number; events: number; medianUs: number; p95Us: number; callsPerEvent: number; largestBytes: number; largestWhat: string; statusBytes: number }

async function measure(steps: number, maxEvents: number): Promise<Row> {
  // A chain: each finished step starts exactly one more, the common case for long pipelines.
  const wf = workflowOf('bench', Array.from({ length: steps }, (_, i) => ({
    name: `s${i}`, ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
  })))
  const kube = new EmbeddedKube({ workflows: [wf], agents: [agentOf('helper')] })
  const clock = { now: new Date('2026-01-01T00:00:00Z') }
  await deliver(workflowChanged(testDeps(kube, clock)), RESOURCE_ADD, kube.workflow('team', 'bench'))
  const api = timed(kube)
  // A warm instance, as deployed: it remembers what it last wrote (shared/engine/memo.ts);
  // BENCH_MEMO=off measures one that reads everything fresh.
  const memo = process.env.BENCH_MEMO === 'off' ? {} : { memo: createEngineMemo() }
  const app = stepJobFinished({ ...testDeps(api.kube, clock), ...memo })
  const samples: number[] = []
  const calls: number[] = []
  for (let i = 0; i < Math.min(steps, maxEvents); i++) {
    clock.now = new Date(clock.now.getTime() + 1000)
    const running = kube.createdJobs[kube.createdJobs.length - 1]!
    const job = kube.finishJob(running, 'Succeeded', `OUTPUT:{"response":"step ${i} finished","items":${i % 7},"ok":true}`)
    const before = kube.calls
    const inApi = api.spent()
    const start = process.hrtime.bigint()
    const res = await deliver(app, RESOURCE_UPDATE, job)
    samples.push(Number(process.hrtime.bigint() - start) / 1000 - (api.spent() - inApi))
    calls.push(kube.calls - before)
    if (res.status !== 202) throw new Error(`event ${i} answered ${res.status}`)
  }
  samples.sort((a, b) => a - b)
  const status = kube.workflow('team', 'bench').status
  return {
    steps,
    events: samples.length,
    medianUs: Math.round(samples[Math.floor(samples.length / 2)]!),
    p95Us: Math.round(samples[Math.floor(samples.length * 0.95)]!),
    callsPerEvent: calls.reduce((a, b) => a + b, 0) / calls.length,
    largestBytes: kube.largestWrite.bytes,
    largestWhat: kube.largestWrite.what.replace(/-[0-9a-z]{8}-[0-9a-f]{4}.*/, ''),
    statusBytes: Buffer.byteLength(JSON.stringify(status)),
  }
}

const maxEvents = Number(process.env.BENCH_EVENTS ?? 2000)
// Warm the JIT first so the small workflow is not measured cold.
await measure(50, 50)
const rows: Row[] = []
for (const steps of [10, 1000, 10000]) rows.push(await measure(steps, maxEvents))
console.log(`step-finished event cost (chain workflows, ${maxEvents} events at most per size; Node ${process.version})`)
console.log('steps  | events | median µs | p95 µs | API calls/event | largest object written | status bytes')
console.log('-------|--------|-----------|--------|-----------------|------------------------|-------------')
for (const r of rows) {
  console.log(`${String(r.steps).padEnd(6)} | ${String(r.events).padEnd(6)} | ${String(r.medianUs).padEnd(9)} | ${String(r.p95Us).padEnd(6)} | ${r.callsPerEvent.toFixed(1).padEnd(15)} | ${`${r.largestBytes} B (${r.largestWhat})`.padEnd(22)} | ${r.statusBytes}`)
}
const [small, , large] = rows
console.log(`growth: ${(large!.medianUs / small!.medianUs).toFixed(1)}x cost for ${large!.steps / small!.steps}x steps (linear would be ${large!.steps / small!.steps}x)`)
