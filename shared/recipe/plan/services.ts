/**
 * Services of recipe workloads (spec §5.7; `sessionAffinity` per §2.7 and §2.11). Pure.
 *
 * A workload with `ports` gets a ClusterIP Service `base(w)` in its namespace with the selector
 * `{app.kubernetes.io/instance: base(w)}`; a StatefulSet always gets one (its governing
 * Service) with `clusterIP: None`; Job, CronJob and `stdio` workloads get none.
 */
import { selectorLabels, workloadObjectLabels, type RecipeRef } from './labels.js'
import { serviceName } from './names.js'
import { childMeta, type Manifest, type WorkloadSource } from './objects.js'
import { compact } from './pod-template.js'

/** Whether Kinetic creates a Service for the workload. */
export function hasService(w: Pick<WorkloadSource, 'kind' | 'ports' | 'transport'>): boolean {
  if (w.kind === 'Job' || w.kind === 'CronJob' || w.transport === 'stdio') return false
  return w.kind === 'StatefulSet' || (w.ports ?? []).length > 0
}

/** `service.sessionAffinity` when set; else for `transport: http` `None` if `mcp.stateless`, `ClientIP` if not; else `None`. */
export function sessionAffinityOf(w: Pick<WorkloadSource, 'service' | 'transport' | 'mcp'>): 'None' | 'ClientIP' {
  if (w.service?.sessionAffinity) return w.service.sessionAffinity
  if (w.transport === 'http') return w.mcp?.stateless ? 'None' : 'ClientIP'
  return 'None'
}

/** The desired Service of a workload (without digest), or undefined when it has none. */
export function serviceManifest(recipe: RecipeRef, w: WorkloadSource, revision: number): Manifest | undefined {
  if (!hasService(w)) return undefined
  const ports = (w.ports ?? []).map((p) => ({
    name: p.name,
    port: p.port,
    targetPort: p.targetPort ?? p.port,
    protocol: p.protocol ?? 'TCP',
  }))
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMeta(recipe, serviceName(w.base), w.namespace, workloadObjectLabels(recipe, 'service', w.name, w.base, revision)),
    spec: compact({
      type: 'ClusterIP',
      clusterIP: w.kind === 'StatefulSet' ? 'None' : undefined,
      selector: selectorLabels(w.base),
      ports: ports.length > 0 ? ports : undefined,
      sessionAffinity: sessionAffinityOf(w),
      internalTrafficPolicy: w.service?.internalTrafficPolicy,
    }),
  }
}
