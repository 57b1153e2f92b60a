// Idle cost: Kubernetes API calls per hour that Kinetic makes with nothing happening, with 0 and
// with BENCH_IDLE_RUNS unfinished runs (Running Workflows whose step Jobs are still active).
// Every PingSource in knative/sources/ is delivered, as the Broker would, to the function its
// Trigger names (createApp with the deps its main.ts builds: the real KubeClient, here against the
// embedded API server, and the warm instance's memo), a few times, the clock moved on a ping's interval each; the calls the embedded server answers are counted by purpose and scaled to one
// hour by each PingSource's schedule plus that of the alarm its ticks left (docs/architecture/idle.md). Printed
// next to purko's polling model for the same load.
// Run: node --import tsx bench/idle-cost.ts   (BENCH_IDLE_RUNS=1000, BENCH_IDLE_TICKS=3)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { createApp as resyncTick } from '../functions/resync-tick/index.js'
import type { ApiServer, KubeObject } from '../local/apiserver/index.js'
import { readRuntimeConfig } from '../shared/config.js'
import { noKineticEvents } from '../shared/engine/kinetic-events.js'
import { KubeClient } from '../shared/kube/client.js'
import { silentLogger } from '../shared/log.js'
import { realEngineDeps } from '../shared/engine/deps.js'
import { realRecipeDeps } from '../shared/recipe/deps.js'
import { deliver, PING } from '../test/support/deliver.js'
import { printTable } from './stats.js'
import { installCrds, startCountedApiServer, yamlObjects, type CountedApiServer } from './support/counted-apiserver.js'
import { perHour } from './idle-cost/cron.js'

// The functions' own JSON logs would bury the tables.
process.env.LOG_LEVEL = 'silent'
const RUNS = Number(process.env.BENCH_IDLE_RUNS ?? 1000)
const TICKS = Number(process.env.BENCH_IDLE_TICKS ?? 3)
const NS = 'ai-agents'
/** purko's reconcile loop requeues every running Workflow after 5 s (issue 14). */
const PURKO_RECONCILES_PER_RUN_HOUR = 3600 / 5

const root = new URL('../', import.meta.url)
const yamlDocs = yamlObjects

interface Ping { source: string; schedule: string; kineticsource: string; data: unknown; fn: string }

/** Every PingSource and the function its Trigger (filtered on the source's kineticsource) calls. */
function pingSources(): Ping[] {
  const triggers = yamlDocs('knative/triggers/').filter((o) => o.kind === 'Trigger')
  return yamlDocs('knative/sources/').filter((o) => o.kind === 'PingSource').map((o) => {
    const spec = o.spec as { schedule: string; data?: string; ceOverrides?: { extensions?: Record<string, string> } }
    const kineticsource = spec.ceOverrides?.extensions?.kineticsource ?? ''
    const trigger = triggers.find((t) => {
      const spec = t.spec as { filter?: { attributes?: Record<string, string> }; filters?: Array<{ exact?: Record<string, string> }> }
      return spec.filter?.attributes?.kineticsource === kineticsource || (spec.filters ?? []).some((f) => f.exact?.kineticsource === kineticsource)
    })
    const fn = (trigger?.spec as { subscriber?: { ref?: { name?: string } } } | undefined)?.subscriber?.ref?.name
    if (!fn) throw new Error(`no Trigger for PingSource ${o.metadata.name} (kineticsource=${kineticsource})`)
    return { source: String(o.metadata.name), schedule: spec.schedule, kineticsource, data: spec.data ? JSON.parse(spec.data) : {}, fn }
  })
}

async function install(api: CountedApiServer): Promise<void> {
  await installCrds(api)
  await api.call('POST', `/apis/purko.io/v1alpha1/namespaces/${NS}/agents`, { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer' }, spec: { model: { provider: 'offline', name: 'scripted' } } })
  await api.call('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent-writer-sa' } })
}

/** Two-step runs whose first step's Job is created (by the engine itself) and then left active. */
async function unfinishedRuns(server: ApiServer, n: number, app: Hono): Promise<void> {
  const call = async (path: string, body: unknown, method: string) => {
    const res = await fetch(`${server.url}${path}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${(await res.text()).slice(0, 200)}`)
    return (await res.json()) as KubeObject
  }
  const inBatches = async (count: number, each: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < count; i += 25) await Promise.all(Array.from({ length: Math.min(25, count - i) }, (_, j) => each(i + j)))
  }
  await inBatches(n, (i) => call(`/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`, {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: `run-${i}` },
    spec: { steps: [{ name: 'draft', agentRef: { name: 'writer' } }, { name: 'polish', agentRef: { name: 'writer' }, dependsOn: ['draft'] }] },
  }, 'POST'))
  // The first tick starts every run: it is the setup, not idle, and is not counted.
  if ((await deliver(app, PING, {})).status !== 202) throw new Error('the starting resync tick failed')
  const jobs = ((await (await fetch(`${server.url}/apis/batch/v1/namespaces/${NS}/jobs`)).json()) as { items: KubeObject[] }).items
  if (jobs.length !== n) throw new Error(`expected ${n} step Jobs after the first tick, found ${jobs.length}`)
  // As the Job controller reports a Job whose pod is running.
  const startTime = new Date().toISOString()
  await inBatches(jobs.length, (i) => {
    const job = jobs[i]!
    return call(`/apis/batch/v1/namespaces/${NS}/jobs/${job.metadata.name}/status`, { ...job, status: { active: 1, ready: 1, startTime } }, 'PUT')
  })
}

