// Step-to-step latency: from a step Job's Complete condition to the creation of the next step's
// Job, on the embedded local plane (local Job runner) and on a real kube-apiserver +
// kube-controller-manager (dev mode's code path: functions as their own ServiceAccounts, the
// real Job controller, the test node agent running the pods), measured in the same run.
// Two shapes on the executor's offline provider, after a warm-up chain; the resync ticks on its
// real minute: chains (each step depends on the one before) and fan-outs (one root step, then
// BENCH_FANOUT steps that each depend only on the root, all allowed to run at once). A join on
// all of them cannot be written: dependsOn holds at most 64 names (crds/workflows.purko.io.yaml).
// Run: node --import tsx bench/step-latency.ts
//   BENCH_SHAPES=chain,fanout  BENCH_CHAIN_STEPS=20  BENCH_CHAINS=2  BENCH_FANOUT=200  BENCH_FANOUTS=1
//   BENCH_PLANES=embedded,cluster  BENCH_JOB_CONCURRENCY=4 (step processes at once, both planes)
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '../local/jobs/step-process.js'
import { listAndWatch, type KubeHttp, type KubeObject } from '../local/knative/kube-http.js'
import type { KnativeEmulation } from '../local/knative/emulation.js'
import { startLocalPlane } from '../local/plane.js'
import { LABEL_STEP, LABEL_WORKFLOW } from '../shared/schemas/labels.js'
import { startControlPlane } from '../cluster/control-plane.js'
import { findKubeAssets } from '../cluster/kube-assets.js'
import { startClusterWorkflowPlane, testAgents } from '../test/cluster/workflow-plane.js'
import { percentile, printTable } from './stats.js'

const SHAPES = (process.env.BENCH_SHAPES ?? 'chain,fanout').split(',')
const STEPS = Number(process.env.BENCH_CHAIN_STEPS ?? 20)
const CHAINS = Number(process.env.BENCH_CHAINS ?? 2)
const FANOUT = Number(process.env.BENCH_FANOUT ?? 200)
const FANOUTS = Number(process.env.BENCH_FANOUTS ?? 1)
const PLANES = (process.env.BENCH_PLANES ?? 'embedded,cluster').split(',')
const JOB_CONCURRENCY = Number(process.env.BENCH_JOB_CONCURRENCY ?? 4)
/** A fan-out's steps finish only as fast as the step processes run: 2 cores, a few at a time. */
const RUN_DEADLINE_MS = 1_200_000
const NS = 'bench-latency'

type Condition = { type: string; status: string; lastTransitionTime?: string }
type JobObj = KubeObject & { status?: { conditions?: Condition[] } }

/** When this process first saw each thing happen (ms), and what the objects themselves say. */
interface Seen {
  jobAdded: Map<string, number>
  jobComplete: Map<string, number>
  /** The first terminal-looking condition: SuccessCriteriaMet (the Job controller's interim one) or Complete. */
  jobFinished: Map<string, number>
  /** The step-job-finished delivery of the first event showing the Job finished: start and end. */
  delivery: Map<string, { start: number; end: number; attempts: number }>
  podSucceeded: Map<string, number>
  objectComplete: Map<string, number>
  objectCreated: Map<string, number>
  /** `<workflow>/<step>` -> the Job's name, from its labels (a run above 200 steps keeps no finished stepStatuses). */
  jobOfStep: Map<string, string>
}

const isFinished = (job: JobObj) => (job.status?.conditions ?? []).some((c) => (c.type === 'Complete' || c.type === 'SuccessCriteriaMet') && c.status === 'True')

