/**
 * Readiness per kind (spec §6) and the `ReadinessTimeout` deadline check. Pure.
 *
 * An object is Ready for revision N when it exists, carries N's `purko.io/manifest-digest`
 * (when one is expected), has no `deletionTimestamp` (a terminating child is never Ready, even
 * while its deletionTimestamp lies in the future during graceful deletion), and meets the
 * kind's rule of the spec §6 table. `now` (ISO time) is the planners' clock argument: readiness of an
 * object is timeless, deadlines ({@link readinessTimeout}) are not.
 */
import { ANNOTATION_MANIFEST_DIGEST } from './labels.js'

/** Kinds whose readiness is judged (the workload kinds, Service and MCPServer). */
export type ReadinessKind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob' | 'Service' | 'MCPServer'

interface Condition { type?: string; status?: string; reason?: string; message?: string }

/** The observed object, as read from the API server (only the fields spec §6 looks at). */
export interface ObservedObject {
  metadata?: {
    name?: string
    namespace?: string
    generation?: number
    deletionTimestamp?: string | Date
    annotations?: Record<string, string>
    finalizers?: string[]
  }
  spec?: { replicas?: number }
  status?: {
    observedGeneration?: number
    replicas?: number
    updatedReplicas?: number
    availableReplicas?: number
    readyReplicas?: number
    currentRevision?: string
    updateRevision?: string
    desiredNumberScheduled?: number
    numberReady?: number
    updatedNumberScheduled?: number
    conditions?: Condition[]
    lastScheduleTime?: string | Date
    lastSuccessfulTime?: string | Date
    phase?: string
  }
}

export interface Readiness {
  ready: boolean
  /** Set when the workload failed for good (a Job with `Failed=True`). */
  failed?: { reason: 'JobFailed'; jobReason: string; message: string }
  /** Best available detail (counts, a `ReplicaFailure` message, the Job's failure). */
  message: string
  replicas?: number
  readyReplicas?: number
  lastScheduleTime?: string
  lastSuccessfulTime?: string
  /** An MCPServer's `status.phase`. */
  phase?: string
}

function time(value: string | Date | undefined): string | undefined {
  if (value === undefined) return undefined
  return typeof value === 'string' ? value : value.toISOString()
}

function conditionOf(o: ObservedObject, type: string): Condition | undefined {
  return (o.status?.conditions ?? []).find((c) => c.type === type && c.status === 'True')
}

function generationObserved(o: ObservedObject): boolean {
  return (o.status?.observedGeneration ?? 0) >= (o.metadata?.generation ?? 0)
}

function waitingForController(o: ObservedObject): string {
  return `waiting for the controller to observe generation ${o.metadata?.generation ?? 0}`
}

/** spec §6 readiness of one observed object of `kind`; `expectedDigest` is revision N's digest of it. */
export function readinessOf(kind: ReadinessKind, object: ObservedObject | undefined, now: string, expectedDigest?: string): Readiness {
  void now
  if (!object) return { ready: false, message: `${kind} does not exist yet` }
  const meta = object.metadata ?? {}
  if (meta.deletionTimestamp !== undefined) {
    const finalizers = meta.finalizers ?? []
    return {
      ready: false,
      message: `${kind} ${meta.namespace ?? ''}/${meta.name ?? ''} is terminating${finalizers.length > 0 ? ` (finalizers: ${finalizers.join(', ')})` : ''}`,
    }
  }
  if (expectedDigest !== undefined && meta.annotations?.[ANNOTATION_MANIFEST_DIGEST] !== expectedDigest) {
    return { ready: false, message: `${kind} does not carry this revision's manifest yet` }
  }
  const s = object.status ?? {}
  switch (kind) {
    case 'Deployment': {
      const desired = object.spec?.replicas ?? 1
      const available = s.availableReplicas ?? 0
      const counts = { replicas: desired, readyReplicas: s.readyReplicas ?? 0 }
      if (!generationObserved(object)) return { ready: false, message: waitingForController(object), ...counts }
      const ready = desired === 0
        || ((s.updatedReplicas ?? 0) === desired && available === desired && (s.replicas ?? 0) === desired)
      const failure = conditionOf(object, 'ReplicaFailure')
      const message = ready ? `${available}/${desired} replicas available` : (failure?.message ?? `${available}/${desired} replicas available`)
      return { ready, message, ...counts }
    }
    case 'StatefulSet': {
      const desired = object.spec?.replicas ?? 1
      const readyReplicas = s.readyReplicas ?? 0
      const counts = { replicas: desired, readyReplicas }
      if (!generationObserved(object)) return { ready: false, message: waitingForController(object), ...counts }
      const rolled = s.currentRevision === s.updateRevision
      const ready = readyReplicas === desired && (s.updatedReplicas ?? 0) === desired && rolled
      const message = !rolled && readyReplicas === desired
        ? `rolling out revision ${s.updateRevision ?? ''}: ${s.updatedReplicas ?? 0}/${desired} replicas updated`
        : `${readyReplicas}/${desired} replicas ready`
      return { ready, message, ...counts }
    }
    case 'DaemonSet': {
      const desired = s.desiredNumberScheduled ?? 0
      const numberReady = s.numberReady ?? 0
      const counts = { replicas: desired, readyReplicas: numberReady }
      if (!generationObserved(object)) return { ready: false, message: waitingForController(object), ...counts }
      if (desired < 1) return { ready: false, message: 'no node is scheduled to run a pod', ...counts }
      const ready = numberReady === desired && (s.updatedNumberScheduled ?? 0) === desired
      return { ready, message: `${numberReady}/${desired} pods ready`, ...counts }
    }
    case 'Job': {
      const failed = conditionOf(object, 'Failed')
      if (failed) {
        const jobReason = failed.reason ?? 'Failed'
        const message = failed.message ? `${jobReason}: ${failed.message}` : jobReason
        return { ready: false, failed: { reason: 'JobFailed', jobReason, message }, message }
      }
      if (conditionOf(object, 'Complete')) return { ready: true, message: 'Job completed' }
      return { ready: false, message: 'Job has not completed yet' }
    }
    case 'CronJob': {
      const r: Readiness = { ready: true, message: 'CronJob scheduled' }
      const last = time(s.lastScheduleTime)
      const success = time(s.lastSuccessfulTime)
      if (last) r.lastScheduleTime = last
      if (success) r.lastSuccessfulTime = success
      return r
    }
    case 'Service':
      return { ready: true, message: 'Service exists' }
    case 'MCPServer': {
      const phase = s.phase ?? 'Pending'
      return { ready: phase === 'Ready', message: `MCPServer is ${phase}`, phase }
    }
  }
}

