/**
 * What the Workflow controller learns from a step's pod: the result a finished Job's pod
 * reported in its log, and why a pod that should be running has not started.
 */
import { podWaitingDetail } from '../kube/pod-waiting.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Workflow } from '../schemas/workflow.js'
import { failureFromLog, resultFromLog, type JobFact } from './plan/job-facts.js'
import { jobsNeedingResults } from './plan/plan-inputs.js'

/** How long a step's pod may take to start (scheduling, an image pull) before a resync asks why it has not. */
export const POD_START_GRACE_MS = 60_000

/** Reads the report of each finished Job whose result the run has not recorded yet, into its fact. */
/** The port verbs of a run's step reports: the finished pods' reports, the pods that do not start. */
export const STEP_REPORT_VERBS = ['readStepReport', 'listPods'] as const satisfies readonly (keyof Kube)[]

export async function attachResults(kube: KubeVerbs<typeof STEP_REPORT_VERBS>, namespace: string, workflow: Workflow, jobs: JobFact[]): Promise<void> {
  for (const job of jobsNeedingResults(workflow, jobs)) {
    // A success needs only its OUTPUT line; a failure's message comes from the log's last lines.
    const report = await kube.readStepReport(namespace, job.name, job.state === 'Succeeded' ? 'output' : 'log')
    const log = report?.text ?? null
    if (report?.startedAt) job.podStartedAt = report.startedAt
    job.result = job.state === 'Succeeded'
      ? (log === null ? { ok: false, class: 'error', error: `job ${job.name} completed but its pod log is gone` } : resultFromLog(log))
      : failureFromLog(log, job.failureReason, job.deadlineSeconds)
  }
}

/**
 * On a resync: for each Job still without a ready pod a while after it started, the kubelet's
 * reason its pod waits (an image it cannot pull, a missing Secret), which the planner shows on the
 * step. A list call per such Job, only then: a healthy run pays nothing.
 */
export async function notePodsNotStarting(kube: KubeVerbs<typeof STEP_REPORT_VERBS>, namespace: string, jobs: JobFact[], now: Date): Promise<void> {
  for (const job of jobs) {
    if (job.state !== 'Active' || job.attempt === 'rollback' || (job.readyPods ?? 0) > 0) continue
    const started = Date.parse(job.startedAt ?? '')
    if (!Number.isFinite(started) || now.getTime() - started < POD_START_GRACE_MS) continue
    const waiting = podWaitingDetail(await kube.listPods(namespace, { 'job-name': job.name }))
    if (waiting) job.podWaiting = waiting
  }
}