/** Per PingSource: calls by purpose per tick, wall time per tick, and the alarm its ticks left (its schedule, if any). */
interface Measured { perTick: Map<string, Map<string, number>>; tickMs: Map<string, number>; ticks: number; alarms: Map<string, string | undefined> }

/** Delivers each ping TICKS times and counts the API calls of all but the first of each (which may settle state). */
async function measurePings(pings: Ping[], apps: Map<string, PingedApp>, counted: CountedApiServer): Promise<Measured> {
  const perTick = new Map<string, Map<string, number>>()
  const tickMs = new Map<string, number>()
  const alarms = new Map<string, string | undefined>()
  for (const ping of pings) {
    const { app, clock } = apps.get(ping.fn)!
    const alarmOf = async () => {
      const res = await fetch(`${counted.server.url}/apis/sources.knative.dev/v1/namespaces/kinetic-system/pingsources/${ping.source}-alarm`)
      return res.ok ? ((await res.json()) as { spec: { schedule: string } }).spec.schedule : undefined
    }
    const settle = await deliver(app, PING, ping.data, { kineticsource: ping.kineticsource })
    if (settle.status !== 202) throw new Error(`${ping.fn} answered ${settle.status} to ${ping.source}`)
    // The ticks come as often as they would: every minute while the alarm says so, else hourly.
    const armed = await alarmOf()
    const interval = 3_600_000 / Math.max(perHour(ping.schedule), armed ? perHour(armed) : 0)
    counted.counts.clear()
    counted.counting.on = true
    const started = performance.now()
    for (let t = 1; t < TICKS; t++) {
      clock.offsetMs += interval
      const res = await deliver(app, PING, ping.data, { kineticsource: ping.kineticsource })
      if (res.status !== 202) throw new Error(`${ping.fn} answered ${res.status} to ${ping.source}`)
    }
    // Let the last request's log line through the sink before reading the count.
    tickMs.set(ping.source, (performance.now() - started) / (TICKS - 1))
    await new Promise((r) => setImmediate(r))
    counted.counting.on = false
    perTick.set(ping.source, new Map([...counted.counts].map(([k, v]) => [k, v / (TICKS - 1)])))
    alarms.set(ping.source, await alarmOf())
  }
  return { perTick, tickMs, ticks: TICKS - 1, alarms }
}

/** A function's app with the deps its main.ts builds, on a clock the benchmark moves a ping interval ahead per tick. */
interface PingedApp { app: Hono; clock: { offsetMs: number } }

async function appsFor(pings: Ping[], server: ApiServer, scratch: string): Promise<Map<string, PingedApp>> {
  // The deps' client loads $KUBECONFIG on its first call, which comes after this.
  const kubeconfig = join(scratch, `kubeconfig-${server.url.split(':').at(-1)}`)
  writeFileSync(kubeconfig, server.kubeconfig())
  process.env.KUBECONFIG = kubeconfig
  const apps = new Map<string, PingedApp>()
  for (const fn of new Set(pings.map((p) => p.fn))) {
    const recipe = readFileSync(new URL(`functions/${fn}/main.ts`, root), 'utf8').includes('realRecipeDeps')
    const deps = recipe ? realRecipeDeps(fn) : realEngineDeps(fn)
    const clock = { offsetMs: 0 }
    // Ticks here come back to back; the shifted clock lets what a warm instance remembers expire as it would between real ones.
    deps.now = () => new Date(Date.now() + clock.offsetMs)
    const mod = (await import(`../functions/${fn}/index.js`)) as { createApp: (d: typeof deps) => Hono }
    apps.set(fn, { app: mod.createApp(deps), clock })
  }
  return apps
}

async function scenario(runs: number, pings: Ping[]): Promise<Measured> {
  const counted = await startCountedApiServer()
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-idle-'))
  try {
    await install(counted)
    const apps = await appsFor(pings, counted.server, scratch)
    if (runs > 0) {
      await unfinishedRuns(counted.server, runs, resyncTick({
        kube: new KubeClient(counted.server.kubeConfigObject()), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events: noKineticEvents,
      }))
    }
    return await measurePings(pings, apps, counted)
  } finally {
    await counted.server.close()
    rmSync(scratch, { recursive: true, force: true })
  }
}

