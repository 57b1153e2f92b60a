import type { KubeObject } from '../apiserver/index.js'
import { cronJobJobName, dueSchedule, rfc3339 } from './cron.js'
import {
  CRONJOB, JOB, namespaceOf, ownerRef, specOf,
  type WorkloadContext, type Spec,
} from './workload-context.js'

/** The CronJob controller of the workload emulation (controllers.ts runs it); the Jobs it creates are the local Job runner's. */

/** CronJob -> Jobs on schedule: one Job per due time under the concurrency policy, the history limits, and the CronJob's status. */
export function reconcileCronJob(context: WorkloadContext, cj: KubeObject): void {
  const { store, log, now, owned, writeStatus } = context
  const spec = specOf(cj)
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
  if (spec.suspend !== true && typeof spec.schedule === 'string') {
    const since = new Date(lastScheduleTime ?? String(cj.metadata.creationTimestamp))
    let due: ReturnType<typeof dueSchedule> | undefined
    try {
      due = dueSchedule(spec.schedule, {
        since, now: now(),
        ...(typeof spec.timeZone === 'string' ? { timeZone: spec.timeZone } : {}),
        ...(typeof spec.startingDeadlineSeconds === 'number' ? { startingDeadlineSeconds: spec.startingDeadlineSeconds } : {}),
      })
    } catch (err) {
      log.warn({ namespace: namespaceOf(cj), cronJob: name, schedule: spec.schedule, err: String(err) }, 'CronJob schedule does not parse; no Jobs are created')
    }
    const policy = String(spec.concurrencyPolicy ?? 'Allow')
    if (due?.at && !(policy === 'Forbid' && active.length > 0)) {
      if (policy === 'Replace') {
        for (const j of active) store.delete(JOB, namespaceOf(j), String(j.metadata.name), { propagationPolicy: 'Background' })
        active = []
      }
      const jobName = cronJobJobName(name, due.at)
      const template = (spec.jobTemplate ?? {}) as { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Spec }
      if (!store.get(JOB, namespaceOf(cj), jobName)) {
        const job = store.create({
          apiVersion: 'batch/v1', kind: 'Job',
          metadata: {
            name: jobName, namespace: namespaceOf(cj),
            ...(template.metadata?.labels ? { labels: { ...template.metadata.labels } } : {}),
            annotations: { ...(template.metadata?.annotations ?? {}), 'batch.kubernetes.io/cronjob-scheduled-timestamp': rfc3339(due.at) },
            ownerReferences: [ownerRef(cj)],
          },
          spec: { ...(template.spec ?? {}) },
        })
        active.push(job)
        log.info({ namespace: namespaceOf(cj), cronJob: name, job: jobName, scheduled: rfc3339(due.at) }, 'CronJob created a Job')
      }
      lastScheduleTime = rfc3339(due.at)
    }
  }
  // History limits: the oldest finished Jobs beyond successfulJobsHistoryLimit (3) / failedJobsHistoryLimit (1) go.
  const prune = (outcome: string, limit: number) => {
    const done = jobs.filter((j) => finished(j) === outcome).sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)) || String(a.metadata.name).localeCompare(String(b.metadata.name)))
    for (const j of done.slice(0, Math.max(0, done.length - limit))) {
      try { store.delete(JOB, namespaceOf(j), String(j.metadata.name), { propagationPolicy: 'Background' }) } catch { /* already gone */ }
    }
  }
  prune('Complete', typeof spec.successfulJobsHistoryLimit === 'number' ? spec.successfulJobsHistoryLimit : 3)
  prune('Failed', typeof spec.failedJobsHistoryLimit === 'number' ? spec.failedJobsHistoryLimit : 1)
  const status: Record<string, unknown> = {}
  if (active.length > 0) {
    status.active = active.map((j) => ({ apiVersion: 'batch/v1', kind: 'Job', name: j.metadata.name, namespace: namespaceOf(j), uid: j.metadata.uid, resourceVersion: j.metadata.resourceVersion }))
  }
  if (lastScheduleTime) status.lastScheduleTime = lastScheduleTime
  if (lastSuccessfulTime) status.lastSuccessfulTime = lastSuccessfulTime
  writeStatus(CRONJOB, cj, status)
}
