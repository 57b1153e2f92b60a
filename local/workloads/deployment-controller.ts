import type { KubeObject } from '../apiserver/index.js'
import { deploymentStatus, intOrPercent, isActive, isReady, matchLabels, replicaSetStatus, templateHash, type PodView, type ReplicaSetView, type WorkloadCondition } from './status.js'
import {
  CONTROLLER, DEPLOYMENT, namespaceOf, nodeSpec, ownerRef, POD, REPLICASET, replicasOf, specOf,
  type WorkloadContext, type Template,
} from './workload-context.js'

/** The Deployment and ReplicaSet controllers of the workload emulation (controllers.ts runs them). */

/** Deployment -> ReplicaSets: the new template's ReplicaSet scaled up as a rolling update (or Recreate) allows, the old ones down and pruned, and the Deployment's status. */
export function reconcileDeployment(context: WorkloadContext, deployment: KubeObject): void {
  const { store, log, iso, owned, writeStatus } = context
  const spec = specOf(deployment)
  const template = (spec.template ?? {}) as Template
  const desired = replicasOf(deployment)
  const selector = matchLabels(spec.selector)
  const all = owned(REPLICASET, deployment)
  const hash = templateHash(template)
  const rsName = `${String(deployment.metadata.name)}-${hash}`
  let newRs = all.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash)
  const revisions = all.map((rs) => Number(rs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0))
  const maxRevision = Math.max(0, ...revisions)
  const strategy = (spec.strategy ?? {}) as { type?: string; rollingUpdate?: { maxUnavailable?: unknown; maxSurge?: unknown } }
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
      metadata: { name: rsName, namespace: namespaceOf(deployment), labels: podLabels, annotations: annotations(maxRevision + 1), ownerReferences: [ownerRef(deployment)] },
      spec: {
        replicas: newTarget,
        ...(spec.minReadySeconds !== undefined ? { minReadySeconds: spec.minReadySeconds } : {}),
        selector: { matchLabels: { ...selector, 'pod-template-hash': hash } },
        template: { ...template, metadata: { ...(template.metadata ?? {}), labels: podLabels } },
      },
    }, {})
    created = true
    log.debug({ namespace: namespaceOf(deployment), deployment: deployment.metadata.name, replicaSet: rsName }, 'Created ReplicaSet')
  } else {
    const rev = Number(newRs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0)
    const wantAnnotations = annotations(rev < maxRevision ? maxRevision + 1 : rev)
    const rsSpec = specOf(newRs)
    if (rsSpec.replicas !== newTarget || Object.entries(wantAnnotations).some(([k, v]) => newRs?.metadata.annotations?.[k] !== v)) {
      newRs = store.update({ ...newRs, metadata: { ...newRs.metadata, annotations: { ...(newRs.metadata.annotations ?? {}), ...wantAnnotations } }, spec: { ...rsSpec, replicas: newTarget } })
    }
  }
  const newStatus = (newRs.status ?? {}) as { availableReplicas?: number }
  // RollingUpdate: old ReplicaSets go to 0 once the new one is available; Recreate: at once.
  if (recreate || (newStatus.availableReplicas ?? 0) >= desired) {
    for (const rs of old) if (specOf(rs).replicas !== 0) store.update({ ...rs, spec: { ...specOf(rs), replicas: 0 } })
  }
  // revisionHistoryLimit (default 10): the oldest scaled-down ReplicaSets go.
  const limit = typeof spec.revisionHistoryLimit === 'number' ? spec.revisionHistoryLimit : 10
  const drained = old.filter((rs) => specOf(rs).replicas === 0 && Number((rs.status as { replicas?: number } | undefined)?.replicas ?? 0) === 0)
    .sort((a, b) => Number(a.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0) - Number(b.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0))
  for (const rs of drained.slice(0, Math.max(0, drained.length - limit))) store.delete(REPLICASET, namespaceOf(rs), String(rs.metadata.name), { propagationPolicy: 'Background' })

  const revision = newRs.metadata.annotations?.['deployment.kubernetes.io/revision']
  if (revision && deployment.metadata.annotations?.['deployment.kubernetes.io/revision'] !== revision) {
    store.patch(DEPLOYMENT, namespaceOf(deployment), String(deployment.metadata.name), { metadata: { annotations: { 'deployment.kubernetes.io/revision': revision } } }, { type: 'merge', fieldManager: CONTROLLER })
  }
  const view = (rs: KubeObject): ReplicaSetView => ({ name: String(rs.metadata.name), status: (rs.status ?? {}) as ReplicaSetView['status'], specReplicas: replicasOf(rs) })
  const current = owned(REPLICASET, deployment)
  const newView = current.find((rs) => rs.metadata.uid === newRs?.metadata.uid)
  const status = deploymentStatus({
    desired, generation: Number(deployment.metadata.generation ?? 1), maxUnavailable,
    newRs: newView ? view(newView) : undefined, allRs: current.map(view),
    createdNewRs: created,
    conditions: ((deployment.status as { conditions?: WorkloadCondition[] } | undefined)?.conditions ?? []), now: iso(),
  })
  writeStatus(DEPLOYMENT, deployment, status)
}

/** ReplicaSet -> Pods: creates or deletes pods (not-ready, then newest first) to the desired count, and writes the ReplicaSet's status. */
export function reconcileReplicaSet(context: WorkloadContext, rs: KubeObject): void {
  const { nodes, owned, writeStatus, createPod, deletePod, podBody } = context
  const spec = specOf(rs)
  const template = (spec.template ?? {}) as Template
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
  writeStatus(REPLICASET, rs, replicaSetStatus(live as PodView[], matchLabels(spec.selector), template.metadata?.labels ?? {}, Number(rs.metadata.generation ?? 1)))
}
