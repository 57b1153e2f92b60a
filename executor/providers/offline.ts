import { z } from 'zod'
import { ConfigError, StepError } from '../errors.js'
import { estimateTokens } from '../pricing.js'
import type { ChatRequest, ChatResponse, ModelProvider, ToolCall, ToolResult } from './types.js'

/**
 * The deterministic offline "model" used by local runs, the CI demo and tests: no network, no
 * clock, no randomness, so the same environment always gives the same answer. It is scripted by
 * agent `spec.runtime.config` entries, which reach the executor as EXECUTOR_* variables:
 *
 * - EXECUTOR_OFFLINE_FAIL: the model call fails with this message (the step exits 1).
 * - EXECUTOR_OFFLINE_TOOL_CALLS: JSON array of `{name, arguments}`; the model asks for these
 *   one per turn, in order, before it answers.
 * - EXECUTOR_OFFLINE_RESPONSE: the final answer (a JSON object's keys reach the output).
 *
 * Without a scripted response it answers with a JSON object naming the step and summarising
 * its input, and merges the keys of an `offline` object found in STEP_INPUT, so workflows with
 * conditions (`steps.route.output.sources contains web`) can be exercised without a model.
 *
 * A step (not the whole agent) picks an MCP tool with an `mcp` directive in its STEP_INPUT:
 * `{"mcp": {"server", "tool", "arguments"}}` or an array of them. Those calls go first, to the
 * named server, and their results (structuredContent, or the text when there is none) come back
 * under the answer's `mcp` key, so a later step reads them through `${steps.X.output.mcp...}`. A
 * directive call that fails makes the answer carry `error`, which fails the step (AgentError).
 */

const ScriptSchema = z.array(
  z.looseObject({
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()).optional(),
  }),
)

const DirectiveSchema = z.strictObject({
  server: z.string().min(1),
  tool: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
})

/** One `mcp` directive of STEP_INPUT: call `tool` on `server` with `arguments`. */
export type McpDirective = z.infer<typeof DirectiveSchema>

/** What a directive's call answered, as it appears under the answer's `mcp` key. */
export interface McpDirectiveResult {
  server: string
  tool: string
  isError: boolean
  structuredContent?: Record<string, unknown>
  /** The result text, only when the tool sent no structuredContent. */
  text?: string
}

/** What the offline provider needs from the configuration. */
export interface OfflineOptions {
  step: string
  workflow: string
  input: unknown
  /** EXECUTOR_* values with the prefix removed. */
  script: Readonly<Record<string, string>>
}

const SUMMARY_CHARS = 120

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function summarise(input: unknown): string {
  let text: string
  if (isObject(input)) {
    const preferred = [input.task, input.raw, input.description, input.prompt].find((v) => typeof v === 'string' && v.trim() !== '')
    if (typeof preferred === 'string') text = preferred
    else {
      const { offline: _ignored, mcp: _directive, ...rest } = input
      text = Object.keys(rest).length === 0 ? 'no input' : JSON.stringify(rest)
    }
  } else text = typeof input === 'string' ? input : JSON.stringify(input)
  const oneLine = text.replace(/\s+/g, ' ').trim()
  return oneLine.length > SUMMARY_CHARS ? `${oneLine.slice(0, SUMMARY_CHARS - 3)}...` : oneLine
}

/**
 * Pure: the `mcp` directive of a step input as a list (an object is a list of one), and whether
 * it was given as one object; null when the input has no `mcp` key. Throws ConfigError when the
 * key is there but is not a directive, rather than guessing what it meant.
 */
export function parseMcpDirective(input: unknown): { calls: McpDirective[]; single: boolean } | null {
  if (!isObject(input) || !Object.hasOwn(input, 'mcp')) return null
  const single = !Array.isArray(input.mcp)
  const parsed = z.array(DirectiveSchema).min(1).safeParse(single ? [input.mcp] : input.mcp)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue !== undefined && issue.path.length > 0 ? ` (at ${issue.path.join('.')}: ${issue.message})` : ''
    throw new ConfigError([`STEP_INPUT.mcp: must be {server, tool, arguments?} or a non-empty array of them${where}`])
  }
  return { calls: parsed.data, single }
}

const DIRECTIVE_ID = 'mcp_'
const ERROR_TEXT_CHARS = 500

