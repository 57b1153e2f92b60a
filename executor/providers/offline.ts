import { z } from 'zod'
import { ConfigError, StepError } from '../errors.js'
import { estimateTokens } from '../pricing.js'
import type { ChatRequest, ChatResponse, ModelProvider, ToolCall } from './types.js'

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
 */

const ScriptSchema = z.array(
  z.looseObject({
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()).optional(),
  }),
)

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
      const { offline: _ignored, ...rest } = input
      text = Object.keys(rest).length === 0 ? 'no input' : JSON.stringify(rest)
    }
  } else text = typeof input === 'string' ? input : JSON.stringify(input)
  const oneLine = text.replace(/\s+/g, ' ').trim()
  return oneLine.length > SUMMARY_CHARS ? `${oneLine.slice(0, SUMMARY_CHARS - 3)}...` : oneLine
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
  const fail = opts.script.OFFLINE_FAIL
  const scripted = opts.script.OFFLINE_RESPONSE

  return {
    name: 'offline',
    async complete(req: ChatRequest): Promise<ChatResponse> {
      const tokensIn = estimateTokens(req.system + JSON.stringify(req.messages) + JSON.stringify(req.tools))
      if (fail !== undefined && fail.trim() !== '') throw new StepError('ModelError', fail)
      const turns = req.messages.filter((m) => m.role === 'assistant' && m.toolCalls.length > 0).length
      const next = script[turns]
      if (next !== undefined) {
        const call: ToolCall = { id: `call_${turns + 1}`, name: next.name, arguments: next.arguments ?? {} }
        return { text: '', toolCalls: [call], usage: { tokensIn, tokensOut: estimateTokens(JSON.stringify(call)) } }
      }
      const toolsUsed = req.messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.name) : []))
      const text = scripted !== undefined && scripted !== '' ? scripted : JSON.stringify(defaultOfflineAnswer(opts, toolsUsed))
      return { text, toolCalls: [], usage: { tokensIn, tokensOut: estimateTokens(text) } }
    },
  }
}
