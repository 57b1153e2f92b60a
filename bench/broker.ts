// Broker benchmark: events per second through the emulated Broker (local/knative/broker.ts)
// to real HTTP subscribers on 127.0.0.1, and the latency from ingress until every matching
// Trigger's subscriber answered. Three Triggers cover both filter dialects; each event matches
// two of them, as an ApiServerSource event matches its function's Trigger and a catch-all.
// Run: node --import tsx bench/broker.ts   (BENCH_BROKER_EVENTS=2000 by default)
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Broker, type DeliveryRecord } from '../local/knative/broker.js'
import { startBrokerIngress } from '../local/knative/broker-ingress.js'
import { toBinary, type KEvent } from '../local/knative/cloud-event.js'
import type { DeliverySpec, Destination } from '../local/knative/delivery.js'
import type { Manifest, TriggerSpec } from '../local/knative/manifests.js'
import { silentLogger } from '../shared/log.js'

const EVENTS = Number(process.env.BENCH_BROKER_EVENTS ?? 2000)
const CONCURRENCY = 32

interface Subscriber { url: string; received: number; close(): Promise<void> }

/** A subscriber like a function: reads the body, answers 202 with no body (no reply event). */
async function startSubscriber(failFirstAttempt = false): Promise<Subscriber> {
  const seen = new Set<string>()
  const sub = { url: '', received: 0, close: async () => {} }
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      sub.received += 1
      const id = String(req.headers['ce-id'])
      // 503 on an event's first attempt only: every event costs exactly one retry.
      if (failFirstAttempt && !seen.has(id)) {
        seen.add(id)
        res.writeHead(503).end()
        return
      }
      res.writeHead(202).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  sub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  sub.close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  return sub
}

function trigger(name: string, spec: Omit<TriggerSpec, 'broker' | 'subscriber'>, delivery: DeliverySpec): Manifest<TriggerSpec> {
  return {
    apiVersion: 'eventing.knative.dev/v1', kind: 'Trigger', file: `${name}.yaml`, raw: {},
    metadata: { name, namespace: 'kinetic-system' },
    spec: { broker: 'default', subscriber: { ref: { kind: 'Service', name } }, delivery, ...spec },
  }
}

function eventOf(i: number): KEvent {
  const source = i % 2 === 0 ? 'workflows' : 'jobs'
  return {
    specversion: '1.0', id: `bench-${i}`, type: 'dev.knative.apiserver.resource.update', source: 'https://10.96.0.1:443',
    subject: `/apis/purko.io/v1alpha1/namespaces/ai-agents/${source}/w${i % 50}`, datacontenttype: 'application/json',
    extensions: { kind: source === 'jobs' ? 'Job' : 'Workflow', kineticsource: source },
    data: { metadata: { name: `w${i % 50}`, namespace: 'ai-agents', resourceVersion: String(i) }, status: { phase: 'Running' } },
  }
}

interface Row { label: string; events: number; deliveries: number; retries: number; seconds: number; p50: number; p99: number }

type Send = (event: KEvent) => Promise<number>

/** Sends `count` events with `concurrency` in flight; latency is ingress until the Broker answered. */
async function run(label: string, send: Send, broker: Broker, count: number, concurrency: number): Promise<Row> {
  const before = { ...broker.stats }
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const event = eventOf(next++)
      const t = performance.now()
      const status = await send(event)
      latencies.push(performance.now() - t)
      if (status !== 202) throw new Error(`${label}: ingress answered ${status} for ${event.id}`)
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    label, events: count, seconds,
    deliveries: broker.stats.delivered - before.delivered,
    retries: broker.stats.retried - before.retried,
    p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
  }
}

/** A Broker whose three Triggers deliver to their own subscriber each; `flaky` fails first attempts. */
async function setup(flaky: boolean) {
  // A tiny backoff so the retry row shows the cost of the extra round trip, not of the wait.
  const delivery: DeliverySpec = { retry: 3, backoffPolicy: 'exponential', backoffDelay: 'PT0.001S' }
  const subs: Record<string, Subscriber> = {
    'workflow-changed': await startSubscriber(),
    'step-job-finished': await startSubscriber(),
    'audit-all': await startSubscriber(flaky),
  }
  const triggers = [
    trigger('workflow-changed', { filters: [{ exact: { type: 'dev.knative.apiserver.resource.update', kineticsource: 'workflows' } }] }, delivery),
    trigger('step-job-finished', { filter: { attributes: { type: 'dev.knative.apiserver.resource.update', kineticsource: 'jobs' } } }, delivery),
    trigger('audit-all', { filters: [{ prefix: { type: 'dev.knative.apiserver.' } }] }, delivery),
  ]
  const resolve = (dest: Destination) => (dest.ref ? subs[dest.ref.name]?.url ?? null : null)
  const broker = new Broker('default', 'kinetic-system', undefined, triggers, resolve, silentLogger)
  const dropped: DeliveryRecord[] = []
  broker.feed.on('delivery', (r) => { if (r.outcome !== 'delivered') dropped.push(r) })
  const close = async () => {
    broker.close()
    await Promise.all(Object.values(subs).map((s) => s.close()))
    if (dropped.length > 0) throw new Error(`${dropped.length} deliveries were not delivered`)
  }
  return { broker, close }
}

const rows: Row[] = []
{
  const { broker, close } = await setup(false)
  const inProcess: Send = (e) => broker.ingress(e)
  // Warm the JIT and the HTTP connection pools so the first row is not measured cold.
  await run('warm-up', inProcess, broker, 500, CONCURRENCY)
  rows.push(await run('in-process ingress, 1 in flight', inProcess, broker, Math.min(EVENTS, 1000), 1))
  rows.push(await run(`in-process ingress, ${CONCURRENCY} in flight`, inProcess, broker, EVENTS, CONCURRENCY))
  // The HTTP ingress functions post their own events to (K_SINK), binary mode over keep-alive fetch.
  const ingress = await startBrokerIngress(new Map([['kinetic-system/default', broker]]))
  const overHttp: Send = async (e) => {
    const { headers, body } = toBinary(e)
    const res = await fetch(`${ingress.url}/kinetic-system/default`, { method: 'POST', headers, body: body as string })
    await res.arrayBuffer()
    return res.status
  }
  rows.push(await run(`HTTP ingress, ${CONCURRENCY} in flight`, overHttp, broker, EVENTS, CONCURRENCY))
  await ingress.close()
  await close()
}
{
  const { broker, close } = await setup(true)
  rows.push(await run(`in-process, ${CONCURRENCY} in flight, 1 of 3 subscribers 503 once`, (e) => broker.ingress(e), broker, EVENTS, CONCURRENCY))
  await close()
}

console.log(`Emulated Broker: 3 Triggers (exact, legacy attributes, prefix), each event matches 2; local HTTP subscribers answering 202 (Node ${process.version})`)
const head = ['ingress', 'events', 'deliveries', 'retries', 'events/s', 'deliveries/s', 'p50 ms', 'p99 ms']
const table = rows.map((r) => [r.label, String(r.events), String(r.deliveries), String(r.retries),
  (r.events / r.seconds).toFixed(0), (r.deliveries / r.seconds).toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2)])
const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]!.length)))
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
console.log(line(head))
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
for (const t of table) console.log(line(t))
console.log('Latency: from ingress until every matching Trigger\'s subscriber answered (the Broker waits for all, like the InMemoryChannel).')
