import type { KubeConfig } from '@kubernetes/client-node'
import type { Logger } from '../../shared/log.js'
import { KubeHttp, KubeHttpError, listAndWatch, type KubeObject } from '../knative/kube-http.js'
import { isFinished, terminalConditions, type JobEnd } from './job-status.js'
import { podNameFor } from './pod-name.js'
import { runPodContainer, type PodOutcome, type PodRun, type PodSpec } from './pod-process.js'
import { podConditions } from './pod-status.js'
import { localJobCommand, type LocalCommand } from './job-command.js'

/** Options of the local Job runner. */
export interface JobRunnerOptions {
  kubeConfig: KubeConfig
  /** Appends text to a pod's log (what `pods/log` serves). */
  appendPodLog: (namespace: string, pod: string, text: string) => void | Promise<void>
  log: Logger
  /** Step processes running at once; more Jobs wait with their pod Pending. Default 4. */
  concurrency?: number
  /** Divides ttlSecondsAfterFinished and the pod-failure backoff (tests use e.g. 1000). Default 1. */
  timeScale?: number
  /**
   * What a pod runs; default `localJobCommand`: the project's executor for step Jobs (the image
   * is ignored locally), a recipe Job's own `node` command, else nothing (the pod fails).
   */
  command?: (job: KubeObject) => LocalCommand
  /** Reported as the pod's `spec.nodeName`. */
  nodeName?: string
}

/** A running Job runner. */
export interface JobRunner {
  /** Resolves once the initial list is done and the watch runs. */
  ready: Promise<void>
  /** Step processes currently running. */
  running(): number
  /** Kills every step process and stops watching. */
  stop(): Promise<void>
}

interface Run {
  job: KubeObject
  ns: string
  name: string
  uid: string
  attempt: number
  failed: number
  succeeded: number
  started: boolean
  finished: boolean
  /** The deadline struck: the pod is being stopped and the Job failed. */
  ending?: boolean
  pod?: string
  proc?: PodRun
  timers: NodeJS.Timeout[]
}

type JobSpec = {
  backoffLimit?: number
  activeDeadlineSeconds?: number
  ttlSecondsAfterFinished?: number
  suspend?: boolean
  template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: PodSpec }
}

/**
 * Plays the Job controller and the kubelet for batch/v1 Jobs: one pod per attempt
 * (`<job>-<5 chars>`, labelled and owned like the real controller's), the container run as a
 * local process with its resolved env, stdout and stderr kept as the pod log, pod phases
 * Pending -> Running -> Succeeded/Failed, Job status and `Complete` / `Failed` conditions
 * (BackoffLimitExceeded, DeadlineExceeded), backoffLimit, activeDeadlineSeconds,
 * ttlSecondsAfterFinished and suspend. Only completions = parallelism = 1 is modelled.
 */
