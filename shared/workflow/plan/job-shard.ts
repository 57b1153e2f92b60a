import { sha256Hex } from '../../core/sha256.js'

/**
 * Which of the jobs source's watches carries a step Job's events. Knative's ApiServerSource sends
 * each watch's events one at a time and, through the default synchronous channel, waits until
 * step-job-finished has answered; one watch over every step Job would let the whole cluster
 * advance by one finished step at a time. knative/sources/jobs.yaml watches each shard on its
 * own, so step-job-finished handles up to STEP_JOB_SHARDS finished steps at once, while the Jobs
 * of one Workflow stay on one watch and keep their order.
 */
export const STEP_JOB_SHARDS = 4

/** Pure: the shard of a Workflow's step Jobs, from its namespace and name (stable across releases). */
export function stepJobShard(namespace: string, workflow: string): string {
  return String(Number.parseInt(sha256Hex(`${namespace}/${workflow}`).slice(0, 8), 16) % STEP_JOB_SHARDS)
}
