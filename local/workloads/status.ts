/**
 * Pure parts of the workload controller emulation (see README "Workload controllers"): the
 * names, hashes, labels and status fields the kube-controller-manager's Deployment,
 * ReplicaSet, StatefulSet and DaemonSet controllers and a kubelet write, so what spec §6
 * (shared/recipe/plan/readiness.ts) reads locally is what a cluster shows.
 */

type Obj = Record<string, unknown>

/** The alphabet Kubernetes' `rand.SafeEncodeString` maps to (no vowels, no look-alikes). */
const SAFE = 'bcdfghjklmnpqrstvwxz2456789'

function fnv32a(text: string): number {
  let h = 0x811c9dc5
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/** Canonical JSON (keys sorted) so equal templates hash alike whatever their key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v && typeof v === 'object') {
    const o = v as Obj
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`
  }
  return JSON.stringify(v)
}

/**
 * Pure: a template hash in the controller's format: the decimal FNV-32a of the template
 * (plus the collision count when set), each digit mapped through SafeEncodeString's alphabet
 * (`pod-template-hash`, `controller-revision-hash`). The value differs from a cluster's (Go
 * hashes its own encoding of the struct); its shape, stability and change on edit do not.
 */
export function templateHash(template: unknown, collisionCount?: number): string {
  const text = canonical(template) + (collisionCount ? String(collisionCount) : '')
  return [...String(fnv32a(text))].map((d) => SAFE[d.charCodeAt(0) % SAFE.length]).join('')
}

/** A pod as far as the controllers count it. */
export interface PodView {
  metadata?: { name?: string; labels?: Record<string, string>; deletionTimestamp?: string; creationTimestamp?: string }
  status?: { phase?: string; conditions?: Array<{ type?: string; status?: string; lastTransitionTime?: string }> }
}

/** Pure: the pod is not Succeeded/Failed and not terminating (what controllers count as a replica). */
export function isActive(p: PodView): boolean {
  return p.metadata?.deletionTimestamp === undefined && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'
}

/** Pure: the pod's `Ready` condition is True (and it runs). */
export function isReady(p: PodView): boolean {
  return isActive(p) && p.status?.phase === 'Running' && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
}

/** Pure: drops the zero/undefined fields the Go types mark `omitempty`. */
export function omitZero<T extends Obj>(status: T, keep: string[] = []): Partial<T> {
  const out: Obj = {}
  for (const [k, v] of Object.entries(status)) if (v !== undefined && (v !== 0 || keep.includes(k))) out[k] = v
  return out as Partial<T>
}

/** A condition of apps/v1 workloads. */
export interface WorkloadCondition {
  type: string
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
  lastUpdateTime?: string
  lastTransitionTime: string
}

/**
 * Pure: sets a condition the way the controllers' SetCondition helpers do: unchanged status,
 * reason and message keep the old entry (times included); a changed status gets a new
 * lastTransitionTime, a changed reason or message only a new lastUpdateTime.
 */
export function setCondition(conditions: WorkloadCondition[], next: WorkloadCondition): WorkloadCondition[] {
  const old = conditions.find((c) => c.type === next.type)
  let merged = next
  if (old) {
    if (old.status === next.status && old.reason === next.reason && old.message === next.message) merged = old
    else if (old.status === next.status) merged = { ...next, lastTransitionTime: old.lastTransitionTime }
  }
  return old ? conditions.map((c) => (c.type === next.type ? merged : c)) : [...conditions, merged]
}

/** Pure: resolves an int-or-percent (`25%`) against `total`, rounding up or down as the controller does. */
export function intOrPercent(value: unknown, total: number, roundUp: boolean, fallback: string): number {
  const v = value ?? fallback
  if (typeof v === 'number') return v
  const m = /^(\d+)%$/.exec(String(v))
  if (!m) return Number.parseInt(String(v), 10) || 0
  const exact = (Number(m[1]) * total) / 100
  return roundUp ? Math.ceil(exact) : Math.floor(exact)
}

/** Pure: a ReplicaSet's status from its pods (omitempty as in apps/v1; `replicas` always shown). */
export function replicaSetStatus(pods: PodView[], selectorLabels: Record<string, string>, templateLabels: Record<string, string>, generation: number): Obj {
  const active = pods.filter(isActive)
  const ready = active.filter(isReady).length
  const fully = active.filter((p) => Object.entries(templateLabels).every(([k, v]) => p.metadata?.labels?.[k] === v)).length
  void selectorLabels
  return omitZero({ replicas: active.length, fullyLabeledReplicas: fully, readyReplicas: ready, availableReplicas: ready, observedGeneration: generation }, ['replicas'])
}

/** What the Deployment controller reads of one of its ReplicaSets. */
export interface ReplicaSetView {
  name: string
  status: { replicas?: number; readyReplicas?: number; availableReplicas?: number }
  specReplicas: number
}

/**
 * Pure: a Deployment's status from its ReplicaSets (the new one, for `updatedReplicas`, may be
 * absent), with the `Available` and `Progressing` conditions and their reasons and messages
 * (MinimumReplicasAvailable / MinimumReplicasUnavailable, NewReplicaSetCreated /
 * ReplicaSetUpdated / NewReplicaSetAvailable).
 */
export function deploymentStatus(opts: {
  desired: number
  generation: number
  maxUnavailable: number
  newRs: ReplicaSetView | undefined
  allRs: ReplicaSetView[]
  createdNewRs: boolean
  conditions: WorkloadCondition[]
  now: string
}): Obj {
  const sum = (f: (s: ReplicaSetView['status']) => number | undefined) => opts.allRs.reduce((n, rs) => n + (f(rs.status) ?? 0), 0)
  const replicas = sum((s) => s.replicas)
  const readyReplicas = sum((s) => s.readyReplicas)
  const availableReplicas = sum((s) => s.availableReplicas)
  const updatedReplicas = opts.newRs?.status.replicas ?? 0
  const unavailableReplicas = Math.max(0, opts.desired - availableReplicas)
  const cond = (type: string, status: 'True' | 'False', reason: string, message: string): WorkloadCondition =>
    ({ type, status, lastUpdateTime: opts.now, lastTransitionTime: opts.now, reason, message })
  let conditions = opts.conditions
  conditions = availableReplicas >= opts.desired - opts.maxUnavailable
    ? setCondition(conditions, cond('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'))
    : setCondition(conditions, cond('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.'))
  if (opts.newRs) {
    const name = opts.newRs.name
    const complete = updatedReplicas === opts.desired && replicas === opts.desired && availableReplicas === opts.desired
      && (opts.newRs.status.availableReplicas ?? 0) === opts.desired
    const progressing = complete
      ? cond('Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${name}" has successfully progressed.`)
      : opts.createdNewRs
        ? cond('Progressing', 'True', 'NewReplicaSetCreated', `Created new replica set "${name}"`)
        : cond('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${name}" is progressing.`)
    conditions = setCondition(conditions, progressing)
  }
  return {
    ...omitZero({ observedGeneration: opts.generation, replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas }),
    conditions,
  }
}

/** Pure: a StatefulSet's status (apps/v1: `replicas`, `availableReplicas` and `collisionCount` always shown). */
export function statefulSetStatus(pods: PodView[], revisions: { current: string; update: string }, generation: number): Obj {
  const active = pods.filter(isActive)
  const ready = active.filter(isReady).length
  const rev = (p: PodView) => p.metadata?.labels?.['controller-revision-hash']
  return {
    ...omitZero({
      observedGeneration: generation,
      replicas: active.length,
      readyReplicas: ready,
      currentReplicas: active.filter((p) => rev(p) === revisions.current).length,
      updatedReplicas: active.filter((p) => rev(p) === revisions.update).length,
      availableReplicas: ready,
    }, ['replicas', 'availableReplicas']),
    currentRevision: revisions.current,
    updateRevision: revisions.update,
    collisionCount: 0,
  }
}

/** Pure: a DaemonSet's status over the nodes it should run on (`numberAvailable`/`numberUnavailable` omitempty). */
export function daemonSetStatus(podsByNode: Map<string, PodView | undefined>, templateGeneration: string, generation: number): Obj {
  const pods = [...podsByNode.values()].filter((p): p is PodView => p !== undefined && isActive(p))
  const ready = pods.filter(isReady).length
  const desired = podsByNode.size
  return {
    currentNumberScheduled: pods.length,
    desiredNumberScheduled: desired,
    numberMisscheduled: 0,
    numberReady: ready,
    observedGeneration: generation,
    updatedNumberScheduled: pods.filter((p) => p.metadata?.labels?.['pod-template-generation'] === templateGeneration).length,
    ...omitZero({ numberAvailable: ready, numberUnavailable: desired - ready }),
  }
}

/** A container, as far as its status needs it. */
export interface ContainerView { name: string; image?: string }

/**
 * Pure: the status a kubelet reports for a pod whose containers all run and are ready (the
 * emulation has no container runtime for long-running images: see README).
 */
export function emulatedRunningStatus(containers: ContainerView[], ip: string, now: string): Obj {
  const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now })
  return {
    phase: 'Running',
    conditions: [cond('PodReadyToStartContainers'), cond('Initialized'), cond('Ready'), cond('ContainersReady'), cond('PodScheduled')],
    hostIP: ip, hostIPs: [{ ip }], podIP: ip, podIPs: [{ ip }], startTime: now, qosClass: 'BestEffort',
    containerStatuses: containers.map((c) => ({
      name: c.name, image: c.image ?? '', imageID: '', containerID: `emulated://${c.name}`,
      ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } },
    })),
  }
}

/** Pure: a pod that is scheduled but not started (what the emulation shows with `startPods: false`). */
export function pendingStatus(now: string): Obj {
  return { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now }], qosClass: 'BestEffort' }
}

/** Pure: `matchLabels` of a selector (matchExpressions are not modelled). */
export function matchLabels(selector: unknown): Record<string, string> {
  const m = (selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels
  return { ...(m ?? {}) }
}

/** Pure: true when every label of `want` is on `labels`. */
export function labelsMatch(want: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(want).every(([k, v]) => labels?.[k] === v)
}