export function startJobRunner(opts: JobRunnerOptions): JobRunner {
  const kube = new KubeHttp(opts.kubeConfig)
  const log = opts.log
  const timeScale = opts.timeScale ?? 1
  const command = opts.command ?? localJobCommand
  const nodeName = opts.nodeName ?? 'kinetic-local'
  const runs = new Map<string, Run>()
  const controller = new AbortController()
  const slots = new Slots(opts.concurrency ?? 4)
  let markReady!: () => void
  const ready = new Promise<void>((r) => { markReady = r })

  const jobPath = (run: Run) => `/apis/batch/v1/namespaces/${run.ns}/jobs/${run.name}`
  const podPath = (run: Run, pod: string) => `/api/v1/namespaces/${run.ns}/pods/${pod}`
  const spec = (run: Run) => (run.job.spec ?? {}) as JobSpec
  const iso = () => new Date().toISOString()

  const write = async (what: string, run: Run, fn: () => Promise<unknown>) => {
    try {
      await fn()
    } catch (err) {
      if (controller.signal.aborted) return
      const gone = err instanceof KubeHttpError && err.status === 404
      log[gone ? 'debug' : 'warn']({ namespace: run.ns, name: run.name, err: String(err) }, `Could not ${what}`)
    }
  }
  const patchJobStatus = (run: Run, status: Record<string, unknown>) =>
    write('update Job status', run, () => kube.mergePatch(`${jobPath(run)}/status`, { status }))
  const patchPodStatus = (run: Run, pod: string, status: Record<string, unknown>) =>
    write('update pod status', run, () => kube.mergePatch(`${podPath(run, pod)}/status`, { status }))

  const finish = async (run: Run, end: JobEnd) => {
    if (run.finished) return
    run.finished = true
    for (const t of run.timers) clearTimeout(t)
    run.timers = []
    const now = iso()
    const status: Record<string, unknown> = {
      active: 0, ready: 0, succeeded: run.succeeded, failed: run.failed, conditions: terminalConditions(end, now),
    }
    if (end.outcome === 'Complete') status.completionTime = now
    await patchJobStatus(run, status)
    log.info({ namespace: run.ns, name: run.name, outcome: end.outcome, reason: end.outcome === 'Failed' ? end.reason : undefined }, `Job ${end.outcome === 'Complete' ? 'completed' : 'failed'}`)
    scheduleTtl(run, Date.now())
  }

  const scheduleTtl = (run: Run, finishedAtMs: number) => {
    const ttl = spec(run).ttlSecondsAfterFinished
    if (ttl === undefined || ttl === null) return
    const wait = Math.max(0, finishedAtMs + (ttl * 1000) / timeScale - Date.now())
    run.timers.push(setTimeout(() => {
      void write('delete the finished Job', run, async () => {
        await kube.request('DELETE', `${jobPath(run)}?propagationPolicy=Background`)
        log.info({ namespace: run.ns, name: run.name, ttlSecondsAfterFinished: ttl }, 'Deleted finished Job (ttlSecondsAfterFinished)')
      })
    }, wait))
  }

  const onDeadline = async (run: Run) => {
    if (run.finished) return
    // From here on the pod's own exit must not write status or count as another failure.
    run.ending = true
    const pod = run.pod
    const wasRunning = run.proc?.running() ?? false
    run.proc?.kill()
    if (pod) {
      await patchPodStatus(run, pod, {
        phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline',
        conditions: podConditions(false, 'PodFailed', iso()),
      })
      if (wasRunning) run.failed += 1
    }
    await finish(run, { outcome: 'Failed', reason: 'DeadlineExceeded' })
  }

  const createPod = async (run: Run, pod: string) => {
    const s = spec(run)
    const template = s.template ?? {}
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: pod,
        namespace: run.ns,
        labels: {
          ...(template.metadata?.labels ?? {}),
          'job-name': run.name,
          'controller-uid': run.uid,
          'batch.kubernetes.io/job-name': run.name,
          'batch.kubernetes.io/controller-uid': run.uid,
        },
        annotations: { ...(template.metadata?.annotations ?? {}) },
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: run.name, uid: run.uid, controller: true, blockOwnerDeletion: true }],
      },
      spec: { ...(template.spec ?? {}), nodeName },
    }
    try {
      await kube.request('POST', `/api/v1/namespaces/${run.ns}/pods`, body)
    } catch (err) {
      if (!(err instanceof KubeHttpError && err.status === 409)) throw err
    }
    await patchPodStatus(run, pod, { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: iso() }], qosClass: 'BestEffort' })
  }

  const attempt = async (run: Run): Promise<void> => {
    if (run.finished || controller.signal.aborted) return
    const pod = podNameFor(run.name, run.uid, run.attempt)
    run.attempt += 1
    run.pod = pod
    await write('create the pod', run, () => createPod(run, pod))
    await patchJobStatus(run, { active: 1, ready: 0, failed: run.failed, succeeded: run.succeeded })
    await slots.acquire()
    let result: PodOutcome
    try {
      if (run.finished || controller.signal.aborted) return
      const podSpec = spec(run).template?.spec ?? {}
      const podRun = runPodContainer({
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name: pod, namespace: run.ns, uid: run.uid,
          labels: spec(run).template?.metadata?.labels ?? {}, annotations: spec(run).template?.metadata?.annotations ?? {},
        },
        spec: { ...podSpec, nodeName },
      }, {
        kube, command: command(run.job), nodeName, placement: { ip: '127.0.0.1' }, log,
        onLog: (text) => { void Promise.resolve(opts.appendPodLog(run.ns, pod, text)).catch(() => undefined) },
        // A kubelet would keep such a pod Pending forever; locally it fails so the Job ends.
        configError: 'fail',
        abandoned: () => run.finished || run.ending === true || controller.signal.aborted,
        // The Job controller counts ready pods too (status.ready), another update a cluster sends.
        onRunning: () => patchJobStatus(run, { active: 1, ready: 1 }),
        pendingStatus: null,
      })
      run.proc = podRun
      result = await podRun.done
      run.proc = undefined
    } finally {
      slots.release()
    }
    if (result.outcome === 'Stopped' || run.finished) return
    const detail = result.detail
    const outcome = result.outcome
    if (outcome === 'Succeeded') {
      run.succeeded += 1
      await finish(run, { outcome: 'Complete' })
      return
    }
    run.failed += 1
    const limit = spec(run).backoffLimit ?? 6
    if (run.failed > limit) {
      await finish(run, { outcome: 'Failed', reason: 'BackoffLimitExceeded', message: `Job has reached the specified backoff limit (pod ${pod}: ${detail})` })
      return
    }
    await patchJobStatus(run, { active: 0, failed: run.failed })
    // The Job controller's pod-failure backoff: 10 s doubling, capped at 6 minutes.
    const wait = Math.min(10_000 * 2 ** (run.failed - 1), 360_000) / timeScale
    run.timers.push(setTimeout(() => { void attempt(run) }, wait))
  }

  const start = async (run: Run) => {
    run.started = true
    const s = spec(run)
    const status = (run.job.status ?? {}) as { startTime?: string }
    const startTime = status.startTime ?? iso()
    if (!status.startTime) await patchJobStatus(run, { startTime })
    if (typeof s.activeDeadlineSeconds === 'number') {
      const remaining = Date.parse(startTime) + s.activeDeadlineSeconds * 1000 - Date.now()
      run.timers.push(setTimeout(() => { void onDeadline(run) }, Math.max(0, remaining)))
    }
    await attempt(run)
  }

  const observe = (obj: KubeObject) => {
    const uid = obj.metadata?.uid
    if (!uid) return
    const existing = runs.get(uid)
    if (existing) {
      existing.job = obj
      if (!existing.started && !existing.finished && !spec(existing).suspend) void start(existing)
      return
    }
    const run: Run = {
      job: obj, ns: String(obj.metadata?.namespace ?? 'default'), name: String(obj.metadata?.name ?? ''), uid,
      attempt: 0, failed: 0, succeeded: 0, started: false, finished: false, timers: [],
    }
    runs.set(uid, run)
    const status = obj.status as { conditions?: Array<{ type?: string; status?: string; lastTransitionTime?: string }> } | undefined
    if (isFinished(status)) {
      run.finished = true
      const at = status?.conditions?.find((c) => c.type === 'Complete' || c.type === 'Failed')?.lastTransitionTime
      scheduleTtl(run, at ? Date.parse(at) : Date.now())
      return
    }
    if (spec(run).suspend) return
    void start(run)
  }

  const forget = (uid: string) => {
    const run = runs.get(uid)
    if (!run) return
    run.finished = true
    for (const t of run.timers) clearTimeout(t)
    run.proc?.kill()
    runs.delete(uid)
  }

  const loop = listAndWatch(kube, '/apis/batch/v1/jobs', '', {
    onList(items) {
      const seen = new Set<string>()
      for (const item of items) {
        if (item.metadata?.uid) seen.add(item.metadata.uid)
        observe({ apiVersion: 'batch/v1', kind: 'Job', ...item })
      }
      for (const uid of [...runs.keys()]) if (!seen.has(uid)) forget(uid)
    },
    onEvent(ev) {
      if (ev.type === 'DELETED') forget(String(ev.object.metadata?.uid))
      else observe(ev.object)
    },
    synced: markReady,
    onError: (err) => log.warn({ err: String(err) }, 'Job watch failed; retrying'),
  }, controller.signal)

  return {
    ready,
    running: () => [...runs.values()].filter((r) => r.proc?.running()).length,
    async stop() {
      controller.abort()
      const exits: Promise<unknown>[] = []
      for (const run of runs.values()) {
        for (const t of run.timers) clearTimeout(t)
        if (run.proc) {
          exits.push(run.proc.done)
          run.proc.kill(500)
        }
      }
      slots.drain()
      await Promise.all([loop, ...exits])
    },
  }
}

/** A counting semaphore. */
class Slots {
  private active = 0
  private readonly waiters: Array<() => void> = []
  constructor(private readonly size: number) {}
  acquire(): Promise<void> {
    if (this.active < this.size) {
      this.active += 1
      return Promise.resolve()
    }
    return new Promise((resolve) => this.waiters.push(() => { this.active += 1; resolve() }))
  }
  release(): void {
    this.active -= 1
    this.waiters.shift()?.()
  }
  drain(): void {
    while (this.waiters.length > 0) this.waiters.shift()?.()
  }
}
