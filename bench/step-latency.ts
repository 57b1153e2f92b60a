// Step-to-step latency: from a step Job's Complete condition to the creation of the next step's
// Job, on the embedded local plane (local Job runner) and on a real kube-apiserver +
// kube-controller-manager (dev mode's code path: functions as their own ServiceAccounts, the
// real Job controller, the test node agent running the pods), measured in the same run.
// Chains of steps on the executor's offline provider, after a warm-up chain; the resync ticks on
// its real minute.
// Run: node --import tsx bench/step-latency.ts   (BENCH_CHAIN_STEPS=10, BENCH_CHAINS=2)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '../local/jobs/step-process.js'
import { listAndWatch, type KubeHttp, type KubeObject } from '../local/knative/kube-http.js'
import type { KnativeEmulation } from '../local/knative/emulation.js'
import { startLocalPlane } from '../local/plane.js'
import { startControlPlane } from '../test/cluster/control-plane.js'
import { findKubeAssets } from '../test/cluster/kube-assets.js'
import { startClusterWorkflowPlane, testAgents } from '../test/cluster/workflow-plane.js'
import { percentile, printTable } from './stats.js'

const STEPS = Number(process.env.BENCH_CHAIN_STEPS ?? 10)
const CHAINS = Number(process.env.BENCH_CHAINS ?? 2)
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
  delivery: Map<string, { start: number; end: number }>
  podSucceeded: Map<string, number>
  objectComplete: Map<string, number>
  objectCreated: Map<string, number>
}

const isFinished = (job: JobObj) => (job.status?.conditions ?? []).some((c) => (c.type === 'Complete' || c.type === 'SuccessCriteriaMet') && c.status === 'True')

function watchJobsAndPods(kube: KubeHttp, signal: AbortSignal): { seen: Seen; ready: Promise<void> } {
  const seen: Seen = { jobAdded: new Map(), jobComplete: new Map(), jobFinished: new Map(), delivery: new Map(), podSucceeded: new Map(), objectComplete: new Map(), objectCreated: new Map() }
  const onJob = (job: JobObj) => {
    const name = String(job.metadata?.name)
    if (!seen.jobAdded.has(name)) {
      seen.jobAdded.set(name, Date.now())
      seen.objectCreated.set(name, Date.parse(String(job.metadata?.creationTimestamp)))
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

const chain = (name: string, steps = STEPS) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS },
  spec: {
    steps: Array.from({ length: steps }, (_, i) => ({
      name: `s${i}`, agentRef: { name: 'writer' }, input: { task: `step ${i}` }, ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
    })),
  },
})

interface Figures {
  fromComplete: number[]
  fromFinished: number[]
  byTimestamps: number[]
  podToFinished: number[]
  finishedToDelivery: number[]
  functionMs: number[]
}

async function runChains(kube: KubeHttp, knative: KnativeEmulation): Promise<Figures> {
  const stop = new AbortController()
  const { seen, ready } = watchJobsAndPods(kube, stop.signal)
  knative.onDelivery((d) => {
    const job = d.event.data as JobObj | undefined
    const name = job?.metadata?.name
    if (d.trigger !== 'step-job-finished' || !name || !job || !isFinished(job) || seen.delivery.has(name)) return
    seen.delivery.set(name, { start: Date.now() - d.durationMs, end: Date.now() })
  })
  await ready
  const out: Figures = { fromComplete: [], fromFinished: [], byTimestamps: [], podToFinished: [], finishedToDelivery: [], functionMs: [] }
  try {
    // Chain 0 warms up: each function loads the Kubernetes client and the planner on its first
    // event (bench/cold-start.ts measures that); it is not counted.
    for (let c = 0; c <= CHAINS; c++) {
      const name = `chain-${c}`
      await kube.apply(chain(name, c === 0 ? 3 : STEPS))
      const path = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/${name}`
      const deadline = Date.now() + 300_000
      let wf: (KubeObject & { status?: { phase?: string; stepStatuses?: Array<{ name: string; jobName?: string }> } }) | null = null
      for (;;) {
        wf = await kube.get(path)
        if (wf?.status?.phase && wf.status.phase !== 'Running' && wf.status.phase !== 'Pending') break
        if (Date.now() > deadline) throw new Error(`${name} did not finish: ${JSON.stringify(wf?.status)}`)
        await new Promise((r) => setTimeout(r, 250))
      }
      if (wf?.status?.phase !== 'Succeeded') throw new Error(`${name} ended ${wf?.status?.phase}`)
      const jobs = Array.from({ length: c === 0 ? 3 : STEPS }, (_, i) => wf?.status?.stepStatuses?.find((s) => s.name === `s${i}`)?.jobName as string)
      if (c === 0) continue
      for (let i = 0; i + 1 < jobs.length; i++) {
        const [done, next] = [jobs[i] as string, jobs[i + 1] as string]
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
  } finally {
    stop.abort()
  }
  return out
}

async function agentsAndNamespace(kube: KubeHttp): Promise<void> {
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  for (const a of testAgents(NS)) await kube.apply(a)
}

const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-latency-'))
const rows: Array<{ plane: string; r: Figures }> = []
try {
  // Embedded first, alone: the real control plane is not started yet.
  {
    const plane = await startLocalPlane({ root: REPO_ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs-embedded') })
    try {
      await agentsAndNamespace(plane.kube)
      const r = await runChains(plane.kube, plane.knative)
      rows.push({ plane: 'embedded API server, local Job runner', r })
    } finally {
      await plane.stop()
    }
  }
  const assets = findKubeAssets()
  if (!assets.available) {
    console.log(`No control-plane binaries, real server not measured: ${assets.reason}`)
  } else {
    const cp = await startControlPlane({ binDir: assets.dir, controllerManager: true })
    try {
      // Ping at the real minute: the resync must not be what advances the chain.
      const w = await startClusterWorkflowPlane(cp, { pingIntervalMs: 60_000 })
      try {
        await w.namespace(NS)
        const r = await runChains(cp.admin, w.plane.knative)
        rows.push({ plane: 'real kube-apiserver + kube-controller-manager', r })
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

printTable(
  `Step-to-step latency, ms: a step Job's Complete condition -> the next step's Job created, ${CHAINS} chains of ${STEPS} steps after a warm-up chain (Node ${process.version}).
Times are when a watch saw each change. "From finished": from the first of SuccessCriteriaMet/Complete, which step-job-finished acts on.
"Timestamps": Complete's lastTransitionTime -> creationTimestamp, whole seconds on a real server.`,
  ['plane', 'n', 'p50', 'p95', 'from finished p50', 'p95', 'timestamps p50', 'p95'],
  rows.map(({ plane, r }) => [plane, String(r.fromComplete.length), ...p50p95(r.fromComplete), ...p50p95(r.fromFinished), ...p50p95(r.byTimestamps)]),
)
printTable(
  'Where it goes, ms: pod Succeeded -> Job finished (the Job controller, or the local runner); finished -> the step-job-finished delivery starts (source, Broker); the delivery (the function: log, outputs, next Job, status).',
  ['plane', 'pod->finished p50', 'p95', 'finished->delivery p50', 'p95', 'function p50', 'p95'],
  rows.map(({ plane, r }) => [plane, ...p50p95(r.podToFinished), ...p50p95(r.finishedToDelivery), ...p50p95(r.functionMs)]),
)
