import type { KubeObject } from '../apiserver/index.js'
import { daemonSetStatus, isActive, labelsMatch, templateHash, type PodView } from './status.js'
import {
  CONTROLLER, DAEMONSET, namespaceOf, nodeSpec, POD, specOf,
  type WorkloadContext, type Template,
} from './workload-context.js'

/** The DaemonSet controller of the workload emulation (controllers.ts runs it). */

/** DaemonSet -> one Pod per eligible node: replaced on a template change, relabelled on a generation change, and the DaemonSet's status. */
export function reconcileDaemonSet(context: WorkloadContext, ds: KubeObject): void {
  const { store, nodes, owned, writeStatus, createPod, deletePod, podBody } = context
  const spec = specOf(ds)
  const name = String(ds.metadata.name)
  const template = (spec.template ?? {}) as Template
  const generation = String(ds.metadata.generation ?? 1)
  const hash = templateHash(template)
  const nodeSelector = ((template.spec?.nodeSelector ?? {}) as Record<string, string>)
  const eligible = nodes.filter((n) => labelsMatch(nodeSelector, { 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', ...(n.labels ?? {}) }))
  const pods = owned(POD, ds).filter(isActive)
  const byNode = new Map<string, PodView | undefined>()
  for (const node of eligible) {
    let pod = pods.find((p) => (p.spec as { nodeName?: string } | undefined)?.nodeName === node.name)
    const rolling = ((spec.updateStrategy as { type?: string } | undefined)?.type ?? 'RollingUpdate') === 'RollingUpdate'
    if (pod && rolling && pod.metadata.labels?.['controller-revision-hash'] !== hash) {
      deletePod(pod)
      pod = undefined
    }
    if (!pod) {
      const labels = { ...(template.metadata?.labels ?? {}), 'controller-revision-hash': hash, 'pod-template-generation': generation }
      pod = createPod(podBody(ds, template, { generateName: `${name}-`, labels }, nodeSpec(node.name)))
    } else if (pod.metadata.labels?.['controller-revision-hash'] === hash && pod.metadata.labels?.['pod-template-generation'] !== generation) {
      // A spec change that leaves the template alone: the pod is relabelled, not replaced.
      pod = store.patch(POD, namespaceOf(pod), String(pod.metadata.name), { metadata: { labels: { 'pod-template-generation': generation } } }, { type: 'merge', fieldManager: CONTROLLER })
    }
    byNode.set(node.name, store.get(POD, namespaceOf(ds), String(pod.metadata.name)) as PodView | undefined)
  }
  for (const p of pods) if (!eligible.some((n) => n.name === (p.spec as { nodeName?: string } | undefined)?.nodeName)) deletePod(p)
  writeStatus(DAEMONSET, ds, daemonSetStatus(byNode, generation, Number(ds.metadata.generation ?? 1)))
}
