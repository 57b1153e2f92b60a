/**
 * The workload controller emulation of the embedded plane (README "Workload controllers";
 * issue 10 item 9): plays kube-controller-manager's Deployment, ReplicaSet, StatefulSet,
 * DaemonSet and CronJob controllers, and the kubelet for their pods, on the embedded API
 * server's store, so what spec §6 (shared/recipe/plan/readiness.ts) reads is what a cluster
 * shows. Jobs (the CronJob's too) are left to the local Job runner (local/jobs/).
 *
 * Pods of these kinds get no process: there is no container runtime for long-running images,
 * so the emulated kubelet marks each pod Running and Ready once it is created (containerID
 * `emulated://<container>`). Everything else goes through the store, with its validation,
 * resourceVersions, watch events and ownerReference cascade.
 */
import type { Logger } from '../../shared/log.js'
import { silentLogger } from '../../shared/log.js'
import type { ObjectStore } from '../apiserver/object-store.js'
import type { KubeObject, OwnerReference, TypeRef, WatchHandle } from '../apiserver/index.js'
import { cronJobJobName, dueSchedule, rfc3339 } from './cron.js'
import {
  daemonSetStatus, deploymentStatus, emulatedRunningStatus, intOrPercent, isActive, isReady, labelsMatch, matchLabels,
  pendingStatus, replicaSetStatus, statefulSetStatus, templateHash, type PodView, type ReplicaSetView, type WorkloadCondition,
} from './status.js'

const DEPLOYMENT: TypeRef = { apiVersion: 'apps/v1', kind: 'Deployment' }
const REPLICASET: TypeRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet' }
const STATEFULSET: TypeRef = { apiVersion: 'apps/v1', kind: 'StatefulSet' }
const DAEMONSET: TypeRef = { apiVersion: 'apps/v1', kind: 'DaemonSet' }
const CRONJOB: TypeRef = { apiVersion: 'batch/v1', kind: 'CronJob' }
const JOB: TypeRef = { apiVersion: 'batch/v1', kind: 'Job' }
const POD: TypeRef = { apiVersion: 'v1', kind: 'Pod' }
const PVC: TypeRef = { apiVersion: 'v1', kind: 'PersistentVolumeClaim' }
const KINDS: Record<string, TypeRef> = { Deployment: DEPLOYMENT, ReplicaSet: REPLICASET, StatefulSet: STATEFULSET, DaemonSet: DAEMONSET, CronJob: CRONJOB }

/** The manager names the real components write with. */
const CONTROLLER = 'kube-controller-manager'
const KUBELET = 'kubelet'

/** A node the DaemonSets schedule on. */
export interface EmulatedNode {
  name: string
  labels?: Record<string, string>
}

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

type Spec = Record<string, unknown>
type Template = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Spec & { containers?: Array<{ name: string; image?: string }>; volumes?: Array<Record<string, unknown>> } }

const ns = (o: KubeObject) => String(o.metadata.namespace ?? 'default')
const spec = (o: KubeObject) => (o.spec ?? {}) as Spec
const controllerOf = (o: KubeObject): OwnerReference | undefined => (o.metadata.ownerReferences ?? []).find((r) => r.controller === true)
const ownerRef = (o: KubeObject): OwnerReference => ({ apiVersion: o.apiVersion, kind: o.kind, name: String(o.metadata.name), uid: String(o.metadata.uid), controller: true, blockOwnerDeletion: true })
const replicasOf = (o: KubeObject) => (typeof spec(o).replicas === 'number' ? (spec(o).replicas as number) : 1)

/**
 * Starts the controllers on `store`: watches the workload kinds, their pods and the
 * CronJobs' Jobs, and reconciles each changed object (and its controller owner) in order.
 */
