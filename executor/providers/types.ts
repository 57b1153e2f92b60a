/**
 * The provider-neutral conversation the agent loop keeps; each provider translates it to its
 * wire format and back.
 */

/** A tool the model may call, with its JSON Schema input. */
export interface ToolSpec {
  name: string
  description: string
  inputSchema: Record<string, unknown>
}

/** One tool call the model asked for; `id` pairs it with its result. */
export interface ToolCall {
  id: string
  name: string
  arguments: Record<string, unknown>
  /** The MCP server that must answer it. Only the offline provider's `mcp` directive names one; model APIs cannot. */
  server?: string
}

/** A tool's answer to one call, sent back to the model. */
export interface ToolResult {
  callId: string
  name: string
  content: string
  isError: boolean
  /** The MCP result's structuredContent; the model APIs get `content` only, the offline provider copies this into its answer. */
  structuredContent?: Record<string, unknown>
}

/** One turn of the conversation: the task, the model's reply, or the tools' answers. */
export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] }

/** One model call's input. */
export interface ChatRequest {
  system: string
  messages: readonly Message[]
  tools: readonly ToolSpec[]
  maxTokens: number
  temperature: number
  signal: AbortSignal
}

/** One model call's output: final text, or tool calls to make first. */
export interface ChatResponse {
  text: string
  toolCalls: ToolCall[]
  usage: { tokensIn: number; tokensOut: number }
  /** Why the model stopped, as its API says it (stop, tool_calls, end_turn, max_tokens, ...). */
  finishReason?: string
}

/** A model API. Throws StepError('ModelError') for anything the loop cannot continue from. */
export interface ModelProvider {
  readonly name: string
  complete(req: ChatRequest): Promise<ChatResponse>
}

/** The fetch the HTTP providers use; tests pass one bound to a local server or msw. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>

/** Settings of a provider reached over HTTP: an OpenAI-compatible or an Anthropic Messages API. */
export interface HttpProviderOptions {
  /** Base URL; the public API when unset. */
  endpoint?: string
  apiKey?: string
  model: string
  timeoutMs: number
  fetch: FetchLike
  retry: RetryPolicy
  onRetry?: (info: { attempt: number; status?: number; delayMs: number }) => void
}

/** How a provider retries: attempts in total, first backoff, and the sleep it waits with. */
export interface RetryPolicy {
  attempts: number
  baseDelayMs: number
  maxDelayMs: number
  sleep: (ms: number, signal: AbortSignal) => Promise<void>
}
