/**
 * Where a step's log is: its Job and that Job's pod, read as the caller of `kube` may. Shared by
 * run-control's GET /api/logs and the console's step page and log stream.
 */
import type { V1Job } from '@kubernetes/client-node'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { labelValue } from '../workflow/plan/job-builder.js'
import { LABEL_STEP, LABEL_WORKFLOW } from '../schemas/labels.js'
import { podWaitingDetail } from '../kube/pod-waiting.js'
import { chooseJob, choosePod } from './logs.js'

/** Where a step's log is, and why its pod has not started when the kubelet says so. */
export interface StepPod {
  job?: V1Job
  pod?: string
  /** e.g. `pod x container main: ImagePullBackOff: Back-off pulling image "..."` (shared/kube/pod-waiting.ts). */
  waiting?: string
}

/** The Job to show (the current attempt `currentJob` when listed, else the newest) and its pod; a list call each. */
/** The port verbs of findStepPod: the step's Jobs, then their pods. */
export const STEP_POD_VERBS = ['listJobs', 'listPods'] as const satisfies readonly (keyof Kube)[]

export async function findStepPod(kube: KubeVerbs<typeof STEP_POD_VERBS>, namespace: string, workflow: string, step: string, currentJob: string | undefined): Promise<StepPod> {
  const job = chooseJob(await kube.listJobs(namespace, { [LABEL_WORKFLOW]: labelValue(workflow), [LABEL_STEP]: labelValue(step) }), currentJob)
  const jobName = job?.metadata?.name
  if (!job || !jobName) return {}
  const chosen = choosePod(await kube.listPods(namespace, { 'job-name': jobName }))
  const pod = chosen?.metadata?.name
  if (!chosen || !pod) return { job }
  const waiting = podWaitingDetail([chosen])
  return waiting ? { job, pod, waiting } : { job, pod }
}
