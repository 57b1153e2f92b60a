// Scale: many concurrent Workflows of a chain of steps through the embedded local plane (one
// process per function, the Knative emulation, the local Job runner, steps on the executor's
// offline provider). Prints total wall time, events/s and CPU of each function process, API
// requests/s at the embedded server, CPU of this process (API server + emulation + Job runner)
// and of the step processes, and where it saturates: which process is near a full core, or
// which queue grows (step Jobs waiting for a runner slot, deliveries in flight).
// Run: node --import tsx bench/scale.ts   (BENCH_WORKFLOWS=50, BENCH_STEPS=10,
//      BENCH_JOB_CONCURRENCY=4 step processes at once, BENCH_TIMEOUT_S=1200, BENCH_EXECUTOR=stub)
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { pino } from 'pino'
import { parseAllDocuments } from 'yaml'
import { listAndWatch, type KubeObject } from '../local/knative/kube-http.js'
import { startLocalPlane } from '../local/plane.js'
import { chainWorkflow, NS } from './support/event-corpus.js'
import { processCpuSeconds } from './support/function-process.js'
import { printTable } from './stats.js'
import { REQUIRE_BANNER } from '../scripts/script-cli.mjs'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 50)
const STEPS = Number(process.env.BENCH_STEPS ?? 10)
const JOB_CONCURRENCY = Number(process.env.BENCH_JOB_CONCURRENCY ?? 4)
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 1200) * 1000
const SAMPLE_MS = 1000
const JOB_WATCHES = (parseAllDocuments(readFileSync(join(ROOT, 'knative', 'sources', 'jobs.yaml'), 'utf8'))[0]!.toJSON() as { spec: { resources: unknown[] } }).spec.resources.length

type Condition = { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }
type StepStatus = { name?: string; phase?: string; error?: string; retryCount?: number }
type Phased = KubeObject & { status?: { phase?: string; conditions?: Condition[]; stepStatuses?: StepStatus[]; message?: string } }

/** Children this process has waited for (the step processes), user + system seconds. */
function reapedChildrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[13]) + Number(fields[14])) / 100
}

const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-scale-'))
// The embedded API server logs each request at debug level: counted here, never serialized.
let apiRequests = 0
const warnings = createWriteStream(join(scratch, 'plane.log'))
const log = pino({
  level: 'debug',
  hooks: {
    logMethod(args, method, level) {
      if (level < 40) {
        if (args.some((a) => a === 'Handled request')) apiRequests++
        return
      }
      method.apply(this, args)
    },
  },
}, warnings)

// Steps run the executor bundled as the image runs it, not under tsx: thousands of steps would
// otherwise measure tsx's start-up (local/jobs/step-process.ts, KINETIC_LOCAL_EXECUTOR). With
// BENCH_EXECUTOR=stub a step is a script that prints its OUTPUT line at once, so what saturates
// is Kinetic, not the two cores the executors share with it here.
const STUB = process.env.BENCH_EXECUTOR === 'stub'
const executor = join(scratch, 'executor', STUB ? 'stub.cjs' : 'main.js')
if (STUB) {
  mkdirSync(dirname(executor), { recursive: true })
  writeFileSync(executor, [
    "const line = 'OUTPUT:' + JSON.stringify({ response: 'done: ' + process.env.STEP_NAME, step: process.env.STEP_NAME })",
    'console.log(line)',
    "try { require('node:fs').writeFileSync(process.env.KINETIC_TERMINATION_MESSAGE_PATH, line) } catch {}",
  ].join('\n'))
} else {
  await build({ entryPoints: [join(ROOT, 'executor', 'main.ts')], outfile: executor, bundle: true, platform: 'node', format: 'esm', target: 'node20', minify: true, keepNames: true, banner: { js: REQUIRE_BANNER }, logLevel: 'warning' })
}
process.env.KINETIC_LOCAL_EXECUTOR = executor
const startedPlane = performance.now()
const plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), log, jobConcurrency: JOB_CONCURRENCY })
const planeSeconds = (performance.now() - startedPlane) / 1000
const byUrl = new Map([...plane.functions.values()].map((f) => [f.url, f.name]))

interface PerFunction { deliveries: number; busyMs: number; failed: number; cpu: number[] }
const perFunction = new Map<string, PerFunction>([...plane.functions.keys()].map((n) => [n, { deliveries: 0, busyMs: 0, failed: 0, cpu: [] }]))
// How late step-job-finished hears of a finished step: from the Job's Complete (or Failed)
// condition to the start of the delivery. Events wait on their watch while earlier ones are
// handled, so this is where a saturated pipeline shows.
const finishedJobLagMs: number[] = []
plane.knative.onDelivery((d) => {
  const name = byUrl.get(d.subscriber.replace(/\/$/, '')) ?? ''
  const f = perFunction.get(name)
  if (!f) return
  if (name === 'step-job-finished') {
    const end = ((d.event.data as Phased | undefined)?.status?.conditions ?? []).find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')
    if (end?.lastTransitionTime) finishedJobLagMs.push(Date.now() - d.durationMs - Date.parse(end.lastTransitionTime))
  }
  f.deliveries++
  f.busyMs += d.durationMs
  if (d.outcome !== 'delivered') f.failed++
})

