import type { Logger } from '../../shared/log.js'
import type { ObjectStore } from '../apiserver/object-store.js'
import type { KubeObject, OwnerReference, TypeRef } from '../apiserver/index.js'
import { rfc3339 } from './cron.js'
import { emulatedRunningStatus, pendingStatus } from './status.js'

/**
 * What every controller of the workload emulation shares: the kinds it handles, the managers
 * it writes as, reading an object's parts, and what it does on the store: the objects an owner
 * controls, status writes that skip a status already there, and pods created the way the
 * kubelet would report them.
 */

export const DEPLOYMENT: TypeRef = { apiVersion: 'apps/v1', kind: 'Deployment' }
export const REPLICASET: TypeRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet' }
export const STATEFULSET: TypeRef = { apiVersion: 'apps/v1', kind: 'StatefulSet' }
export const DAEMONSET: TypeRef = { apiVersion: 'apps/v1', kind: 'DaemonSet' }
export const CRONJOB: TypeRef = { apiVersion: 'batch/v1', kind: 'CronJob' }
export const JOB: TypeRef = { apiVersion: 'batch/v1', kind: 'Job' }
export const POD: TypeRef = { apiVersion: 'v1', kind: 'Pod' }
export const PVC: TypeRef = { apiVersion: 'v1', kind: 'PersistentVolumeClaim' }
/** The kinds the controllers reconcile, by name. */
export const KINDS: Record<string, TypeRef> = { Deployment: DEPLOYMENT, ReplicaSet: REPLICASET, StatefulSet: STATEFULSET, DaemonSet: DAEMONSET, CronJob: CRONJOB }

/** The manager names the real components write with. */
export const CONTROLLER = 'kube-controller-manager'
export const KUBELET = 'kubelet'

/** A node the DaemonSets schedule on. */
export interface EmulatedNode {
  name: string
  labels?: Record<string, string>
}

/** A spec, as the controllers read it. */
export type Spec = Record<string, unknown>
/** A pod template. */
export type Template = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Spec & { containers?: Array<{ name: string; image?: string }>; volumes?: Array<Record<string, unknown>> } }

/** An object's namespace. */
export const namespaceOf = (o: KubeObject) => String(o.metadata.namespace ?? 'default')
/** An object's spec, empty when it has none. */
export const specOf = (o: KubeObject) => (o.spec ?? {}) as Spec
/** The owner reference of an object's controller. */
export const controllerOf = (o: KubeObject): OwnerReference | undefined => (o.metadata.ownerReferences ?? []).find((r) => r.controller === true)
/** The controller reference an owned object carries to `o`. */
export const ownerRef = (o: KubeObject): OwnerReference => ({ apiVersion: o.apiVersion, kind: o.kind, name: String(o.metadata.name), uid: String(o.metadata.uid), controller: true, blockOwnerDeletion: true })
/** spec.replicas, 1 when unset. */
export const replicasOf = (o: KubeObject) => (typeof specOf(o).replicas === 'number' ? (specOf(o).replicas as number) : 1)

/** A pod's placement on a node. */
export const nodeSpec = (node: string): Spec => ({ nodeName: node })

/** What a controller needs to reconcile one object. */
export interface WorkloadContext {
  store: ObjectStore
  log: Logger
  /** The clock of schedules and status times. */
  now(): Date
  /** Now, as status times spell it. */
  iso(): string
  /** The nodes DaemonSets run a pod on. */
  nodes: EmulatedNode[]
  /** The objects of `type` whose controller is `owner`. */
  owned(type: TypeRef, owner: KubeObject): KubeObject[]
  /** Writes `status` unless the stored object already has it. */
  writeStatus(type: TypeRef, obj: KubeObject, status: unknown): void
  /** Creates a pod and plays the kubelet: scheduled, then (unless `startPods` is false) Running and Ready. */
  createPod(body: KubeObject): KubeObject
  /** Deletes a pod in the background; one already gone is fine. */
  deletePod(pod: KubeObject): void
  /** A pod of `owner` from its template, with `extraSpec` over the template's spec. */
  podBody(owner: KubeObject, template: Template, meta: { name?: string; generateName?: string; labels: Record<string, string> }, extraSpec: Spec): KubeObject
}

/** The context of the controllers on `store`. */
export function workloadContext(settings: { store: ObjectStore; log: Logger; now: () => Date; nodes: EmulatedNode[]; startPods: boolean; podIp: string }): WorkloadContext {
  const { store, log, now, nodes, startPods } = settings
  const ip = settings.podIp
  const iso = () => rfc3339(now())
  const owned = (type: TypeRef, owner: KubeObject): KubeObject[] =>
    store.list(type, { namespace: namespaceOf(owner) }).items.filter((o) => controllerOf(o)?.uid === owner.metadata.uid)

  const writeStatus = (type: TypeRef, obj: KubeObject, status: unknown) => {
    const fresh = store.get(type, namespaceOf(obj), String(obj.metadata.name))
    if (!fresh) return
    if (JSON.stringify(fresh.status ?? {}) === JSON.stringify(status)) return
    store.update({ ...fresh, status }, { subresource: 'status' })
  }

  /** Creates a pod and plays the kubelet: scheduled, then (unless `startPods` is false) Running and Ready. */
  const createPod = (body: KubeObject) => {
    const pod = store.create(body)
    const template = (pod.spec ?? {}) as Template['spec']
    const status = startPods ? emulatedRunningStatus(template?.containers ?? [], ip, iso()) : pendingStatus(iso())
    store.patch(POD, namespaceOf(pod), String(pod.metadata.name), { status }, { type: 'merge', subresource: 'status', fieldManager: KUBELET })
    return pod
  }
  const deletePod = (pod: KubeObject) => {
    try {
      store.delete(POD, namespaceOf(pod), String(pod.metadata.name), { propagationPolicy: 'Background' })
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err
    }
  }
  const podBody = (owner: KubeObject, template: Template, meta: { name?: string; generateName?: string; labels: Record<string, string> }, extraSpec: Spec): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      ...(meta.name ? { name: meta.name } : { generateName: meta.generateName }),
      namespace: namespaceOf(owner),
      labels: meta.labels,
      ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
      ownerReferences: [ownerRef(owner)],
    },
    spec: { ...(template.spec ?? {}), ...extraSpec },
  })
  return { store, log, now, iso, nodes, owned, writeStatus, createPod, deletePod, podBody }
}