const pings = pingSources()
const loadBefore = loadavg()
const started = Date.now()
const idle = await scenario(0, pings)
const busy = await scenario(RUNS, pings)
const seconds = ((Date.now() - started) / 1000).toFixed(0)
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ')

console.log(`BENCH_IDLE_RUNS=${RUNS} BENCH_IDLE_TICKS=${TICKS} node --import tsx bench/idle-cost.ts`)
console.log(`Node ${process.version}, ${cpus().length} cores, load average (1, 5, 15 min) ${load(loadBefore)} at start, ${load(loadavg())} at end, ${seconds} s.\n`)

const round = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1))
/** Ticks per hour: the heartbeat's, plus those of the alarm the ticks left (shared/ticks/alarm-plan.ts). */
const ticksPerHour = (m: Measured, ping: Ping) => perHour(ping.schedule) + (m.alarms.get(ping.source) ? perHour(m.alarms.get(ping.source)!) : 0)
const hourly = (m: Measured, source: string) => {
  const ping = pings.find((p) => p.source === source)!
  const calls = [...(m.perTick.get(source) ?? new Map<string, number>()).values()].reduce((a, b) => a + b, 0)
  return { perTick: calls, perHour: calls * ticksPerHour(m, ping) }
}
const total = (m: Measured) => pings.reduce((sum, p) => sum + hourly(m, p.source).perHour, 0)

printTable(
  `Idle API calls per PingSource: calls per tick (mean of ${TICKS - 1} ticks after a first one), and per hour at its schedule; ms/tick: the delivery's wall time, the function and the server sharing this process. "${RUNS} runs": ${RUNS} Running Workflows, each with its first step's Job active.`,
  ['PingSource', 'heartbeat', 'function', '0 runs: alarm', 'ticks/h', 'calls/tick', 'calls/h', 'ms/tick', `${RUNS} runs: alarm`, 'ticks/h', 'calls/tick', 'calls/h', 'ms/tick'],
  [
    ...pings.map((p) => {
      const [a, b] = [hourly(idle, p.source), hourly(busy, p.source)]
      const ms = (m: Measured) => (m.tickMs.get(p.source) ?? 0).toFixed(0)
      const alarm = (m: Measured) => m.alarms.get(p.source) ?? 'none'
      return [p.source, p.schedule, p.fn, alarm(idle), String(ticksPerHour(idle, p)), round(a.perTick), round(a.perHour), ms(idle),
        alarm(busy), String(ticksPerHour(busy, p)), round(b.perTick), round(b.perHour), ms(busy)]
    }),
    ['all', '', '', '', '', '', round(total(idle)), '', '', '', '', round(total(busy)), ''],
  ],
)

const purposes = (m: Measured, source: string) => [...(m.perTick.get(source) ?? new Map<string, number>())].sort((a, b) => b[1] - a[1])
printTable(
  `What the calls are, per tick, by purpose (method and path of each request the embedded API server handled).`,
  ['PingSource', 'runs', 'purpose', 'calls/tick', 'per run', 'calls/h'],
  pings.flatMap((p) => [[0, idle], [RUNS, busy]].flatMap(([n, m]) => purposes(m as Measured, p.source).map(([purpose, calls]) => [
    p.source, String(n), purpose, round(calls), n === 0 ? '-' : (calls / (n as number)).toFixed(2), round(calls * ticksPerHour(m as Measured, p)),
  ]))),
)

const resyncPerRunTick = (hourly(busy, 'resync').perTick - hourly(idle, 'resync').perTick) / RUNS
printTable(
  `Next to purko's polling model: one reconcile per running Workflow every 5 s (${PURKO_RECONCILES_PER_RUN_HOUR} per run per hour), always on.
purko reads from an informer cache, so a reconcile is not an API read there; the last columns say what the same reconciles would cost if each were one API read,
or as many as Kinetic's resync spends per unfinished run (${resyncPerRunTick.toFixed(3)}: its calls with ${RUNS} runs less those with 0, over ${RUNS}).`,
  ['runs', 'Kinetic calls/h (all PingSources)', 'purko reconciles/h', 'purko as 1 read each', `purko at ${resyncPerRunTick.toFixed(3)} reads each`],
  [[0, idle], [RUNS, busy]].map(([n, m]) => [
    String(n), round(total(m as Measured)),
    String((n as number) * PURKO_RECONCILES_PER_RUN_HOUR), String((n as number) * PURKO_RECONCILES_PER_RUN_HOUR), round((n as number) * PURKO_RECONCILES_PER_RUN_HOUR * resyncPerRunTick),
  ]),
)
console.log(`Both scenarios hold one Agent ("writer", on the offline model): Ready after the first tick, so its recheck alarm goes by the second.
Ticks per hour: the heartbeat's (once an hour) plus the alarm's that the ticks left (every minute while a run is unfinished; docs/architecture/idle.md).
This benchmark counts API calls, not pods: bench/knative-idle.ts measures the pods on a real Knative.`)
