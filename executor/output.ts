import type { ExecutorConfig } from './config.js'
import { filterValue } from './content-filters.js'
import type { FailureReason } from './errors.js'
import { extractFields } from './extract.js'
import { scrubSecrets } from './log.js'

/** One entry of `tool_call_log`, in the shape purko's history reads. */
export interface ToolLogEntry {
  tool: string
  server: string
  elapsed_s: number
  input_preview: string
  result_bytes: number
  status: 'ok' | 'error' | 'blocked'
  reason?: string
}

/** The `_metrics` object: token, cost and tool-call totals for the controller's agent metrics. */
export interface Metrics {
  tokens_in: number
  tokens_out: number
  cost_usd: number
  tool_calls: number
  duration_ms: number
  autonomy: string
  provider: string
  model: string
}

/** Keys the executor owns; a model answer cannot set them. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['_metrics', '_memory_update', 'tool_call_log', 'tools_called'])

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** Pure: the model's final text as a JSON object (a lone ```json fenced block counts), or null. */
export function parseAnswerObject(text: string): Record<string, unknown> | null {
  const trimmed = text.trim()
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(trimmed)
  try {
    const v = JSON.parse(fenced?.[1] ?? trimmed) as unknown
    return isObject(v) ? v : null
  } catch {
    return null
  }
}

function stripReserved(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !RESERVED_KEYS.has(k)))
}

function withToolLog(out: Record<string, unknown>, log: readonly ToolLogEntry[]): void {
  if (log.length === 0) return
  out.tools_called = log.filter((e) => e.status !== 'blocked').map((e) => e.tool)
  out.tool_call_log = log
}

/**
 * Pure: the success OUTPUT object. A JSON-object answer has its top-level keys merged (so
 * `inputFrom` and conditions can use them); `response` is the answer's own `response` string
 * or else the answer text; Markdown fields such as `**Verdict**: approve` are lifted out; then
 * CONTENT_FILTERS redact every string except `_metrics`.
 */
export function successOutput(
  cfg: Pick<ExecutorConfig, 'step' | 'contentFilters'>,
  answer: string,
  metrics: Metrics,
  toolLog: readonly ToolLogEntry[],
  memoryUpdate: string | undefined,
): Record<string, unknown> {
  const obj = parseAnswerObject(answer)
  const structured = obj === null ? {} : stripReserved(obj)
  const response = typeof structured.response === 'string' ? structured.response : answer
  const out: Record<string, unknown> = { ...structured, response, step: typeof structured.step === 'string' ? structured.step : cfg.step }
  Object.assign(out, extractFields(response, out))
  withToolLog(out, toolLog)
  if (memoryUpdate !== undefined) out._memory_update = memoryUpdate
  const filtered = filterValue(out, cfg.contentFilters) as Record<string, unknown>
  return { ...filtered, _metrics: metrics }
}

/** Pure: the failure OUTPUT object `{error, reason, step, tool_call_log?, _metrics}`, filtered like a success. */
export function failureOutput(
  cfg: Pick<ExecutorConfig, 'step' | 'contentFilters'>,
  reason: FailureReason,
  message: string,
  metrics: Metrics | undefined,
  toolLog: readonly ToolLogEntry[],
): Record<string, unknown> {
  const out: Record<string, unknown> = { error: message, reason, step: cfg.step }
  withToolLog(out, toolLog)
  const filtered = filterValue(out, cfg.contentFilters) as Record<string, unknown>
  return metrics === undefined ? filtered : { ...filtered, _metrics: metrics }
}

/** Pure: the single stdout line, `OUTPUT:` + compact JSON, with every secret value scrubbed. */
export function outputLine(output: Record<string, unknown>, secrets: readonly string[]): string {
  return `OUTPUT:${scrubSecrets(JSON.stringify(output), secrets)}`
}

/** The controller stops scanning a pod log at a line of 1 MiB, so a longer OUTPUT line would be lost. */
export const MAX_OUTPUT_LINE_BYTES = 1024 * 1024 - 1

/**
 * Pure: the OUTPUT line for a result, or, when that line would pass MAX_OUTPUT_LINE_BYTES, the
 * line of an `OutputTooLarge` failure (keeping `_metrics`) with exit code 1.
 */
export function boundedOutputLine(
  output: Record<string, unknown>,
  exitCode: number,
  secrets: readonly string[],
  step: string,
): { line: string; exitCode: number } {
  const line = outputLine(output, secrets)
  const bytes = Buffer.byteLength(line)
  if (bytes <= MAX_OUTPUT_LINE_BYTES) return { line, exitCode }
  const failure: Record<string, unknown> = {
    error: `Output of ${bytes} bytes exceeds the ${MAX_OUTPUT_LINE_BYTES + 1}-byte OUTPUT line limit`,
    reason: 'OutputTooLarge',
    step,
    ...(output._metrics !== undefined ? { _metrics: output._metrics } : {}),
  }
  return { line: outputLine(failure, secrets), exitCode: 1 }
}
