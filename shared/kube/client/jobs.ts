import type { V1Job, V1Pod } from '@kubernetes/client-node'
import type { StepReport } from '../port.js'
import { selector, type KubeApi } from './kube-api.js'

/** The port's verbs over step Jobs, and what a Job's pod tells: its log, its termination message. */
export function jobVerbs(api: KubeApi) {
  return {
    async listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]> {
      const list = await api.call(() => api.batch.listNamespacedJob({ namespace, labelSelector: selector(labels) }), `list Jobs in ${namespace}`)
      return list.items
    },

    async listJobsLabelled(namespace: string, labelKey: string): Promise<V1Job[]> {
      const list = await api.call(() => api.batch.listNamespacedJob({ namespace, labelSelector: labelKey }), `list Jobs labelled ${labelKey} in ${namespace}`)
      return list.items
    },

    async createJob(job: V1Job): Promise<'created' | 'exists'> {
      const namespace = job.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.batch.createNamespacedJob({ namespace, body: job }), `create Job ${namespace}/${job.metadata?.name}`)
    },

    async deleteJob(namespace: string, name: string): Promise<void> {
      await api.orNull(
        () => api.batch.deleteNamespacedJob({ namespace, name, propagationPolicy: 'Background' }),
        `delete Job ${namespace}/${name}`,
      )
    },

    async readJobLog(namespace: string, jobName: string): Promise<string | null> {
      const pod = await jobPod(api, namespace, jobName)
      return pod ? podLog(api, namespace, pod) : null
    },

    async readStepReport(namespace: string, jobName: string, want: 'output' | 'log'): Promise<StepReport | null> {
      const pod = await jobPod(api, namespace, jobName)
      if (!pod) return null
      const containers = pod.status?.containerStatuses ?? []
      const message = want === 'output' ? containers.map((c) => c.state?.terminated?.message).find((m) => m?.startsWith('OUTPUT:')) : undefined
      const started = containers.map((c) => c.state?.terminated?.startedAt ?? c.state?.running?.startedAt).find((t) => t !== undefined)
      return {
        text: message ?? await podLog(api, namespace, pod),
        ...(started !== undefined ? { startedAt: new Date(started).toISOString() } : {}),
      }
    },
  }
}

/** The first pod of a Job (`job-name=<job>`), or null when it has none. */
async function jobPod(api: KubeApi, namespace: string, jobName: string): Promise<V1Pod | null> {
  const pods = await api.call(() => api.core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` }), `list pods of Job ${namespace}/${jobName}`)
  const pod = pods.items[0]
  return pod?.metadata?.name ? pod : null
}

/**
 * A pod's log; null when the pod is gone. A pod no node runs yet (unschedulable, or waiting for
 * the scheduler) has no log: it is not asked for, since kube-apiserver answers 204 No Content
 * there, which client-node cannot parse (it has no Content-Type).
 */
async function podLog(api: KubeApi, namespace: string, pod: V1Pod): Promise<string | null> {
  if (!pod.spec?.nodeName) return ''
  const name = pod.metadata!.name!
  const log = await api.orNull(() => api.core.readNamespacedPodLog({ namespace, name }), `read log of pod ${namespace}/${name}`)
  return log === null ? null : String(log)
}
