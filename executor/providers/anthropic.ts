import { z } from 'zod'
import { StepError } from '../errors.js'
import { postWithRetry, readJson } from './retry.js'
import type { ChatRequest, ChatResponse, HttpProviderOptions, Message, ModelProvider, ToolCall } from './types.js'


const TextBlock = z.object({ type: z.literal('text'), text: z.string() })
const ToolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) })

const ResponseSchema = z.object({
  content: z.array(z.looseObject({ type: z.string() })),
  usage: z.object({ input_tokens: z.number(), output_tokens: z.number() }),
  stop_reason: z.string().nullable().optional(),
})

// Anthropic rejects oversized tool results; purko's executor cuts them at the same length.
const MAX_TOOL_RESULT_CHARS = 50_000

function toWire(messages: readonly Message[]): unknown[] {
  return messages.map((m) => {
    if (m.role === 'user') return { role: 'user', content: m.content }
    if (m.role === 'assistant') {
      return {
        role: 'assistant',
        content: [
          ...(m.text !== '' ? [{ type: 'text', text: m.text }] : []),
          ...m.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
        ],
      }
    }
    return {
      role: 'user',
      content: m.results.map((r) => ({
        type: 'tool_result',
        tool_use_id: r.callId,
        content: r.content.slice(0, MAX_TOOL_RESULT_CHARS),
        ...(r.isError ? { is_error: true } : {}),
      })),
    }
  })
}

/** A ModelProvider speaking POST <endpoint>/messages with `x-api-key` and anthropic-version 2023-06-01. */
export function anthropicProvider(opts: HttpProviderOptions): ModelProvider {
  const url = `${opts.endpoint ?? 'https://api.anthropic.com/v1'}/messages`
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }
  if (opts.apiKey !== undefined) headers['x-api-key'] = opts.apiKey
  return {
    name: 'anthropic',
    async complete(req: ChatRequest): Promise<ChatResponse> {
      const body = {
        model: opts.model,
        max_tokens: req.maxTokens,
        temperature: req.temperature,
        system: req.system,
        messages: toWire(req.messages),
        ...(req.tools.length > 0
          ? { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })) }
          : {}),
      }
      const res = await postWithRetry(opts.fetch, url, headers, body, {
        timeoutMs: opts.timeoutMs,
        signal: req.signal,
        policy: opts.retry,
        ...(opts.onRetry !== undefined ? { onRetry: opts.onRetry } : {}),
      })
      const parsed = ResponseSchema.safeParse(await readJson(res, 'Anthropic API'))
      if (!parsed.success) throw new StepError('ModelError', 'Anthropic API returned a malformed response: no content or usage')
      const texts: string[] = []
      const toolCalls: ToolCall[] = []
      for (const block of parsed.data.content) {
        // Other block types (thinking, citations) carry nothing the loop needs.
        if (block.type === 'text') {
          const b = TextBlock.safeParse(block)
          if (!b.success) throw new StepError('ModelError', 'Anthropic API returned a malformed response: text block without text')
          texts.push(b.data.text)
        } else if (block.type === 'tool_use') {
          const b = ToolUseBlock.safeParse(block)
          if (!b.success) throw new StepError('ModelError', 'Anthropic API returned a malformed response: tool_use block without id, name or input')
          toolCalls.push({ id: b.data.id, name: b.data.name, arguments: b.data.input })
        }
      }
      return {
        text: texts.join('\n'),
        toolCalls,
        ...(parsed.data.stop_reason ? { finishReason: parsed.data.stop_reason } : {}),
        usage: { tokensIn: parsed.data.usage.input_tokens, tokensOut: parsed.data.usage.output_tokens },
      }
    },
  }
}