function watchJobsAndPods(kube: KubeHttp, signal: AbortSignal): { seen: Seen; ready: Promise<void> } {
  const seen: Seen = { jobAdded: new Map(), jobComplete: new Map(), jobFinished: new Map(), delivery: new Map(), podSucceeded: new Map(), objectComplete: new Map(), objectCreated: new Map(), jobOfStep: new Map() }
  const onJob = (job: JobObj) => {
    const name = String(job.metadata?.name)
    if (!seen.jobAdded.has(name)) {
      seen.jobAdded.set(name, Date.now())
      seen.objectCreated.set(name, Date.parse(String(job.metadata?.creationTimestamp)))
      const labels = job.metadata?.labels ?? {}
      if (labels[LABEL_WORKFLOW] && labels[LABEL_STEP]) seen.jobOfStep.set(`${labels[LABEL_WORKFLOW]}/${labels[LABEL_STEP]}`, name)
    }
    if (!seen.jobFinished.has(name) && isFinished(job)) seen.jobFinished.set(name, Date.now())
    const complete = job.status?.conditions?.find((c) => c.type === 'Complete' && c.status === 'True')
    if (complete && !seen.jobComplete.has(name)) {
      seen.jobComplete.set(name, Date.now())
      seen.objectComplete.set(name, Date.parse(complete.lastTransitionTime ?? ''))
    }
  }
  const onPod = (pod: KubeObject) => {
    const job = pod.metadata?.labels?.['job-name']
    if (job && (pod.status as { phase?: string } | undefined)?.phase === 'Succeeded' && !seen.podSucceeded.has(job)) seen.podSucceeded.set(job, Date.now())
  }
  let jobsReady!: () => void
  let podsReady!: () => void
  const ready = Promise.all([new Promise<void>((r) => { jobsReady = r }), new Promise<void>((r) => { podsReady = r })]).then(() => undefined)
  void listAndWatch(kube, `/apis/batch/v1/namespaces/${NS}/jobs`, '', {
    onList: (items) => { for (const i of items) onJob(i as JobObj) },
    onEvent: (ev) => { if (ev.type !== 'DELETED') onJob(ev.object as JobObj) },
    synced: jobsReady,
  }, signal)
  void listAndWatch(kube, `/api/v1/namespaces/${NS}/pods`, '', {
    onList: (items) => { for (const i of items) onPod(i) },
    onEvent: (ev) => { if (ev.type !== 'DELETED') onPod(ev.object) },
    synced: podsReady,
  }, signal)
  return { seen, ready }
}

const step = (name: string, dependsOn: string[]) => ({ name, agentRef: { name: 'writer' }, input: { task: name }, ...(dependsOn.length > 0 ? { dependsOn } : {}) })

const workflow = (name: string, steps: unknown[], parallelism = 1) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS }, spec: { parallelism, steps },
})

const chain = (name: string, steps: number) =>
  workflow(name, Array.from({ length: steps }, (_, i) => step(`s${i}`, i > 0 ? [`s${i - 1}`] : [])))

const fanout = (name: string, width: number) =>
  workflow(name, [step('root', []), ...Array.from({ length: width }, (_, i) => step(`f${i}`, ['root']))], width)

interface Figures {
  fromComplete: number[]
  fromFinished: number[]
  byTimestamps: number[]
  podToFinished: number[]
  finishedToDelivery: number[]
  functionMs: number[]
}

/** One fan-out: the root's Complete -> each child's Job created, in the order they were created. */
interface FanoutFigures { fromComplete: number[]; fromFinished: number[]; rootDeliveryMs?: number; rootAttempts?: number }

interface Watched { seen: Seen; stop(): void }

async function watchPlane(kube: KubeHttp, knative: KnativeEmulation): Promise<Watched> {
  const stop = new AbortController()
  const { seen, ready } = watchJobsAndPods(kube, stop.signal)
  knative.onDelivery((d) => {
    const job = d.event.data as JobObj | undefined
    const name = job?.metadata?.name
    if (d.trigger !== 'step-job-finished' || !name || !job || !isFinished(job) || seen.delivery.has(name)) return
    seen.delivery.set(name, { start: Date.now() - d.durationMs, end: Date.now(), attempts: d.attempts })
  })
  await ready
  return { seen, stop: () => stop.abort() }
}

