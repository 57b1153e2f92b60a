import { createHash } from 'node:crypto'

/**
 * Trace identity without stored state: every id of a run's trace is a digest of the run id (which
 * already names the rerun attempt) and of the Job or step it belongs to, so any function instance,
 * on any delivery or redelivery, derives the same root and the same parents.
 */

const hex = (text: string) => createHash('sha256').update(text).digest('hex')

/** The 32-hex trace id of a run (one trace per run attempt). */
export function runTraceId(runId: string): string {
  return hex(runId).slice(0, 32)
}

/** The span id of a run's root span. */
export function runSpanId(runId: string): string {
  return hex(`run/${runId}`).slice(0, 16)
}

/** The span id of one step attempt, keyed by its Job (a retry is another Job, so another span). */
export function stepSpanId(jobName: string): string {
  return hex(jobName).slice(0, 16)
}

/** The span id of a step's wait for human approval in a run. */
export function approvalSpanId(runId: string, step: string): string {
  return hex(`approval/${runId}/${step}`).slice(0, 16)
}

/** The span id of the backoff before a step's attempt `attempt` (a retry) in a run. */
export function backoffSpanId(runId: string, step: string, attempt: number): string {
  return hex(`backoff/${runId}/${step}/${attempt}`).slice(0, 16)
}

/** W3C traceparent of a sampled span. */
export function traceparentOf(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`
}

/** The traceparent a step's Job carries (TRACEPARENT): its attempt span in its run's trace. */
export function stepTraceparent(runId: string, jobName: string): string {
  return traceparentOf(runTraceId(runId), stepSpanId(jobName))
}

/** A span's place in a trace. */
export interface SpanContextIds {
  traceId: string
  spanId: string
  sampled: boolean
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * Pure: the ids of a W3C traceparent, or null when it is malformed (wrong shape, version ff, an
 * all-zero id): the caller then starts a new trace rather than failing the work.
 */
export function parseTraceparent(value: string | undefined | null): SpanContextIds | null {
  if (typeof value !== 'string') return null
  const m = TRACEPARENT.exec(value.trim())
  if (!m) return null
  const [, version, traceId, spanId, flags] = m as unknown as [string, string, string, string, string]
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return null
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 }
}
