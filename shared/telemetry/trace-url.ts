import { runSpanId, runTraceId, stepSpanId } from './ids.js'

/** The variable naming a trace UI's URL, with `{traceId}` and optionally `{spanId}` in it. */
export const TRACE_URL_VARIABLE = 'KINETIC_TRACE_URL_TEMPLATE'

/**
 * Pure: a problem with a trace URL template (not http(s), no `{traceId}`), or null when it is fine.
 * Jaeger: `https://jaeger.example/trace/{traceId}?uiFind={spanId}`; Tempo in Grafana and others take the id in their URL too.
 */
export function traceUrlTemplateProblem(template: string): string | null {
  if (!/^https?:\/\//.test(template)) return `${TRACE_URL_VARIABLE} must be an http(s) URL, got ${JSON.stringify(template)}`
  if (!template.includes('{traceId}')) return `${TRACE_URL_VARIABLE} must contain {traceId}, got ${JSON.stringify(template)}`
  return null
}

/** Pure: the trace UI's URL of a run (its root span), or of one step attempt when its Job is named. */
export function traceUrl(template: string, runId: string, jobName?: string): string {
  const spanId = jobName ? stepSpanId(jobName) : runSpanId(runId)
  return template.replaceAll('{traceId}', runTraceId(runId)).replaceAll('{spanId}', spanId)
}
