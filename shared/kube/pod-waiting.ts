// Why a pod has not started, read from its container statuses (no I/O).

export interface PodLike {
  metadata?: { name?: string }
  status?: { containerStatuses?: { name?: string; state?: { waiting?: { reason?: string; message?: string } } }[]; initContainerStatuses?: { name?: string; state?: { waiting?: { reason?: string; message?: string } } }[] }
}

/**
 * Pure: why pods are not running, as the kubelet says: the first container (init containers
 * first, pods by name) waiting for a reason other than being created or initialised, e.g.
 * `ImagePullBackOff` or `CreateContainerConfigError`, with its message. Recipes show it as a
 * workload's readiness detail (spec §6), the console and run-control for a step's pod.
 */
export function podWaitingDetail(pods: readonly PodLike[]): string | undefined {
  const named = [...pods].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
  for (const pod of named) {
    for (const c of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      const waiting = c.state?.waiting
      if (waiting?.reason && waiting.reason !== 'ContainerCreating' && waiting.reason !== 'PodInitializing') {
        return `pod ${pod.metadata?.name ?? ''} container ${c.name ?? ''}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
      }
    }
  }
  return undefined
}