export function startWorkloadControllers(opts: WorkloadControllerOptions): WorkloadControllers {
  const store = opts.store
  const log = opts.log ?? silentLogger
  const now = opts.now ?? (() => new Date())
  const nodes = opts.nodes ?? [{ name: 'kinetic-local' }]
  const startPods = opts.startPods ?? true
  const ip = opts.podIp ?? '127.0.0.1'
  const queue = new Set<string>()
  let scheduled = false
  let draining = false
  let stopped = false

  const iso = () => rfc3339(now())
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
    if (kind === 'Deployment') reconcileDeployment(obj)
    else if (kind === 'ReplicaSet') reconcileReplicaSet(obj)
    else if (kind === 'StatefulSet') reconcileStatefulSet(obj)
    else if (kind === 'DaemonSet') reconcileDaemonSet(obj)
    else if (kind === 'CronJob') reconcileCronJob(obj)
  }

  const owned = (type: TypeRef, owner: KubeObject): KubeObject[] =>
    store.list(type, { namespace: ns(owner) }).items.filter((o) => controllerOf(o)?.uid === owner.metadata.uid)

  const writeStatus = (type: TypeRef, obj: KubeObject, status: unknown) => {
    const fresh = store.get(type, ns(obj), String(obj.metadata.name))
    if (!fresh) return
    if (JSON.stringify(fresh.status ?? {}) === JSON.stringify(status)) return
    store.update({ ...fresh, status }, { subresource: 'status' })
  }

  /** Creates a pod and plays the kubelet: scheduled, then (unless `startPods` is false) Running and Ready. */
  const createPod = (body: KubeObject) => {
    const pod = store.create(body)
    const template = (pod.spec ?? {}) as Template['spec']
    const status = startPods ? emulatedRunningStatus(template?.containers ?? [], ip, iso()) : pendingStatus(iso())
    store.patch(POD, ns(pod), String(pod.metadata.name), { status }, { type: 'merge', subresource: 'status', fieldManager: KUBELET })
    return pod
  }
  const deletePod = (pod: KubeObject) => {
    try {
      store.delete(POD, ns(pod), String(pod.metadata.name), { propagationPolicy: 'Background' })
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err
    }
  }
  const podBody = (owner: KubeObject, template: Template, meta: { name?: string; generateName?: string; labels: Record<string, string> }, extraSpec: Spec): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      ...(meta.name ? { name: meta.name } : { generateName: meta.generateName }),
      namespace: ns(owner),
      labels: meta.labels,
      ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
      ownerReferences: [ownerRef(owner)],
    },
    spec: { ...(template.spec ?? {}), ...extraSpec },
  })

  // ---- Deployment -> ReplicaSets -------------------------------------------------------------
  const reconcileDeployment = (d: KubeObject) => {
    const s = spec(d)
    const template = (s.template ?? {}) as Template
    const desired = replicasOf(d)
    const selector = matchLabels(s.selector)
    const all = owned(REPLICASET, d)
    const hash = templateHash(template)
    const rsName = `${String(d.metadata.name)}-${hash}`
    let newRs = all.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash)
    const revisions = all.map((rs) => Number(rs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0))
    const maxRevision = Math.max(0, ...revisions)
    const strategy = (s.strategy ?? {}) as { type?: string; rollingUpdate?: { maxUnavailable?: unknown; maxSurge?: unknown } }
    const recreate = strategy.type === 'Recreate'
    const maxUnavailable = recreate ? 0 : intOrPercent(strategy.rollingUpdate?.maxUnavailable, desired, false, '25%')
    const maxSurge = recreate ? 0 : intOrPercent(strategy.rollingUpdate?.maxSurge, desired, true, '25%')
    const old = all.filter((rs) => rs !== newRs)
    const annotations = (revision: number) => ({
      'deployment.kubernetes.io/desired-replicas': String(desired),
      'deployment.kubernetes.io/max-replicas': String(desired + maxSurge),
      'deployment.kubernetes.io/revision': String(revision),
    })
    const oldActive = old.reduce((n, rs) => n + Number((rs.status as { replicas?: number } | undefined)?.replicas ?? 0), 0)
    // Recreate: the new ReplicaSet starts once the old pods are gone.
    const newTarget = recreate && oldActive > 0 ? 0 : desired
    let created = false
    if (!newRs) {
      const podLabels = { ...(template.metadata?.labels ?? {}), 'pod-template-hash': hash }
      newRs = store.create({
        apiVersion: 'apps/v1', kind: 'ReplicaSet',
        metadata: { name: rsName, namespace: ns(d), labels: podLabels, annotations: annotations(maxRevision + 1), ownerReferences: [ownerRef(d)] },
        spec: {
          replicas: newTarget,
          ...(s.minReadySeconds !== undefined ? { minReadySeconds: s.minReadySeconds } : {}),
          selector: { matchLabels: { ...selector, 'pod-template-hash': hash } },
          template: { ...template, metadata: { ...(template.metadata ?? {}), labels: podLabels } },
        },
      }, {})
      created = true
      log.debug({ namespace: ns(d), deployment: d.metadata.name, replicaSet: rsName }, 'Created ReplicaSet')
    } else {
      const rev = Number(newRs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0)
      const wantAnnotations = annotations(rev < maxRevision ? maxRevision + 1 : rev)
      const rsSpec = spec(newRs)
      if (rsSpec.replicas !== newTarget || Object.entries(wantAnnotations).some(([k, v]) => newRs?.metadata.annotations?.[k] !== v)) {
        newRs = store.update({ ...newRs, metadata: { ...newRs.metadata, annotations: { ...(newRs.metadata.annotations ?? {}), ...wantAnnotations } }, spec: { ...rsSpec, replicas: newTarget } })
      }
    }
    const newStatus = (newRs.status ?? {}) as { availableReplicas?: number }
    // RollingUpdate: old ReplicaSets go to 0 once the new one is available; Recreate: at once.
    if (recreate || (newStatus.availableReplicas ?? 0) >= desired) {
      for (const rs of old) if (spec(rs).replicas !== 0) store.update({ ...rs, spec: { ...spec(rs), replicas: 0 } })
    }
    // revisionHistoryLimit (default 10): the oldest scaled-down ReplicaSets go.
    const limit = typeof s.revisionHistoryLimit === 'number' ? s.revisionHistoryLimit : 10
    const drained = old.filter((rs) => spec(rs).replicas === 0 && Number((rs.status as { replicas?: number } | undefined)?.replicas ?? 0) === 0)
      .sort((a, b) => Number(a.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0) - Number(b.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0))
    for (const rs of drained.slice(0, Math.max(0, drained.length - limit))) store.delete(REPLICASET, ns(rs), String(rs.metadata.name), { propagationPolicy: 'Background' })

    const revision = newRs.metadata.annotations?.['deployment.kubernetes.io/revision']
    if (revision && d.metadata.annotations?.['deployment.kubernetes.io/revision'] !== revision) {
      store.patch(DEPLOYMENT, ns(d), String(d.metadata.name), { metadata: { annotations: { 'deployment.kubernetes.io/revision': revision } } }, { type: 'merge', fieldManager: CONTROLLER })
    }
    const view = (rs: KubeObject): ReplicaSetView => ({ name: String(rs.metadata.name), status: (rs.status ?? {}) as ReplicaSetView['status'], specReplicas: replicasOf(rs) })
    const current = owned(REPLICASET, d)
    const newView = current.find((rs) => rs.metadata.uid === newRs?.metadata.uid)
    const status = deploymentStatus({
      desired, generation: Number(d.metadata.generation ?? 1), maxUnavailable,
      newRs: newView ? view(newView) : undefined, allRs: current.map(view),
      createdNewRs: created,
      conditions: ((d.status as { conditions?: WorkloadCondition[] } | undefined)?.conditions ?? []), now: iso(),
    })
    writeStatus(DEPLOYMENT, d, status)
  }

  // ---- ReplicaSet -> Pods ----------------------------------------------------------------------
  const reconcileReplicaSet = (rs: KubeObject) => {
    const s = spec(rs)
    const template = (s.template ?? {}) as Template
    const pods = owned(POD, rs).filter(isActive)
    const desired = replicasOf(rs)
    for (let i = pods.length; i < desired; i++) {
      pods.push(createPod(podBody(rs, template, { generateName: `${String(rs.metadata.name)}-`, labels: { ...(template.metadata?.labels ?? {}) } }, nodeSpec(nodes[0]?.name ?? 'kinetic-local'))))
    }
    if (pods.length > desired) {
      // The controller deletes not-ready pods first, then the newest.
      const ranked = [...pods].sort((a, b) => Number(isReady(a)) - Number(isReady(b)) || String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)))
      for (const p of ranked.slice(0, pods.length - desired)) deletePod(p)
    }
    const live = owned(POD, rs)
    writeStatus(REPLICASET, rs, replicaSetStatus(live as PodView[], matchLabels(s.selector), template.metadata?.labels ?? {}, Number(rs.metadata.generation ?? 1)))
  }
  const nodeSpec = (node: string): Spec => ({ nodeName: node })

  // ---- StatefulSet -> ordinal Pods and PVCs ----------------------------------------------------
  const reconcileStatefulSet = (sts: KubeObject) => {
    const s = spec(sts)
    const name = String(sts.metadata.name)
    const template = (s.template ?? {}) as Template
    const desired = replicasOf(sts)
    const updateRevision = `${name}-${templateHash(template)}`
    const prior = (sts.status ?? {}) as { currentRevision?: string }
    let currentRevision = prior.currentRevision ?? updateRevision
    const parallel = s.podManagementPolicy === 'Parallel'
    const claims = (Array.isArray(s.volumeClaimTemplates) ? s.volumeClaimTemplates : []) as KubeObject[]
    const retention = (s.persistentVolumeClaimRetentionPolicy ?? {}) as { whenDeleted?: string; whenScaled?: string }
    const selector = matchLabels(s.selector)
    const strategy = (s.updateStrategy ?? {}) as { type?: string; rollingUpdate?: { partition?: number } }
    const partition = strategy.rollingUpdate?.partition ?? 0
    const podName = (i: number) => `${name}-${i}`
    const byOrdinal = new Map<number, KubeObject>()
    for (const p of owned(POD, sts).filter(isActive)) {
      const m = /-(\d+)$/.exec(String(p.metadata.name))
      if (m) byOrdinal.set(Number(m[1]), p)
    }
    const claimName = (c: KubeObject, i: number) => `${String(c.metadata?.name)}-${name}-${i}`
    const ensureClaims = (i: number) => {
      for (const c of claims) {
        const cname = claimName(c, i)
        if (store.get(PVC, ns(sts), cname)) continue
        const cspec = (c.spec ?? {}) as { resources?: { requests?: { storage?: string } }; accessModes?: string[] }
        const pvc = store.create({
          apiVersion: 'v1', kind: 'PersistentVolumeClaim',
          metadata: {
            name: cname, namespace: ns(sts),
            labels: { ...(c.metadata?.labels ?? {}), ...selector },
            annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' },
            ...(retention.whenDeleted === 'Delete' ? { ownerReferences: [ownerRef(sts)] } : {}),
          },
          spec: { ...cspec },
        })
        store.patch(PVC, ns(sts), cname, { spec: { volumeName: `pvc-${String(pvc.metadata.uid)}` } }, { type: 'merge', fieldManager: CONTROLLER })
        store.patch(PVC, ns(sts), cname, {
          status: { phase: 'Bound', accessModes: cspec.accessModes ?? ['ReadWriteOnce'], capacity: { storage: cspec.resources?.requests?.storage ?? '' } },
        }, { type: 'merge', subresource: 'status', fieldManager: CONTROLLER })
      }
    }
    const createOrdinal = (i: number, revision: string) => {
      ensureClaims(i)
      const pod = podName(i)
      const volumes = [...(template.spec?.volumes ?? []).filter((v) => !claims.some((c) => c.metadata?.name === v.name)),
        ...claims.map((c) => ({ name: String(c.metadata?.name), persistentVolumeClaim: { claimName: claimName(c, i) } }))]
      const labels = {
        ...(template.metadata?.labels ?? {}),
        'apps.kubernetes.io/pod-index': String(i),
        'controller-revision-hash': revision,
        'statefulset.kubernetes.io/pod-name': pod,
      }
      byOrdinal.set(i, createPod(podBody(sts, template, { name: pod, labels }, {
        ...(claims.length > 0 || template.spec?.volumes ? { volumes } : {}),
        hostname: pod,
        ...(s.serviceName ? { subdomain: s.serviceName } : {}),
        ...nodeSpec(nodes[0]?.name ?? 'kinetic-local'),
      })))
    }
    // Scale up: OrderedReady creates ordinal i once 0..i-1 are Running and Ready.
    for (let i = 0; i < desired; i++) {
      if (byOrdinal.has(i)) continue
      if (!parallel && [...Array(i).keys()].some((j) => !byOrdinal.get(j) || !isReady(byOrdinal.get(j) as KubeObject))) break
      // Ordinals below the partition keep the current revision, as a rolling update leaves them.
      createOrdinal(i, i < partition ? currentRevision : updateRevision)
    }
    // Scale down: the highest ordinal first (OrderedReady: one at a time, once the rest are ready).
    const extra = [...byOrdinal.keys()].filter((i) => i >= desired).sort((a, b) => b - a)
    for (const i of extra) {
      if (!parallel && [...byOrdinal.entries()].some(([j, p]) => j < i && !isReady(p))) break
      deletePod(byOrdinal.get(i) as KubeObject)
      byOrdinal.delete(i)
      if (retention.whenScaled === 'Delete') for (const c of claims) { try { store.delete(PVC, ns(sts), claimName(c, i)) } catch { /* already gone */ } }
      if (!parallel) break
    }
    // RollingUpdate: the highest ordinal at an old revision is replaced, once every pod is ready.
    if ((strategy.type ?? 'RollingUpdate') === 'RollingUpdate') {
      const allReady = [...byOrdinal.values()].every(isReady) && byOrdinal.size === desired
      const stale = [...byOrdinal.entries()].filter(([i, p]) => i >= partition && p.metadata.labels?.['controller-revision-hash'] !== updateRevision).sort((a, b) => b[0] - a[0])
      if (allReady && stale[0]) {
        const [i, p] = stale[0]
        deletePod(p)
        createOrdinal(i, updateRevision)
      }
    }
    const pods = [...byOrdinal.values()].map((p) => store.get(POD, ns(p), String(p.metadata.name))).filter((p): p is KubeObject => p !== undefined)
    const updated = pods.filter((p) => p.metadata.labels?.['controller-revision-hash'] === updateRevision && isReady(p)).length
    if (updated === desired && pods.length === desired && partition === 0) currentRevision = updateRevision
    writeStatus(STATEFULSET, sts, statefulSetStatus(pods as PodView[], { current: currentRevision, update: updateRevision }, Number(sts.metadata.generation ?? 1)))
  }

  // ---- DaemonSet -> one Pod per node ------------------------------------------------------------
  const reconcileDaemonSet = (ds: KubeObject) => {
    const s = spec(ds)
    const name = String(ds.metadata.name)
    const template = (s.template ?? {}) as Template
    const generation = String(ds.metadata.generation ?? 1)
    const hash = templateHash(template)
    const nodeSelector = ((template.spec?.nodeSelector ?? {}) as Record<string, string>)
    const eligible = nodes.filter((n) => labelsMatch(nodeSelector, { 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', ...(n.labels ?? {}) }))
    const pods = owned(POD, ds).filter(isActive)
    const byNode = new Map<string, PodView | undefined>()
    for (const node of eligible) {
      let pod = pods.find((p) => (p.spec as { nodeName?: string } | undefined)?.nodeName === node.name)
      const rolling = ((s.updateStrategy as { type?: string } | undefined)?.type ?? 'RollingUpdate') === 'RollingUpdate'
      if (pod && rolling && pod.metadata.labels?.['controller-revision-hash'] !== hash) {
        deletePod(pod)
        pod = undefined
      }
      if (!pod) {
        const labels = { ...(template.metadata?.labels ?? {}), 'controller-revision-hash': hash, 'pod-template-generation': generation }
        pod = createPod(podBody(ds, template, { generateName: `${name}-`, labels }, nodeSpec(node.name)))
      } else if (pod.metadata.labels?.['controller-revision-hash'] === hash && pod.metadata.labels?.['pod-template-generation'] !== generation) {
        // A spec change that leaves the template alone: the pod is relabelled, not replaced.
        pod = store.patch(POD, ns(pod), String(pod.metadata.name), { metadata: { labels: { 'pod-template-generation': generation } } }, { type: 'merge', fieldManager: CONTROLLER })
      }
      byNode.set(node.name, store.get(POD, ns(ds), String(pod.metadata.name)) as PodView | undefined)
    }
    for (const p of pods) if (!eligible.some((n) => n.name === (p.spec as { nodeName?: string } | undefined)?.nodeName)) deletePod(p)
    writeStatus(DAEMONSET, ds, daemonSetStatus(byNode, generation, Number(ds.metadata.generation ?? 1)))
  }

  // ---- CronJob -> Jobs on schedule ---------------------------------------------------------------
  const reconcileCronJob = (cj: KubeObject) => {
    const s = spec(cj)
    const name = String(cj.metadata.name)
    const prior = (cj.status ?? {}) as { lastScheduleTime?: string; lastSuccessfulTime?: string; active?: Array<Record<string, unknown>> }
    const jobs = owned(JOB, cj)
    const finished = (j: KubeObject) => {
      const conds = ((j.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? [])
      if (conds.some((c) => c.type === 'Complete' && c.status === 'True')) return 'Complete'
      if (conds.some((c) => c.type === 'Failed' && c.status === 'True')) return 'Failed'
      return undefined
    }
    let active = jobs.filter((j) => !finished(j) && !j.metadata.deletionTimestamp)
    let lastScheduleTime = prior.lastScheduleTime
    let lastSuccessfulTime = prior.lastSuccessfulTime
    for (const j of jobs) {
      const t = (j.status as { completionTime?: string } | undefined)?.completionTime
      if (finished(j) === 'Complete' && t && (!lastSuccessfulTime || t > lastSuccessfulTime)) lastSuccessfulTime = t
    }
    if (s.suspend !== true && typeof s.schedule === 'string') {
      const since = new Date(lastScheduleTime ?? String(cj.metadata.creationTimestamp))
      let due: ReturnType<typeof dueSchedule> | undefined
      try {
        due = dueSchedule(s.schedule, {
          since, now: now(),
          ...(typeof s.timeZone === 'string' ? { timeZone: s.timeZone } : {}),
          ...(typeof s.startingDeadlineSeconds === 'number' ? { startingDeadlineSeconds: s.startingDeadlineSeconds } : {}),
        })
      } catch (err) {
        log.warn({ namespace: ns(cj), cronJob: name, schedule: s.schedule, err: String(err) }, 'CronJob schedule does not parse; no Jobs are created')
      }
      const policy = String(s.concurrencyPolicy ?? 'Allow')
      if (due?.at && !(policy === 'Forbid' && active.length > 0)) {
        if (policy === 'Replace') {
          for (const j of active) store.delete(JOB, ns(j), String(j.metadata.name), { propagationPolicy: 'Background' })
          active = []
        }
        const jobName = cronJobJobName(name, due.at)
        const template = (s.jobTemplate ?? {}) as { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Spec }
        if (!store.get(JOB, ns(cj), jobName)) {
          const job = store.create({
            apiVersion: 'batch/v1', kind: 'Job',
            metadata: {
              name: jobName, namespace: ns(cj),
              ...(template.metadata?.labels ? { labels: { ...template.metadata.labels } } : {}),
              annotations: { ...(template.metadata?.annotations ?? {}), 'batch.kubernetes.io/cronjob-scheduled-timestamp': rfc3339(due.at) },
              ownerReferences: [ownerRef(cj)],
            },
            spec: { ...(template.spec ?? {}) },
          })
          active.push(job)
          log.info({ namespace: ns(cj), cronJob: name, job: jobName, scheduled: rfc3339(due.at) }, 'CronJob created a Job')
        }
        lastScheduleTime = rfc3339(due.at)
      }
    }
    // History limits: the oldest finished Jobs beyond successfulJobsHistoryLimit (3) / failedJobsHistoryLimit (1) go.
    const prune = (outcome: string, limit: number) => {
      const done = jobs.filter((j) => finished(j) === outcome).sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)) || String(a.metadata.name).localeCompare(String(b.metadata.name)))
      for (const j of done.slice(0, Math.max(0, done.length - limit))) {
        try { store.delete(JOB, ns(j), String(j.metadata.name), { propagationPolicy: 'Background' }) } catch { /* already gone */ }
      }
    }
    prune('Complete', typeof s.successfulJobsHistoryLimit === 'number' ? s.successfulJobsHistoryLimit : 3)
    prune('Failed', typeof s.failedJobsHistoryLimit === 'number' ? s.failedJobsHistoryLimit : 1)
    const status: Record<string, unknown> = {}
    if (active.length > 0) {
      status.active = active.map((j) => ({ apiVersion: 'batch/v1', kind: 'Job', name: j.metadata.name, namespace: ns(j), uid: j.metadata.uid, resourceVersion: j.metadata.resourceVersion }))
    }
    if (lastScheduleTime) status.lastScheduleTime = lastScheduleTime
    if (lastSuccessfulTime) status.lastSuccessfulTime = lastSuccessfulTime
    writeStatus(CRONJOB, cj, status)
  }

  // ---- watches ------------------------------------------------------------------------------------
  const watches: WatchHandle[] = []
  const watchKind = (type: TypeRef, onObject: (o: KubeObject, deleted: boolean) => void) => {
    watches.push(store.watch(type, {}, (ev) => {
      if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') onObject(ev.object, ev.type === 'DELETED')
    }))
  }
  const toOwner = (o: KubeObject) => {
    const owner = controllerOf(o)
    if (owner) enqueue(owner.kind, ns(o), owner.name)
  }
  for (const type of [DEPLOYMENT, STATEFULSET, DAEMONSET, CRONJOB]) watchKind(type, (o) => enqueue(o.kind, ns(o), String(o.metadata.name)))
  watchKind(REPLICASET, (o, deleted) => { if (!deleted) enqueue('ReplicaSet', ns(o), String(o.metadata.name)); toOwner(o) })
  watchKind(POD, (o) => toOwner(o))
  watchKind(JOB, (o) => toOwner(o))

  const tick = () => {
    for (const cj of store.list(CRONJOB).items) enqueue('CronJob', ns(cj), String(cj.metadata.name))
  }
  const interval = (opts.cronIntervalMs ?? 1000) > 0 ? setInterval(tick, opts.cronIntervalMs ?? 1000) : undefined
  interval?.unref()

  return {
    async settle() {
      // Watch events arrive as microtasks, reconciles run on setImmediate: idle = two quiet turns.
      let quiet = 0
      while (quiet < 2) {
        await new Promise((r) => setImmediate(r))
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