// Our own watches: what has happened, from the API server's point of view.
const stop = new AbortController()
const phases = new Map<string, string>()
const jobs = { created: new Set<string>(), finished: new Set<string>() }
// Why a run failed, tallied by its conditions' reasons and its failed steps' messages.
const failures = new Map<string, number>()
const onWorkflow = (w: Phased) => {
  const name = String(w.metadata?.name)
  if (!name.startsWith('scale-')) return
  const phase = w.status?.phase ?? 'Pending'
  if (phase === 'Failed' && phases.get(name) !== 'Failed') {
    const conditions = (w.status?.conditions ?? []).filter((c) => c.status === 'True' || c.type === 'Ready').map((c) => `${c.type}=${c.status}/${c.reason ?? ''}`)
    const generic = (text: string) => text.replace(/scale-\d+(-\S+)?/g, 'scale-N').replace(/\d{2,}/g, 'N').slice(0, 200)
    const steps = (w.status?.stepStatuses ?? []).filter((st) => st.phase === 'Failed').map((st) => `${st.name} after ${st.retryCount ?? 0} retries: ${generic(st.error ?? '')}`.replace(/^s\d+ /, 'step '))
    const key = `${conditions.join(', ')} | ${generic(w.status?.message ?? '')} | ${steps.length} failed step(s): ${[...new Set(steps)].join('; ')}`
    failures.set(key, (failures.get(key) ?? 0) + 1)
  }
  phases.set(name, phase)
}
const onJob = (j: Phased) => {
  const name = String(j.metadata?.name)
  if (!name.startsWith('scale-')) return
  jobs.created.add(name)
  if ((j.status?.conditions ?? []).some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) jobs.finished.add(name)
}
const synced = [deferred(), deferred()]
void listAndWatch(plane.kube, `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`, '', {
  onList: (items) => { for (const i of items) onWorkflow(i as Phased) },
  onEvent: (ev) => { if (ev.type !== 'DELETED') onWorkflow(ev.object as Phased) },
  synced: synced[0]!.resolve,
}, stop.signal)
void listAndWatch(plane.kube, `/apis/batch/v1/namespaces/${NS}/jobs`, '', {
  onList: (items) => { for (const i of items) onJob(i as Phased) },
  onEvent: (ev) => { if (ev.type !== 'DELETED') onJob(ev.object as Phased) },
  synced: synced[1]!.resolve,
}, stop.signal)
await Promise.all(synced.map((s) => s.promise))

for (const doc of ['00-namespace.yaml', '10-agents.yaml']) {
  for (const d of parseAllDocuments(readFileSync(join(ROOT, 'examples', 'local', doc), 'utf8'))) await plane.kube.apply(d.toJSON() as KubeObject)
}

interface Sample { t: number; cpu: Map<string, number>; self: number; steps: number; queued: number; running: number; inFlight: number; done: number; api: number }
const samples: Sample[] = []
// Deliveries the Brokers have started and not finished. Events not yet sent wait on their
// source's watch instead (each watch sends one at a time), which the lag above measures.
const backlog = () => plane.knative.stats().inFlight
const sample = (t0: number): Sample => {
  const cpu = new Map<string, number>()
  for (const f of plane.functions.values()) if (f.pid) cpu.set(f.name, processCpuSeconds(f.pid))
  const self = process.cpuUsage()
  const done = [...phases.values()].filter((p) => p === 'Succeeded' || p === 'Failed').length
  const running = plane.jobs?.running() ?? 0
  return {
    t: (performance.now() - t0) / 1000, cpu, self: (self.user + self.system) / 1e6, steps: reapedChildrenCpuSeconds(),
    queued: jobs.created.size - jobs.finished.size - running, running, inFlight: backlog(), done, api: apiRequests,
  }
}

const t0 = performance.now()
const apiAtStart = apiRequests
samples.push(sample(t0))
const timer = setInterval(() => {
  const s = sample(t0)
  samples.push(s)
  if (samples.length % 10 === 0) process.stderr.write(`${s.t.toFixed(0)} s: ${s.done}/${WORKFLOWS} done, ${jobs.created.size} Jobs created, ${s.queued} waiting for a runner slot, ${s.running} running, ${s.inFlight} deliveries in flight\n`)
}, SAMPLE_MS)

// Apply all Workflows as fast as the API server takes them, 16 at once.
let next = 0
await Promise.all(Array.from({ length: 16 }, async () => {
  while (next < WORKFLOWS) {
    const i = next++
    await plane.kube.apply(chainWorkflow(`scale-${i}`, STEPS))
  }
}))
const appliedSeconds = (performance.now() - t0) / 1000

let timedOut = false
for (;;) {
  const done = [...phases.values()].filter((p) => p === 'Succeeded' || p === 'Failed').length
  if (done >= WORKFLOWS) break
  if (performance.now() - t0 > TIMEOUT_MS) { timedOut = true; break }
  await new Promise((r) => setTimeout(r, 200))
}
clearInterval(timer)
const end = sample(t0)
samples.push(end)
const wall = end.t
const counts = new Map<string, number>()
for (const p of phases.values()) counts.set(p, (counts.get(p) ?? 0) + 1)
stop.abort()
await plane.stop()
rmSync(scratch, { recursive: true, force: true })