/** Applies the Workflow and waits for it to succeed. */
async function runToEnd(kube: KubeHttp, manifest: { metadata: { name: string } }): Promise<void> {
  await kube.apply(manifest)
  const path = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/${manifest.metadata.name}`
  const deadline = Date.now() + RUN_DEADLINE_MS
  for (;;) {
    const wf = await kube.get(path) as (KubeObject & { status?: { phase?: string } }) | null
    const phase = wf?.status?.phase
    if (phase && phase !== 'Running' && phase !== 'Pending') {
      if (phase !== 'Succeeded') throw new Error(`${manifest.metadata.name} ended ${phase}`)
      return
    }
    if (Date.now() > deadline) throw new Error(`${manifest.metadata.name} did not finish: ${JSON.stringify(wf?.status).slice(0, 500)}`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

const jobOf = (seen: Seen, wf: string, stepName: string) => {
  const job = seen.jobOfStep.get(`${wf}/${stepName}`)
  if (!job) throw new Error(`no Job seen for ${wf}/${stepName}`)
  return job
}

async function runChains(kube: KubeHttp, { seen }: Watched): Promise<Figures> {
  const out: Figures = { fromComplete: [], fromFinished: [], byTimestamps: [], podToFinished: [], finishedToDelivery: [], functionMs: [] }
  for (let c = 1; c <= CHAINS; c++) {
    const name = `chain-${c}`
    await runToEnd(kube, chain(name, STEPS))
    for (let i = 0; i + 1 < STEPS; i++) {
      const [done, next] = [jobOf(seen, name, `s${i}`), jobOf(seen, name, `s${i + 1}`)]
      const added = seen.jobAdded.get(next) as number
      const finishedAt = seen.jobFinished.get(done) as number
      out.fromComplete.push(added - (seen.jobComplete.get(done) as number))
      out.fromFinished.push(added - finishedAt)
      out.byTimestamps.push(seen.objectCreated.get(next)! - seen.objectComplete.get(done)!)
      out.podToFinished.push(finishedAt - seen.podSucceeded.get(done)!)
      const delivery = seen.delivery.get(done)
      if (delivery) {
        out.finishedToDelivery.push(delivery.start - finishedAt)
        out.functionMs.push(delivery.end - delivery.start)
      }
    }
  }
  return out
}

async function runFanouts(kube: KubeHttp, { seen }: Watched): Promise<FanoutFigures[]> {
  const out: FanoutFigures[] = []
  for (let f = 1; f <= FANOUTS; f++) {
    const name = `fanout-${f}`
    await runToEnd(kube, fanout(name, FANOUT))
    const root = jobOf(seen, name, 'root')
    const added = Array.from({ length: FANOUT }, (_, i) => seen.jobAdded.get(jobOf(seen, name, `f${i}`)) as number).sort((a, b) => a - b)
    const delivery = seen.delivery.get(root)
    out.push({
      fromComplete: added.map((t) => t - (seen.jobComplete.get(root) as number)),
      fromFinished: added.map((t) => t - (seen.jobFinished.get(root) as number)),
      ...(delivery ? { rootDeliveryMs: delivery.end - delivery.start, rootAttempts: delivery.attempts } : {}),
    })
  }
  return out
}

interface PlaneFigures { plane: string; chains?: Figures; fanouts?: FanoutFigures[] }

/** The warm-up chain, then each chosen shape, on one plane. */
async function measurePlane(plane: string, kube: KubeHttp, knative: KnativeEmulation): Promise<PlaneFigures> {
  const watched = await watchPlane(kube, knative)
  try {
    // Each function loads the Kubernetes client and the planner on its first event
    // (bench/cold-start.ts measures that); the warm-up chain is not counted.
    await runToEnd(kube, chain('warm-up', 3))
    const out: PlaneFigures = { plane }
    if (SHAPES.includes('chain')) out.chains = await runChains(kube, watched)
    if (SHAPES.includes('fanout')) out.fanouts = await runFanouts(kube, watched)
    return out
  } finally {
    watched.stop()
  }
}

async function agentsAndNamespace(kube: KubeHttp): Promise<void> {
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  for (const a of testAgents(NS)) await kube.apply(a)
}

const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-latency-'))
const rows: PlaneFigures[] = []
const loadBefore = loadavg()
try {
  // Embedded first, alone: the real control plane is not started yet.
  if (PLANES.includes('embedded')) {
    const plane = await startLocalPlane({ root: REPO_ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs-embedded'), jobConcurrency: JOB_CONCURRENCY })
    try {
      await agentsAndNamespace(plane.kube)
      rows.push(await measurePlane('embedded API server, local Job runner', plane.kube, plane.knative))
    } finally {
      await plane.stop()
    }
  }
  const assets = findKubeAssets()
  if (!PLANES.includes('cluster')) {
    // not asked for
  } else if (!assets.available) {
    console.log(`No control-plane binaries, real server not measured: ${assets.reason}`)
  } else {
    const cp = await startControlPlane({ binDir: assets.dir, controllerManager: true })
    try {
      // Ping at the real minute: the resync must not be what advances the run.
      const w = await startClusterWorkflowPlane(cp, { pingIntervalMs: 60_000, concurrency: JOB_CONCURRENCY })
      try {
        await w.namespace(NS)
        rows.push(await measurePlane('real kube-apiserver + kube-controller-manager', cp.admin, w.plane.knative))
      } finally {
        await w.stop()
      }
    } finally {
      await cp.stop()
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

const p50p95 = (xs: number[]) => (xs.length === 0 ? ['-', '-'] : [percentile(xs, 50).toFixed(0), percentile(xs, 95).toFixed(0)])
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ')
const command = `BENCH_SHAPES=${SHAPES.join(',')} BENCH_CHAIN_STEPS=${STEPS} BENCH_CHAINS=${CHAINS} BENCH_FANOUT=${FANOUT} BENCH_FANOUTS=${FANOUTS} BENCH_PLANES=${PLANES.join(',')} BENCH_JOB_CONCURRENCY=${JOB_CONCURRENCY} node --import tsx bench/step-latency.ts`
console.log(`${command}\nNode ${process.version}, ${cpus().length} cores, load average (1, 5, 15 min) ${load(loadBefore)} at start, ${load(loadavg())} at end.\n`)

const chains = rows.filter((r) => r.chains)
if (chains.length > 0) {
  printTable(
    `Chain, step-to-step latency, ms: a step Job's Complete condition -> the next step's Job created, ${CHAINS} chains of ${STEPS} steps after a warm-up chain.
Times are when a watch saw each change. "From finished": from the first of SuccessCriteriaMet/Complete, which step-job-finished acts on.
"Timestamps": Complete's lastTransitionTime -> creationTimestamp, whole seconds on a real server.`,
    ['plane', 'n', 'p50', 'p95', 'from finished p50', 'p95', 'timestamps p50', 'p95'],
    chains.map(({ plane, chains: r }) => [plane, String(r!.fromComplete.length), ...p50p95(r!.fromComplete), ...p50p95(r!.fromFinished), ...p50p95(r!.byTimestamps)]),
  )
  printTable(
    'Chain, where it goes, ms: pod Succeeded -> Job finished (the Job controller, or the local runner); finished -> the step-job-finished delivery starts (source, Broker); the delivery (the function: log, outputs, next Job, status).',
    ['plane', 'pod->finished p50', 'p95', 'finished->delivery p50', 'p95', 'function p50', 'p95'],
    chains.map(({ plane, chains: r }) => [plane, ...p50p95(r!.podToFinished), ...p50p95(r!.finishedToDelivery), ...p50p95(r!.functionMs)]),
  )
}
const fanouts = rows.flatMap((r) => (r.fanouts ?? []).map((f, i) => ({ plane: r.plane, run: i + 1, f })))
if (fanouts.length > 0) {
  const ms = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(0))
  printTable(
    `Fan-out, ms: the root Job's Complete condition -> each of its ${FANOUT} dependants' Jobs created (parallelism ${FANOUT}), first, median, p95 and last of them.
"From finished": the same from SuccessCriteriaMet/Complete. "Root delivery": the step-job-finished delivery that acted on the root's end, all its attempts (the Trigger's timeout is 60 s), and how many.`,
    ['plane', 'run', 'first', 'median', 'p95', 'last', 'from finished first', 'last', 'root delivery', 'attempts'],
    fanouts.map(({ plane, run, f }) => [
      plane, String(run), ms(f.fromComplete[0]), ms(percentile(f.fromComplete, 50)), ms(percentile(f.fromComplete, 95)), ms(f.fromComplete.at(-1)),
      ms(f.fromFinished[0]), ms(f.fromFinished.at(-1)), ms(f.rootDeliveryMs), ms(f.rootAttempts),
    ]),
  )
}
