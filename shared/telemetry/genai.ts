import type { SpanSink } from './exporter.js'
import { parseTraceparent } from './ids.js'
import { randomSpanId, type Attributes, type SpanRecord } from './span.js'

/**
 * The executor's spans, in OpenTelemetry's GenAI semantic conventions: one `invoke_agent` span
 * per step attempt, below the attempt's span (TRACEPARENT), with a `chat` span per model call and
 * an `execute_tool` span per tool call. Prompts, responses and tool arguments are only attached
 * when content capture is on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
 */
export interface StepTracer {
  chat(call: ChatCall): void
  tool(call: ToolCallSpan): void
  /** Ends the agent span; `error` is the step's failure reason. */
  finish(end: AgentEnd): void
}

export interface ChatCall {
  startMs: number
  endMs: number
  tokensIn: number
  tokensOut: number
  costUsd: number
  finishReason?: string
  toolCalls: number
  /** Only used with content capture on. */
  input?: unknown
  output?: unknown
  error?: string
}

export interface ToolCallSpan {
  startMs: number
  endMs: number
  name: string
  callId: string
  /** The MCP server that answered, when one did. */
  server?: string
  status: 'ok' | 'error' | 'blocked'
  error?: string
  arguments?: unknown
  result?: string
}

export interface AgentEnd {
  endMs: number
  tokensIn: number
  tokensOut: number
  costUsd: number
  toolCalls: number
  error?: string
}

/** What the agent span says about the model. */
export interface ModelFacts {
  provider: string
  model: string
  maxTokens: number
  temperature: number
  workflow: string
  step: string
}

/** A tracer below `traceparent`, or undefined when it is missing or malformed (no spans then). */
/**
 * `scrub` removes secret values (the executor's model key and MCP tokens) from every text that
 * becomes an attribute or a status message: an API error may echo what it was sent.
 */
export function stepTracer(
  sink: SpanSink, traceparent: string | undefined, facts: ModelFacts, captureContent: boolean, startMs: number, scrub: (text: string) => string = (t) => t,
): StepTracer | undefined {
  const parent = parseTraceparent(traceparent)
  if (!sink.enabled || !parent) return undefined
  const traceId = parent.traceId
  const agentSpanId = randomSpanId()
  const model: Attributes = {
    'gen_ai.provider.name': facts.provider,
    'gen_ai.request.model': facts.model,
  }
  const content = (value: unknown) => (captureContent && value !== undefined ? scrub(typeof value === 'string' ? value : JSON.stringify(value)) : undefined)
  const record = (span: Omit<SpanRecord, 'traceId'>) => sink.record({ traceId, ...span, ...(span.error !== undefined ? { error: scrub(span.error) } : {}) })
  return {
    chat(c) {
      record({
        name: `chat ${facts.model}`, spanId: randomSpanId(), parentSpanId: agentSpanId, kind: 'client', startMs: c.startMs, endMs: c.endMs,
        attributes: {
          'gen_ai.operation.name': 'chat',
          ...model,
          'gen_ai.request.max_tokens': facts.maxTokens,
          'gen_ai.request.temperature': facts.temperature,
          'gen_ai.usage.input_tokens': c.tokensIn,
          'gen_ai.usage.output_tokens': c.tokensOut,
          'gen_ai.response.finish_reasons': c.finishReason ? [c.finishReason] : undefined,
          'kinetic.gen_ai.cost_usd': c.costUsd,
          'kinetic.gen_ai.tool_calls': c.toolCalls,
          'gen_ai.input.messages': content(c.input),
          'gen_ai.output.messages': content(c.output),
          ...(c.error ? { 'error.type': 'ModelError' } : {}),
        },
        ...(c.error ? { error: c.error.slice(0, 256) } : {}),
      })
    },
    tool(t) {
      record({
        name: `execute_tool ${t.name}`, spanId: randomSpanId(), parentSpanId: agentSpanId, kind: 'internal', startMs: t.startMs, endMs: t.endMs,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': t.name,
          'gen_ai.tool.call.id': t.callId,
          'gen_ai.tool.type': t.server ? 'extension' : 'function',
          'mcp.method.name': t.server ? 'tools/call' : undefined,
          'kinetic.mcp.server': t.server,
          'kinetic.tool.status': t.status,
          'gen_ai.tool.call.arguments': content(t.arguments),
          'gen_ai.tool.call.result': content(t.result),
          ...(t.status !== 'ok' ? { 'error.type': t.status === 'blocked' ? 'ToolBlocked' : 'ToolError' } : {}),
        },
        ...(t.status !== 'ok' ? { error: (t.error ?? t.status).slice(0, 256) } : {}),
      })
    },
    finish(end) {
      record({
        name: `invoke_agent ${facts.step}`, spanId: agentSpanId, parentSpanId: parent.spanId, kind: 'internal', startMs, endMs: end.endMs,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          ...model,
          'gen_ai.usage.input_tokens': end.tokensIn,
          'gen_ai.usage.output_tokens': end.tokensOut,
          'kinetic.gen_ai.cost_usd': end.costUsd,
          'kinetic.gen_ai.tool_calls': end.toolCalls,
          'kinetic.workflow': facts.workflow,
          'kinetic.step.name': facts.step,
          ...(end.error ? { 'error.type': end.error } : {}),
        },
        ...(end.error ? { error: end.error } : {}),
      })
    },
  }
}
