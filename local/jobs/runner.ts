import type { KubeConfig } from '@kubernetes/client-node'
import type { Logger } from '../../shared/log.js'
import { KubeHttp, KubeHttpError, type KubeObject } from '../knative/kube-http.js'
import { resolveContainerEnv, type EnvFromSource, type EnvVar } from './container-env.js'
import { isFinished, terminalConditions, type JobEnd } from './job-status.js'
import { podNameFor } from './pod-name.js'
import { executorCommand, spawnStep, type StepCommand, type StepProcess } from './step-process.js'

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
  /** What a pod runs; default the project's executor (the image is ignored locally). */
  command?: (job: KubeObject) => StepCommand
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
  pod?: string
  proc?: StepProcess
  timers: NodeJS.Timeout[]
}

type JobSpec = {
  backoffLimit?: number
  activeDeadlineSeconds?: number
  ttlSecondsAfterFinished?: number
  suspend?: boolean
  template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: PodSpec }
}
type PodSpec = { containers?: Array<{ name: string; image?: string; env?: EnvVar[]; envFrom?: EnvFromSource[] }>; serviceAccountName?: string; [k: string]: unknown }

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
  const command = opts.command ?? (() => executorCommand())
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
    const pod = run.pod
    run.proc?.kill()
    if (pod) {
      await patchPodStatus(run, pod, {
        phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline',
        conditions: podConditions(false, 'PodFailed'),
      })
      if (run.proc) run.failed += 1
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
    let outcome: 'Succeeded' | 'Failed' | 'Stopped'
    let detail = ''
    try {
      if (run.finished || controller.signal.aborted) return
      const s = spec(run)
      const podSpec = s.template?.spec ?? {}
      const container = podSpec.containers?.[0]
      if (!container) {
        outcome = 'Failed'
        detail = 'the pod template has no container'
        await patchPodStatus(run, pod, { phase: 'Failed', reason: 'Invalid', message: detail })
      } else {
        if ((podSpec.containers?.length ?? 0) > 1) log.warn({ namespace: run.ns, name: run.name }, 'Only the first container runs locally')
        const labels = (s.template?.metadata?.labels ?? {})
        const resolved = await resolveContainerEnv(container, {
          secret: async (n) => decodeData(await kube.get(`/api/v1/namespaces/${run.ns}/secrets/${encodeURIComponent(n)}`), true),
          configMap: async (n) => decodeData(await kube.get(`/api/v1/namespaces/${run.ns}/configmaps/${encodeURIComponent(n)}`), false),
        }, {
          name: pod, namespace: run.ns, uid: run.uid, labels, annotations: s.template?.metadata?.annotations ?? {},
          nodeName, serviceAccountName: podSpec.serviceAccountName ?? 'default',
        })
        if ('error' in resolved) {
          outcome = 'Failed'
          detail = `${resolved.error.reason}: ${resolved.error.message}`
          // A kubelet would keep such a pod Pending forever; locally it fails so the Job ends.
          await patchPodStatus(run, pod, {
            phase: 'Failed', reason: resolved.error.reason, message: resolved.error.message,
            conditions: podConditions(false, 'ContainersNotReady'),
            containerStatuses: [{ name: container.name, ready: false, restartCount: 0, image: container.image ?? '', imageID: '', state: { waiting: resolved.error } }],
          })
          log.warn({ namespace: run.ns, name: run.name, pod, reason: resolved.error.reason, message: resolved.error.message }, 'Step container cannot start')
        } else {
          const startedAt = iso()
          const env = { ...resolved.env, HOSTNAME: pod }
          const proc = spawnStep(command(run.job), env, (text) => { void Promise.resolve(opts.appendPodLog(run.ns, pod, text)).catch(() => undefined) })
          run.proc = proc
          await patchPodStatus(run, pod, {
            phase: 'Running', startTime: startedAt, podIP: '127.0.0.1', hostIP: '127.0.0.1',
            conditions: podConditions(true, ''),
            containerStatuses: [{ name: container.name, ready: true, started: true, restartCount: 0, image: container.image ?? '', imageID: '', state: { running: { startedAt } } }],
          })
          // The Job controller counts ready pods too (status.ready), another update a cluster sends.
          if (!run.finished) await patchJobStatus(run, { active: 1, ready: 1 })
          const { code, signal } = await proc.exited
          run.proc = undefined
          if (run.finished || controller.signal.aborted) {
            outcome = 'Stopped'
          } else {
            const exitCode = code ?? (signal === 'SIGKILL' ? 137 : 143)
            outcome = exitCode === 0 ? 'Succeeded' : 'Failed'
            detail = `exit code ${exitCode}`
            await patchPodStatus(run, pod, {
              phase: outcome,
              conditions: podConditions(false, outcome === 'Succeeded' ? 'PodCompleted' : 'PodFailed'),
              containerStatuses: [{
                name: container.name, ready: false, started: false, restartCount: 0, image: container.image ?? '', imageID: '',
                state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: iso() } },
              }],
            })
          }
        }
      }
    } finally {
      slots.release()
    }
    if (outcome === 'Stopped' || run.finished) return
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

  const loop = (async () => {
    let rv: string | undefined
    while (!controller.signal.aborted) {
      try {
        if (rv === undefined) {
          const list = await kube.request<{ metadata?: { resourceVersion?: string }; items?: KubeObject[] }>('GET', '/apis/batch/v1/jobs')
          const seen = new Set<string>()
          for (const item of list.items ?? []) {
            if (item.metadata?.uid) seen.add(item.metadata.uid)
            observe({ apiVersion: 'batch/v1', kind: 'Job', ...item })
          }
          for (const uid of [...runs.keys()]) if (!seen.has(uid)) forget(uid)
          rv = list.metadata?.resourceVersion ?? '0'
        }
        markReady()
        let gone = false
        await kube.watch(`/apis/batch/v1/jobs?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, async (ev) => {
          if (ev.type === 'ERROR') {
            if ((ev.object as { code?: number }).code === 410) gone = true
            return
          }
          if (ev.object.metadata?.resourceVersion) rv = ev.object.metadata.resourceVersion
          if (ev.type === 'BOOKMARK') return
          if (ev.type === 'DELETED') forget(String(ev.object.metadata?.uid))
          else observe(ev.object)
        }, controller.signal)
        if (gone) rv = undefined
      } catch (err) {
        if (controller.signal.aborted) return
        if (err instanceof KubeHttpError && err.status === 410) {
          rv = undefined
          continue
        }
        log.warn({ err: String(err) }, 'Job watch failed; retrying')
        await new Promise((r) => setTimeout(r, 500))
      }
    }
  })()

  return {
    ready,
    running: () => [...runs.values()].filter((r) => r.proc !== undefined).length,
    async stop() {
      controller.abort()
      const exits: Promise<unknown>[] = []
      for (const run of runs.values()) {
        for (const t of run.timers) clearTimeout(t)
        if (run.proc) {
          exits.push(run.proc.exited)
          run.proc.kill(500)
        }
      }
      slots.drain()
      await Promise.all([loop, ...exits])
    },
  }
}

function podConditions(ready: boolean, reason: string): Array<Record<string, string>> {
  const now = new Date().toISOString()
  const readyCond = (type: string) => ({ type, status: ready ? 'True' : 'False', lastTransitionTime: now, ...(reason ? { reason } : {}) })
  return [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
    { type: 'Initialized', status: 'True', lastTransitionTime: now },
    readyCond('ContainersReady'),
    readyCond('Ready'),
  ]
}

function decodeData(obj: KubeObject | null, base64: boolean): Record<string, string> | null {
  if (obj === null) return null
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) out[k] = base64 ? Buffer.from(v, 'base64').toString('utf8') : v
  // A Secret's stringData is folded into data by a real API server; accept it if it was kept.
  for (const [k, v] of Object.entries((obj.stringData ?? {}) as Record<string, string>)) out[k] = v
  return out
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
