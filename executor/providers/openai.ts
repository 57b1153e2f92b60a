import { z } from 'zod'
import { StepError } from '../errors.js'
import { estimateTokens } from '../pricing.js'
import { postWithRetry, readJson } from './retry.js'
import type { ChatRequest, ChatResponse, HttpProviderOptions, Message, ModelProvider, ToolCall } from './types.js'


const ResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.object({
                id: z.string(),
                function: z.object({ name: z.string(), arguments: z.string().optional() }),
              }),
            )
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).partial().nullable().optional(),
})

function toWire(system: string, messages: readonly Message[]): unknown[] {
  const out: unknown[] = [{ role: 'system', content: system }]
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content })
    else if (m.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: m.text === '' ? null : m.text,
        ...(m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            }
          : {}),
      })
    } else for (const r of m.results) out.push({ role: 'tool', tool_call_id: r.callId, content: r.content })
  }
  return out
}

function parseArguments(text: string | undefined, name: string): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {}
  try {
    const v = JSON.parse(text) as unknown
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>
  } catch {
    // fall through: the model produced arguments that are not a JSON object
  }
  throw new StepError('ModelError', `OpenAI-compatible API returned a malformed response: arguments of tool call ${name} are not a JSON object`)
}

/** A ModelProvider speaking POST <endpoint>/chat/completions; Authorization is sent only when a key exists. */
export function openAiProvider(opts: HttpProviderOptions): ModelProvider {
  const url = `${opts.endpoint ?? 'https://api.openai.com/v1'}/chat/completions`
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (opts.apiKey !== undefined) headers.authorization = `Bearer ${opts.apiKey}`
  return {
    name: 'openai',
    async complete(req: ChatRequest): Promise<ChatResponse> {
      const messages = toWire(req.system, req.messages)
      const body = {
        model: opts.model,
        messages,
        max_tokens: req.maxTokens,
        temperature: req.temperature,
        ...(req.tools.length > 0
          ? {
              tools: req.tools.map((t) => ({
                type: 'function',
                function: { name: t.name, description: t.description, parameters: t.inputSchema },
              })),
            }
          : {}),
      }
      const res = await postWithRetry(opts.fetch, url, headers, body, {
        timeoutMs: opts.timeoutMs,
        signal: req.signal,
        policy: opts.retry,
        ...(opts.onRetry !== undefined ? { onRetry: opts.onRetry } : {}),
      })
      const parsed = ResponseSchema.safeParse(await readJson(res, 'OpenAI-compatible API'))
      if (!parsed.success) {
        throw new StepError('ModelError', 'OpenAI-compatible API returned a malformed response: no choices[0].message')
      }
      const msg = parsed.data.choices[0]!.message
      const toolCalls: ToolCall[] = (msg.tool_calls ?? []).map((c) => ({
        id: c.id,
        name: c.function.name,
        arguments: parseArguments(c.function.arguments, c.function.name),
      }))
      const text = msg.content ?? ''
      const usage = parsed.data.usage
      const finishReason = parsed.data.choices[0]!.finish_reason
      return {
        text,
        toolCalls,
        ...(finishReason ? { finishReason } : {}),
        usage: {
          // Servers that omit usage (some Ollama and vLLM builds) still get a deterministic estimate.
          tokensIn: usage?.prompt_tokens ?? estimateTokens(JSON.stringify(messages)),
          tokensOut: usage?.completion_tokens ?? estimateTokens(text + JSON.stringify(msg.tool_calls ?? [])),
        },
      }
    },
  }
}
