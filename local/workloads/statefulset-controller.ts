import type { KubeObject } from '../apiserver/index.js'
import { isActive, isReady, matchLabels, statefulSetStatus, templateHash, type PodView } from './status.js'
import {
  CONTROLLER, namespaceOf, nodeSpec, ownerRef, POD, PVC, replicasOf, specOf, STATEFULSET,
  type WorkloadContext, type Template,
} from './workload-context.js'

/** The StatefulSet controller of the workload emulation (controllers.ts runs it). */

/** StatefulSet -> ordinal Pods and their claims: ordered (or parallel) scaling, rolling updates from the highest ordinal above the partition, and the StatefulSet's status. */
export function reconcileStatefulSet(context: WorkloadContext, sts: KubeObject): void {
  const { store, nodes, owned, writeStatus, createPod, deletePod, podBody } = context
  const spec = specOf(sts)
  const name = String(sts.metadata.name)
  const template = (spec.template ?? {}) as Template
  const desired = replicasOf(sts)
  const updateRevision = `${name}-${templateHash(template)}`
  const prior = (sts.status ?? {}) as { currentRevision?: string }
  let currentRevision = prior.currentRevision ?? updateRevision
  const parallel = spec.podManagementPolicy === 'Parallel'
  const claims = (Array.isArray(spec.volumeClaimTemplates) ? spec.volumeClaimTemplates : []) as KubeObject[]
  const retention = (spec.persistentVolumeClaimRetentionPolicy ?? {}) as { whenDeleted?: string; whenScaled?: string }
  const selector = matchLabels(spec.selector)
  const strategy = (spec.updateStrategy ?? {}) as { type?: string; rollingUpdate?: { partition?: number } }
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
      if (store.get(PVC, namespaceOf(sts), cname)) continue
      const cspec = (c.spec ?? {}) as { resources?: { requests?: { storage?: string } }; accessModes?: string[] }
      const pvc = store.create({
        apiVersion: 'v1', kind: 'PersistentVolumeClaim',
        metadata: {
          name: cname, namespace: namespaceOf(sts),
          labels: { ...(c.metadata?.labels ?? {}), ...selector },
          annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' },
          ...(retention.whenDeleted === 'Delete' ? { ownerReferences: [ownerRef(sts)] } : {}),
        },
        spec: { ...cspec },
      })
      store.patch(PVC, namespaceOf(sts), cname, { spec: { volumeName: `pvc-${String(pvc.metadata.uid)}` } }, { type: 'merge', fieldManager: CONTROLLER })
      store.patch(PVC, namespaceOf(sts), cname, {
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
      ...(spec.serviceName ? { subdomain: spec.serviceName } : {}),
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
    if (retention.whenScaled === 'Delete') for (const c of claims) { try { store.delete(PVC, namespaceOf(sts), claimName(c, i)) } catch { /* already gone */ } }
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
  const pods = [...byOrdinal.values()].map((p) => store.get(POD, namespaceOf(p), String(p.metadata.name))).filter((p): p is KubeObject => p !== undefined)
  const updated = pods.filter((p) => p.metadata.labels?.['controller-revision-hash'] === updateRevision && isReady(p)).length
  if (updated === desired && pods.length === desired && partition === 0) currentRevision = updateRevision
  writeStatus(STATEFULSET, sts, statefulSetStatus(pods as PodView[], { current: currentRevision, update: updateRevision }, Number(sts.metadata.generation ?? 1)))
}