/** The observed objects of one workload (undefined = absent). */
export interface WorkloadObservation {
  workload?: ObservedObject
  service?: ObservedObject
  mcpServer?: ObservedObject
}

/** Expected digests of revision N per object of the workload (omitted = not checked). */
export interface WorkloadDigests { workload?: string; service?: string; mcpServer?: string }

export interface WorkloadReadiness extends Readiness {
  /** The workload object (and Service) is Ready: for `http`, the MCPServer may now be written. */
  mainReady: boolean
}

/**
 * spec §6 readiness of one workload: its kind's rule, `transport: http` = the Deployment/StatefulSet
 * Ready, its Service exists and its MCPServer was written (its phase reported, not awaited),
 * `transport: stdio` = the MCPServer has `status.phase: Ready`; a Service (any) must exist.
 */
export function workloadReadiness(
  w: { kind: 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob'; transport?: 'http' | 'stdio'; hasService: boolean },
  observed: WorkloadObservation,
  now: string,
  digests: WorkloadDigests = {},
): WorkloadReadiness {
  if (w.transport === 'stdio') {
    const r = readinessOf('MCPServer', observed.mcpServer, now, digests.mcpServer)
    return { ...r, mainReady: r.ready }
  }
  const main = readinessOf(w.kind, observed.workload, now, digests.workload)
  if (main.failed || !main.ready) return { ...main, mainReady: false }
  if (w.hasService) {
    const svc = readinessOf('Service', observed.service, now, digests.service)
    if (!svc.ready) return { ...main, ready: false, message: svc.message, mainReady: false }
  }
  if (w.transport === 'http') {
    if (!observed.mcpServer) return { ...main, ready: false, message: 'MCPServer not written yet', mainReady: true }
    const mcpMeta = observed.mcpServer.metadata ?? {}
    const stale = mcpMeta.deletionTimestamp !== undefined
      || (digests.mcpServer !== undefined && mcpMeta.annotations?.[ANNOTATION_MANIFEST_DIGEST] !== digests.mcpServer)
    if (stale) return { ...main, ready: false, message: readinessOf('MCPServer', observed.mcpServer, now, digests.mcpServer).message, mainReady: true }
    const phase = observed.mcpServer.status?.phase ?? 'Pending'
    return { ...main, ready: true, phase, mainReady: true }
  }
  return { ...main, mainReady: true }
}

/** A workload that is not Ready, for the deadline check (in `status.resolved.order`). */
export interface NotReadyWorkload {
  name: string
  kind: string
  detail: string
  /** First apply of the workload in this revision (ISO time). */
  firstAppliedAt?: string
  readinessTimeoutSeconds?: number
}

export interface ReadinessDeadline {
  /** Set when a deadline passed: reason `ReadinessTimeout` and the spec §6 message. */
  expired?: { workload: string; reason: 'ReadinessTimeout'; message: string }
  /** Earliest deadline still pending (ISO time), for `status.nextCheckAt`. */
  nextCheckAt?: string
}

/**
 * spec §6: a workload not Ready within `readinessTimeoutSeconds` (from its first apply) or a revision
 * not Ready within `progressDeadlineSeconds` (from entering `Deploying`) fails the revision with
 * `workload "<w>" (<Kind>) was not ready within <n>s: <detail>`. The deadline that expired first
 * is reported; the progress deadline names the first not-Ready workload in order.
 */
export function readinessTimeout(notReady: NotReadyWorkload[], deployingSince: string, progressDeadlineSeconds: number, now: string): ReadinessDeadline {
  const nowMs = Date.parse(now)
  type Candidate = { at: number; w: NotReadyWorkload; seconds: number }
  const candidates: Candidate[] = []
  const first = notReady[0]
  if (first) candidates.push({ at: Date.parse(deployingSince) + progressDeadlineSeconds * 1000, w: first, seconds: progressDeadlineSeconds })
  for (const w of notReady) {
    if (w.readinessTimeoutSeconds !== undefined && w.firstAppliedAt !== undefined) {
      candidates.push({ at: Date.parse(w.firstAppliedAt) + w.readinessTimeoutSeconds * 1000, w, seconds: w.readinessTimeoutSeconds })
    }
  }
  const expired = candidates.filter((c) => c.at <= nowMs)
  if (expired.length > 0) {
    const order = new Map(notReady.map((w, i) => [w.name, i]))
    expired.sort((a, b) => a.at - b.at || (order.get(a.w.name)! - order.get(b.w.name)!))
    const c = expired[0]!
    return { expired: { workload: c.w.name, reason: 'ReadinessTimeout', message: `workload "${c.w.name}" (${c.w.kind}) was not ready within ${c.seconds}s: ${c.w.detail}` } }
  }
  const pending = candidates.map((c) => c.at)
  return pending.length > 0 ? { nextCheckAt: new Date(Math.min(...pending)).toISOString() } : {}
}
