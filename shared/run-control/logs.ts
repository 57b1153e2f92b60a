/**
 * GET /api/logs: purko's `{"lines": [...], "status", "pod"}` view of a step's log (SPEC
 * Appendix A). Pure: the Jobs, pods and log text come in as read.
 */
import type { V1Job, V1Pod } from '@kubernetes/client-node'
import { isFinishedStepPhase } from '../workflow/plan/run-status.js'
import type { StepPhase, StepStatus } from '../schemas/workflow.js'

/** Lines of the log's end that are returned, as purko does. */
export const LOG_LINES = 100

export interface LogsView {
  lines: string[]
  /** `running`, `complete`, `failed`; `no job` / `no pods` when there is nothing to read. */
  status: string
  pod?: string
  /** Why the lines are empty although there is a pod (its log cannot be read yet). */
  message?: string
}

const time = (o: { metadata?: { creationTimestamp?: Date | string } }) => new Date(o.metadata?.creationTimestamp ?? 0).getTime()

/**
 * Pure: the step's Job to show: the one its status names (the current attempt) when listed,
 * else the newest (by creation, then name).
 */
export function chooseJob(jobs: readonly V1Job[], current: string | undefined): V1Job | undefined {
  const named = current === undefined ? undefined : jobs.find((j) => j.metadata?.name === current)
  if (named) return named
  return [...jobs].sort((a, b) => time(b) - time(a) || (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? ''))[0]
}

/** Pure: the Job's first pod, as the API server lists them (purko takes the first). */
export function choosePod(pods: readonly V1Pod[]): V1Pod | undefined {
  return pods[0]
}

/** Pure: `complete` or `failed` from the Job's conditions (or counts), else `running`. */
export function jobState(job: V1Job): 'running' | 'complete' | 'failed' {
  const conditions = job.status?.conditions ?? []
  const holds = (type: string) => conditions.some((c) => c.type === type && c.status === 'True')
  if (holds('Complete') || holds('SuccessCriteriaMet')) return 'complete'
  if (holds('Failed') || holds('FailureTarget')) return 'failed'
  return 'running'
}

/** Pure: the last `n` lines of a log (a trailing newline ends the last line, it does not start another). */
export function tailLines(log: string, n = LOG_LINES): string[] {
  if (log === '') return []
  const lines = log.replace(/\r\n/g, '\n').split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines.slice(-n)
}

/**
 * Pure: what is shown without a Job or pod to read: a finished step's error lines and its
 * `OUTPUT:` line, rebuilt from its status (status `failed` when it failed, else `complete`);
 * otherwise no lines and `no job` / `no pods`.
 */
export function statusLogView(phase: StepPhase | undefined, step: StepStatus | undefined, missing: 'no job' | 'no pods'): LogsView {
  if (!isFinishedStepPhase(phase)) return { lines: [], status: missing }
  const lines = step?.error ? step.error.split('\n') : []
  const output = step?.output === undefined ? '' : JSON.stringify(step.output)
  if (output.length > 2) lines.push(`OUTPUT:${output}`)
  return { lines: lines.slice(-LOG_LINES), status: phase === 'Failed' ? 'failed' : 'complete' }
}