/** Pure: the directive's results, in directive order, from the tool messages of the conversation. */
function directiveResults(calls: readonly McpDirective[], messages: ChatRequest['messages']): McpDirectiveResult[] {
  const byId = new Map<string, ToolResult>()
  for (const m of messages) if (m.role === 'tool') for (const r of m.results) byId.set(r.callId, r)
  return calls.map((call, i) => {
    const r = byId.get(`${DIRECTIVE_ID}${i + 1}`)
    if (r === undefined) return { server: call.server, tool: call.tool, isError: true, text: 'not called' }
    return {
      server: call.server,
      tool: call.tool,
      isError: r.isError,
      ...(r.structuredContent !== undefined ? { structuredContent: r.structuredContent } : { text: r.content }),
    }
  })
}

/** Pure: the `error` text for failed directive calls, or undefined when every call succeeded. */
function directiveError(results: readonly McpDirectiveResult[], texts: ReadonlyMap<string, string>): string | undefined {
  const failed = results.map((r, i) => ({ r, i })).filter(({ r }) => r.isError)
  if (failed.length === 0) return undefined
  return failed
    .map(({ r, i }) => `MCP tool ${r.server}/${r.tool} failed: ${(texts.get(`${DIRECTIVE_ID}${i + 1}`) ?? r.text ?? '').slice(0, ERROR_TEXT_CHARS)}`)
    .join('; ')
}

/** Pure: the answer the offline model gives when no response is scripted. */
export function defaultOfflineAnswer(opts: OfflineOptions, toolsUsed: readonly string[]): Record<string, unknown> {
  const extra = isObject(opts.input) && isObject(opts.input.offline) ? opts.input.offline : {}
  const used = toolsUsed.length > 0 ? ` (tools: ${toolsUsed.join(', ')})` : ''
  return {
    response: `${opts.step} done: ${summarise(opts.input)}${used}`,
    step: opts.step,
    workflow: opts.workflow,
    ...extra,
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown
    return isObject(v) ? v : null
  } catch {
    return null
  }
}

/** The offline ModelProvider; throws ConfigError at construction when the tool-call script is not valid JSON. */
export function offlineProvider(opts: OfflineOptions): ModelProvider {
  let script: z.infer<typeof ScriptSchema> = []
  const scriptText = opts.script.OFFLINE_TOOL_CALLS
  if (scriptText !== undefined && scriptText.trim() !== '') {
    let value: unknown
    try {
      value = JSON.parse(scriptText)
    } catch {
      throw new ConfigError(['EXECUTOR_OFFLINE_TOOL_CALLS: must be valid JSON'])
    }
    const parsed = ScriptSchema.safeParse(value)
    if (!parsed.success) throw new ConfigError(['EXECUTOR_OFFLINE_TOOL_CALLS: must be a JSON array of {name, arguments}'])
    script = parsed.data
  }
  const directive = parseMcpDirective(opts.input)
  // The step's own directive goes before the agent's script: it is what this step is for.
  const plan: ToolCall[] = [
    ...(directive?.calls ?? []).map((d, i) => ({ id: `${DIRECTIVE_ID}${i + 1}`, name: d.tool, arguments: d.arguments ?? {}, server: d.server })),
    ...script.map((c, i) => ({ id: `call_${(directive?.calls.length ?? 0) + i + 1}`, name: c.name, arguments: c.arguments ?? {} })),
  ]
  const fail = opts.script.OFFLINE_FAIL
  const scripted = opts.script.OFFLINE_RESPONSE

  return {
    name: 'offline',
    async complete(req: ChatRequest): Promise<ChatResponse> {
      const tokensIn = estimateTokens(req.system + JSON.stringify(req.messages) + JSON.stringify(req.tools))
      if (fail !== undefined && fail.trim() !== '') throw new StepError('ModelError', fail)
      const turns = req.messages.filter((m) => m.role === 'assistant' && m.toolCalls.length > 0).length
      const call = plan[turns]
      if (call !== undefined) {
        return { text: '', toolCalls: [call], finishReason: 'tool_calls', usage: { tokensIn, tokensOut: estimateTokens(JSON.stringify(call)) } }
      }
      const toolsUsed = req.messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : []))
      let text = scripted !== undefined && scripted !== '' ? scripted : JSON.stringify(defaultOfflineAnswer(opts, toolsUsed))
      const answer = directive !== null ? parseObject(text) : null
      if (directive !== null && answer !== null) {
        // A scripted text answer stays as it is; an object answer gets the directive's results.
        const results = directiveResults(directive.calls, req.messages)
        const texts = new Map<string, string>()
        for (const m of req.messages) if (m.role === 'tool') for (const r of m.results) texts.set(r.callId, r.content)
        const error = directiveError(results, texts)
        text = JSON.stringify({ ...answer, mcp: directive.single ? results[0] : results, ...(error !== undefined ? { error } : {}) })
      }
      return { text, toolCalls: [], finishReason: 'stop', usage: { tokensIn, tokensOut: estimateTokens(text) } }
    },
  }
}