const first = samples[0]!
/** Mean CPU % of a core over the run, and the highest over any 5 s window. */
const cpuOf = (read: (s: Sample) => number): { mean: number; peak: number } => {
  let peak = 0
  for (let i = 5; i < samples.length; i++) {
    const a = samples[i - 5]!
    const b = samples[i]!
    peak = Math.max(peak, (100 * (read(b) - read(a))) / (b.t - a.t))
  }
  return { mean: (100 * (read(end) - read(first))) / wall, peak }
}
const pct = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)}%` : '-')

const rows = [...perFunction.entries()].filter(([, f]) => f.deliveries > 0).sort((a, b) => b[1].deliveries - a[1].deliveries).map(([name, f]) => {
  const cpu = cpuOf((s) => s.cpu.get(name) ?? Number.NaN)
  return { name, f, cpu }
})
const self = cpuOf((s) => s.self)
const steps = cpuOf((s) => s.steps)

const finished = (counts.get('Succeeded') ?? 0) + (counts.get('Failed') ?? 0)
console.log(`${timedOut ? 'TIMED OUT: ' : ''}${finished} of ${WORKFLOWS} Workflows of ${STEPS} steps finished (${[...counts.entries()].map(([p, n]) => `${n} ${p}`).join(', ')}) in ${wall.toFixed(1)} s wall; all applied after ${appliedSeconds.toFixed(1)} s; plane started in ${planeSeconds.toFixed(1)} s (Node ${process.version}, ${JOB_CONCURRENCY} step processes at once, ${STUB ? 'stub steps' : 'the bundled executor'}).`)
console.log(`${jobs.created.size} step Jobs created, ${jobs.finished.size} finished: ${(jobs.finished.size / wall).toFixed(2)} steps/s. API requests at the embedded server: ${apiRequests - apiAtStart} (${((apiRequests - apiAtStart) / wall).toFixed(0)}/s, ${((apiRequests - apiAtStart) / Math.max(1, jobs.finished.size)).toFixed(1)} per step, the benchmark's own two watches included).`)
console.log('')
printTable(
  'Per function process: deliveries, events/s over the wall time, time inside the function (sum of delivery durations / wall: above 100% means concurrent deliveries), CPU % of one core (mean over the run; highest 5 s window).',
  ['function', 'deliveries', 'events/s', 'not 2xx', 'in-function', 'CPU mean', 'CPU peak 5 s'],
  [
    ...rows.map(({ name, f, cpu }) => [name, String(f.deliveries), (f.deliveries / wall).toFixed(1), String(f.failed), pct((100 * f.busyMs) / 1000 / wall), pct(cpu.mean), pct(cpu.peak)]),
    ['(this process: API server, Knative emulation, Job runner)', '-', '-', '-', '-', pct(self.mean), pct(self.peak)],
    ['(step processes, all, reaped)', '-', '-', '-', '-', pct(steps.mean), pct(steps.peak)],
  ],
)
if (failures.size > 0) {
  console.log('Failed runs, by reason (conditions | failed steps):')
  for (const [key, n] of [...failures.entries()].sort((a, b) => b[1] - a[1])) console.log(`  ${n} x ${key}`)
}
const maxQueued = Math.max(...samples.map((s) => s.queued))
const maxEvents = Math.max(...samples.map((s) => s.inFlight))
const busiest = [...rows.map(({ name, cpu }) => ({ name, cpu: cpu.mean })), { name: 'this process (API server, emulation, Job runner)', cpu: self.mean }, { name: 'step processes', cpu: steps.mean }].sort((a, b) => b.cpu - a.cpu)
const lag = [...finishedJobLagMs].sort((a, b) => a - b)
const at = (q: number) => ((lag[Math.min(lag.length - 1, Math.floor(q * lag.length))] ?? Number.NaN) / 1000).toFixed(1)
console.log(`Queues: step Jobs waiting for a runner slot peaked at ${maxQueued} (runner slots: ${JOB_CONCURRENCY}); Broker deliveries in flight peaked at ${maxEvents}.`)
console.log(`Finished step Job -> step-job-finished delivery: p50 ${at(0.5)} s, p95 ${at(0.95)} s, max ${at(1)} s over ${lag.length} deliveries (the Jobs source's ${JOB_WATCHES} watches each send one event at a time).`)
console.log(`Busiest: ${busiest.slice(0, 3).map((b) => `${b.name} ${pct(b.cpu)}`).join(', ')}; all together ${pct(busiest.reduce((a, b) => a + (Number.isFinite(b.cpu) ? b.cpu : 0), 0))} of the machine's ${100 * cpus().length}% (${cpus().length} cores; load from other processes on the machine is not counted).`)

interface Deferred { promise: Promise<void>; resolve: () => void }
function deferred(): Deferred {
  let resolve!: () => void
  const promise = new Promise<void>((r) => { resolve = r })
  return { promise, resolve }
}
