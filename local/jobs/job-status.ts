/** A batch/v1 Job condition. */
export interface JobCondition {
  type: string
  status: 'True' | 'False'
  reason: string
  message: string
  lastProbeTime: string
  lastTransitionTime: string
}

/** How a Job ended. */
export type JobEnd =
  | { outcome: 'Complete' }
  | { outcome: 'Failed'; reason: 'BackoffLimitExceeded' | 'DeadlineExceeded'; message?: string }

/**
 * Pure: the terminal conditions the Job controller writes (Kubernetes 1.31+): an interim
 * `SuccessCriteriaMet` / `FailureTarget` followed by `Complete` / `Failed`, same reason.
 */
export function terminalConditions(end: JobEnd, now: string): JobCondition[] {
  const cond = (type: string, reason: string, message: string): JobCondition => ({ type, status: 'True', reason, message, lastProbeTime: now, lastTransitionTime: now })
  if (end.outcome === 'Complete') {
    const message = 'Reached expected number of succeeded pods'
    return [cond('SuccessCriteriaMet', 'CompletionsReached', message), cond('Complete', 'CompletionsReached', message)]
  }
  const message = end.message ?? (end.reason === 'DeadlineExceeded' ? 'Job was active longer than specified deadline' : 'Job has reached the specified backoff limit')
  return [cond('FailureTarget', end.reason, message), cond('Failed', end.reason, message)]
}

/** Pure: true when a Job status already carries `Complete=True` or `Failed=True`. */
export function isFinished(status: { conditions?: Array<{ type?: string; status?: string }> } | undefined): boolean {
  return (status?.conditions ?? []).some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')
}
