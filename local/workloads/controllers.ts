/**
 * The workload controller emulation of the embedded plane (README "Workload controllers";
 * issue 10 item 9): plays kube-controller-manager's Deployment, ReplicaSet, StatefulSet,
 * DaemonSet and CronJob controllers, and the kubelet for their pods, on the embedded API
 * server's store, so what spec §6 (shared/recipe/plan/readiness.ts) reads is what a cluster
 * shows. Jobs (the CronJob's too) are left to the local Job runner (local/jobs/). This file
 * queues and dispatches; each kind's controller is its own `*-controller.ts`.
 *
 * Pods of these kinds get no process: there is no container runtime for long-running images,
 * so the emulated kubelet marks each pod Running and Ready once it is created (containerID
 * `emulated://<container>`). Everything else goes through the store, with its validation,
 * resourceVersions, watch events and ownerReference cascade.
 */
import type { Logger } from '../../shared/log.js'
import { silentLogger } from '../../shared/log.js'
import type { ObjectStore } from '../apiserver/object-store.js'
import type { KubeObject, TypeRef, WatchHandle } from '../apiserver/index.js'
import { reconcileCronJob } from './cronjob-controller.js'
import { reconcileDaemonSet } from './daemonset-controller.js'
import { reconcileDeployment, reconcileReplicaSet } from './deployment-controller.js'
import { reconcileStatefulSet } from './statefulset-controller.js'
import {
  controllerOf, CRONJOB, DAEMONSET, DEPLOYMENT, JOB, KINDS, namespaceOf, POD, REPLICASET, STATEFULSET, workloadContext, type EmulatedNode,
} from './workload-context.js'

/** Options of the workload controllers. */
export interface WorkloadControllerOptions {
  store: ObjectStore
  log?: Logger
  /** The clock of CronJob schedules and status times. Default `new Date()`. */
  now?: () => Date
  /**
   * The nodes DaemonSets run a pod on (matched against the template's `nodeSelector`).
   * Default one node, `kinetic-local` (the Job runner's `nodeName`).
   */
  nodes?: EmulatedNode[]
  /** Mark created pods Running and Ready (default true); false leaves them Pending. */
  startPods?: boolean
  /** How often CronJob schedules are checked; 0 = only by `tick()`. Default 1000 ms. */
  cronIntervalMs?: number
  /** The IP pods and nodes report. Default 127.0.0.1. */
  podIp?: string
}

/** The running controllers. */
export interface WorkloadControllers {
  /** Resolves when every object that exists has been reconciled and nothing is queued. */
  settle(): Promise<void>
  /** Checks every CronJob's schedule against the clock now (the interval calls it too). */
  tick(): void
  stop(): void
}

/**
 * Starts the controllers on `store`: watches the workload kinds, their pods and the
 * CronJobs' Jobs, and reconciles each changed object (and its controller owner) in order.
 */
export function startWorkloadControllers(opts: WorkloadControllerOptions): WorkloadControllers {
  const store = opts.store
  const log = opts.log ?? silentLogger
  const context = workloadContext({
    store,
    log,
    now: opts.now ?? (() => new Date()),
    nodes: opts.nodes ?? [{ name: 'kinetic-local' }],
    startPods: opts.startPods ?? true,
    podIp: opts.podIp ?? '127.0.0.1',
  })
  const queue = new Set<string>()
  let scheduled = false
  let draining = false
  let stopped = false

  const enqueue = (kind: string, namespace: string, name: string) => {
    if (stopped || !KINDS[kind]) return
    queue.add(`${kind}/${namespace}/${name}`)
    if (!scheduled) {
      scheduled = true
      setImmediate(drain)
    }
  }
  const drain = () => {
    scheduled = false
    draining = true
    try {
      // Reconciles write, and their watch events enqueue again; those run on the next turn.
      const keys = [...queue]
      queue.clear()
      for (const key of keys) {
        const [kind, namespace, name] = key.split('/') as [string, string, string]
        try {
          reconcile(kind, namespace, name)
        } catch (err) {
          if (stopped) return
          log.warn({ kind, namespace, name, err: String(err) }, 'Workload reconcile failed; retrying')
          setTimeout(() => enqueue(kind, namespace, name), 1000).unref()
        }
      }
    } finally {
      draining = false
    }
  }

  const reconcile = (kind: string, namespace: string, name: string) => {
    const obj = store.get(KINDS[kind] as TypeRef, namespace, name)
    if (!obj || obj.metadata.deletionTimestamp) return
    if (kind === 'Deployment') reconcileDeployment(context, obj)
    else if (kind === 'ReplicaSet') reconcileReplicaSet(context, obj)
    else if (kind === 'StatefulSet') reconcileStatefulSet(context, obj)
    else if (kind === 'DaemonSet') reconcileDaemonSet(context, obj)
    else if (kind === 'CronJob') reconcileCronJob(context, obj)
  }

  // Each change reconciles the object, and the object's controller owner.
  const watches: WatchHandle[] = []
  const watchKind = (type: TypeRef, onObject: (o: KubeObject, deleted: boolean) => void) => {
    watches.push(store.watch(type, {}, (ev) => {
      if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') onObject(ev.object, ev.type === 'DELETED')
    }))
  }
  const toOwner = (o: KubeObject) => {
    const owner = controllerOf(o)
    if (owner) enqueue(owner.kind, namespaceOf(o), owner.name)
  }
  for (const type of [DEPLOYMENT, STATEFULSET, DAEMONSET, CRONJOB]) watchKind(type, (o) => enqueue(o.kind, namespaceOf(o), String(o.metadata.name)))
  watchKind(REPLICASET, (o, deleted) => { if (!deleted) enqueue('ReplicaSet', namespaceOf(o), String(o.metadata.name)); toOwner(o) })
  watchKind(POD, (o) => toOwner(o))
  watchKind(JOB, (o) => toOwner(o))

  const tick = () => {
    for (const cj of store.list(CRONJOB).items) enqueue('CronJob', namespaceOf(cj), String(cj.metadata.name))
  }
  const interval = (opts.cronIntervalMs ?? 1000) > 0 ? setInterval(tick, opts.cronIntervalMs ?? 1000) : undefined
  interval?.unref()

  return {
    async settle() {
      // Watch events arrive as microtasks, reconciles run on setImmediate: idle = two quiet turns.
      let quiet = 0
      while (quiet < 2) {
        await new Promise((turn) => setImmediate(turn))
        quiet = queue.size === 0 && !scheduled && !draining ? quiet + 1 : 0
      }
    },
    tick,
    stop() {
      stopped = true
      if (interval) clearInterval(interval)
      for (const w of watches) w.stop()
      queue.clear()
    },
  }
}
