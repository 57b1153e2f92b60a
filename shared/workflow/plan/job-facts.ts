import type { V1Job } from '@kubernetes/client-node'
import { usageFrom, type Usage } from '../../agent/plan/metrics.js'
import { LABEL_ATTEMPT, LABEL_RUN_ID, LABEL_STEP, LABEL_WORKFLOW } from '../../schemas/labels.js'

/** Largest step output Kinetic stores (bytes of its JSON). Larger outputs fail the step. */
export const MAX_OUTPUT_BYTES = 256 * 1024

/** What a finished (or running) step Job tells the planner. */
export interface JobFact {
  name: string
  workflow: string
  step: string
  runId: string
  /** Attempt number, or 'rollback' for a compensation Job. */
  attempt: number | 'rollback'
  state: 'Active' | 'Succeeded' | 'Failed'
  /** Why a failed Job failed, as the Job controller put it (e.g. DeadlineExceeded). */
  failureReason?: string
  /** The Job's activeDeadlineSeconds, for a readable timeout message. */
  deadlineSeconds?: number
  /** When the Job started (its status.startTime, else its creation), for a compensation's latency. */
  startedAt?: string
  /** When the Job finished (completionTime, else its final condition's transition), for latencies. */
  finishedAt?: string
  /** Filled by the shell from the pod log when the planner needs it. */
  result?: StepResult
  /** When the attempt's container started, read with `result` (the step span's pod.started). */
  podStartedAt?: string
  /** Pods of the Job that are ready (its status.ready). */
  readyPods?: number
  /** Why its pod has not started, as the kubelet says (shared/kube/pod-waiting.ts); filled by the shell on a resync. */
  podWaiting?: string
}

/** The outcome read from a finished Job's pod log. */
export type StepResult =
  | { ok: true; json: string }
  | { ok: false; error: string; class: 'error' | 'timeout' | 'output'; usage?: Usage }

/** Pure: the fact a Job object carries, or null when it is not a Kinetic step Job. */
export function jobFactFrom(job: V1Job): JobFact | null {
  const labels = job.metadata?.labels ?? {}
  // Long Workflow names are shortened in labels; the owner reference carries the real one.
  const owner = job.metadata?.ownerReferences?.find((r) => r.kind === 'Workflow' && r.controller)
  const workflow = owner?.name ?? labels[LABEL_WORKFLOW]
  const step = labels[LABEL_STEP]
  const runId = labels[LABEL_RUN_ID]
  const name = job.metadata?.name
  if (!workflow || !step || !runId || !name) return null
  const attemptLabel = labels[LABEL_ATTEMPT] ?? '0'
  const attempt = attemptLabel === 'rollback' ? 'rollback' : Number.parseInt(attemptLabel, 10)
  if (attempt !== 'rollback' && !Number.isFinite(attempt)) return null
  const conditions = job.status?.conditions ?? []
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True')
  const complete = conditions.find((c) => (c.type === 'Complete' || c.type === 'SuccessCriteriaMet') && c.status === 'True')
  const state = failed ? 'Failed' : complete ? 'Succeeded' : 'Active'
  const fact: JobFact = { name, workflow, step, runId, attempt, state }
  if (failed?.reason) fact.failureReason = failed.reason
  if (typeof job.spec?.activeDeadlineSeconds === 'number') fact.deadlineSeconds = job.spec.activeDeadlineSeconds
  if (typeof job.status?.ready === 'number') fact.readyPods = job.status.ready
  const startedAt = isoOf(job.status?.startTime) ?? isoOf(job.metadata?.creationTimestamp)
  if (startedAt) fact.startedAt = startedAt
  const finishedAt = state === 'Active' ? undefined : isoOf(job.status?.completionTime) ?? isoOf((failed ?? complete)?.lastTransitionTime)
  if (finishedAt) fact.finishedAt = finishedAt
  return fact
}

/**
 * Pure: the step output from a pod log. The last line starting with `OUTPUT:` wins (purko's
 * rule); it must hold a JSON object no larger than MAX_OUTPUT_BYTES. No line means `{}`.
 */
export function resultFromLog(log: string): StepResult {
  let candidate: string | undefined
  for (const line of log.split('\n')) {
    if (line.startsWith('OUTPUT:')) candidate = line.slice('OUTPUT:'.length).trim()
  }
  if (candidate === undefined) return { ok: true, json: '{}' }
  if (utf8Length(candidate) > MAX_OUTPUT_BYTES) {
    return {
      ok: false,
      class: 'output',
      error: `OutputTooLarge: step output is ${utf8Length(candidate)} bytes; the limit is ${MAX_OUTPUT_BYTES} bytes`,
    }
  }
  let value: unknown
  try {
    value = JSON.parse(candidate)
  } catch {
    return { ok: false, class: 'output', error: 'InvalidOutput: the OUTPUT line is not valid JSON' }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    // Downstream inputFrom and conditions address keys, so a bare value is wrapped, not lost.
    return { ok: true, json: JSON.stringify({ value }) }
  }
  return { ok: true, json: JSON.stringify(value) }
}

/** Pure: why a step Job failed, from its condition reason and the last lines of its log. */
export function failureFromLog(log: string | null, reason: string | undefined, deadlineSeconds: number | undefined): StepResult {
  if (reason === 'DeadlineExceeded') {
    const limit = deadlineSeconds === undefined ? '' : ` of ${deadlineSeconds}s`
    return { ok: false, class: 'timeout', error: `Step exceeded its timeout${limit} (DeadlineExceeded)` }
  }
  if (log === null) return { ok: false, class: 'error', error: `job failed (no pods found)${reason ? `: ${reason}` : ''}` }
  // The executor reports its failure on the OUTPUT line; prefer that over raw log lines.
  const output = resultFromLog(log)
  // A failed attempt still spent tokens; the executor reports them beside the error.
  const parsed = output.ok ? JSON.parse(output.json) as Record<string, unknown> : {}
  const usage = usageFrom(parsed)
  const spent = usage.tokens > 0 || usage.costUSD > 0 ? { usage } : {}
  if (typeof parsed.error === 'string' && parsed.error.length > 0) {
    return { ok: false, class: 'error', error: truncate(parsed.error, 1024), ...spent }
  }
  const lines = log.split('\n').filter((l) => l.trim().length > 0).slice(-5)
  const text = lines.join('\n') || `job failed${reason ? `: ${reason}` : ''}`
  return { ok: false, class: 'error', error: truncate(text, 1024), ...spent }
}

/** Times arrive as Date from the client and as strings from JSON (events, fakes). */
function isoOf(value: Date | string | undefined): string | undefined {
  if (value === undefined || value === null) return undefined
  const ms = value instanceof Date ? value.getTime() : Date.parse(value)
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 3)}...`
}
