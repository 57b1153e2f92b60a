import { z } from 'zod'
import { parseContentFilters, type ContentFilter } from './content-filters.js'
import { parseDurationMs } from './duration.js'
import { ConfigError } from './errors.js'

/**
 * The executor's whole input: environment variables set by the step Job (the table in
 * executor/README.md), read once and validated with zod. Defaults are those of purko's executor,
 * so a Job built for purko runs unchanged; a malformed value is a ConfigError (exit code 2),
 * never a guess.
 */

/** The values of AUTONOMY_LEVEL (Agent `spec.autonomyLevel`). */
export const AUTONOMY_LEVELS = ['manual', 'restricted', 'supervised', 'full'] as const
/** One autonomy level. */
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number]

/** The wire format of the model API; `offline` means no API at all. */
export type ApiFormat = 'openai' | 'anthropic' | 'offline'

const AgentToolSchema = z.looseObject({
  name: z.string().min(1),
  type: z.string().default('mcp'),
  config: z.unknown().optional(),
})
/** One entry of AGENT_TOOLS (Agent `spec.tools[]`). */
export type AgentTool = z.infer<typeof AgentToolSchema>

const McpServerSchema = z.looseObject({
  name: z.string().min(1),
  url: z.url(),
  auth: z.string().optional(),
  token: z.string().optional(),
  /** Kinetic keeps tokens out of MCP_SERVERS: the entry names the env var (a secretKeyRef) instead. */
  tokenEnv: z.string().optional(),
  /** Kinetic: namespace of the MCPServer the entry belongs to. */
  namespace: z.string().optional(),
})
/** One entry of MCP_SERVERS (the `mcp-servers` registry). */
export type McpServerEntry = z.infer<typeof McpServerSchema>

/** Everything a run needs, already parsed; secrets stay in this object and never reach a log. */
export interface ExecutorConfig {
  step: string
  workflow: string
  /** STEP_INPUT as given (purko's controller may hand over text that is not JSON). */
  inputText: string
  /** STEP_INPUT parsed as JSON, or the text itself when it is not JSON. */
  input: unknown
  /** STEP_INPUT_<STEP>_<KEY> values, parsed as JSON where possible, keyed by the suffix. */
  stepInputs: Record<string, unknown>
  model: {
    provider: string
    name: string
    apiFormat: ApiFormat
    endpoint?: string
    apiKey?: string
    timeoutMs: number
    maxTokens: number
    temperature: number
    /** USD per million tokens; absent when MODEL_PRICE_IN/OUT were not both given. */
    price?: { inPerMTok: number; outPerMTok: number }
  }
  /** True when the deterministic offline provider answers instead of a model API. */
  offline: boolean
  /** True when offline was chosen only because no model API is configured (worth a warning). */
  offlineFallback: boolean
  systemPrompt: string
  /** CODE_EXECUTION_ENABLED=true: the agent expects a code sandbox, which this executor does not provide. */
  codeExecutionRequested: boolean
  agentTools: AgentTool[]
  mcpServers: McpServerEntry[]
  autonomy: AutonomyLevel
  maxToolCalls: number
  /** 0 means no limit, as in purko. */
  costLimitUsd: number
  contentFilters: ContentFilter[]
  /** Absent means no limit beyond the Job's own activeDeadlineSeconds. */
  maxExecutionMs?: number
  memory: {
    type: 'buffer' | 'summary' | 'vector' | 'none'
    behavior?: 'off' | 'session' | 'persistent'
    agentMemory: string
    maxContextTokens: number
  }
  /** EXECUTOR_<KEY> values with the prefix removed (agent `spec.runtime.config`). */
  executor: Record<string, string>
  traceparent?: string
  /** Values that must never be printed: the model key and MCP tokens. */
  secrets: string[]
}

type Env = Readonly<Record<string, string | undefined>>

const blankToUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v)

const str = (fallback: string) => z.preprocess(blankToUndefined, z.string().default(fallback))
const optStr = z.preprocess(blankToUndefined, z.string().optional())

const num = (check: (n: number) => string | null) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .optional()
      .transform((s, ctx) => {
        if (s === undefined) return undefined
        const n = Number(s.trim().replace(/^\$/, ''))
        const problem = Number.isFinite(n) ? check(n) : 'must be a number'
        if (problem !== null) {
          ctx.addIssue({ code: 'custom', message: problem })
          return z.NEVER
        }
        return n
      }),
  )

const wholeAtLeast = (min: number) => num((n) => (Number.isInteger(n) && n >= min ? null : `must be a whole number >= ${min}`))
const nonNegative = num((n) => (n >= 0 ? null : 'must be >= 0'))
const between = (lo: number, hi: number) => num((n) => (n >= lo && n <= hi ? null : `must be between ${lo} and ${hi}`))

const duration = z.preprocess(
  blankToUndefined,
  z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (s === undefined) return undefined
      const ms = parseDurationMs(s)
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: 'must be a Go duration such as 90s or 15m, or a number of seconds' })
        return z.NEVER
      }
      return ms
    }),
)

const json = <T extends z.ZodType>(schema: T, fallback: string) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .default(fallback)
      .transform((s, ctx) => {
        try {
          return JSON.parse(s) as unknown
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be valid JSON' })
          return z.NEVER
        }
      })
      .pipe(schema),
  )

const filters = z.preprocess(
  blankToUndefined,
  z
    .string()
    .default('[]')
    .transform((s, ctx) => {
      try {
        return parseContentFilters(s)
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message })
        return z.NEVER
      }
    }),
)

// Enumerations compare case-insensitively; blank means unset.
const lower = (v: unknown) => (typeof v === 'string' ? (v.trim() === '' ? undefined : v.trim().toLowerCase()) : v)

/** Variable names mapped to their schemas; a missing name means "use the default". */
const EnvSchema = z.object({
  STEP_NAME: str('unknown'),
  WORKFLOW_NAME: str('unknown'),
  STEP_INPUT: str('{}'),
  MODEL_PROVIDER: str('anthropic'),
  MODEL_NAME: str('claude-sonnet-4-6'),
  MODEL_API_FORMAT: z.preprocess(lower, z.enum(['openai', 'anthropic', 'offline']).optional()),
  MODEL_ENDPOINT: z.preprocess(blankToUndefined, z.url().optional()),
  MODEL_API_KEY: optStr,
  MODEL_TIMEOUT: duration,
  MODEL_MAX_TOKENS: wholeAtLeast(1),
  MODEL_TEMPERATURE: between(0, 2),
  MODEL_PRICE_IN: nonNegative,
  MODEL_PRICE_OUT: nonNegative,
  AGENT_SYSTEM_PROMPT: str('You are a helpful assistant.'),
  AGENT_TOOLS: json(z.array(AgentToolSchema), '[]'),
  MCP_SERVERS: json(z.array(McpServerSchema), '[]'),
  AUTONOMY_LEVEL: z.preprocess(lower, z.enum(AUTONOMY_LEVELS).default('supervised')),
  MAX_TOOL_CALLS: wholeAtLeast(0),
  COST_LIMIT_USD: nonNegative,
  CONTENT_FILTERS: filters,
  MAX_EXECUTION_TIME: duration,
  MEMORY_TYPE: z.preprocess(lower, z.enum(['buffer', 'summary', 'vector', 'none']).default('buffer')),
  MEMORY_BEHAVIOR: z.preprocess(lower, z.enum(['off', 'session', 'persistent']).optional()),
  AGENT_MEMORY: str(''),
  MAX_CONTEXT_TOKENS: wholeAtLeast(1),
  ANTHROPIC_VERTEX_PROJECT_ID: optStr,
  TRACEPARENT: optStr,
  // Purko's controller sets these instead of MCP_SERVERS when it has no server registry.
  MCP_SERVER_URL: z.preprocess(blankToUndefined, z.url().optional()),
  GITHUB_MCP_URL: z.preprocess(blankToUndefined, z.url().optional()),
  GITHUB_MCP_TOKEN: optStr,
  CODE_EXECUTION_ENABLED: optStr,
  // Kinetic: the step's namespace; an MCP server of another namespace never gets a token.
  KINETIC_NAMESPACE: optStr,
})

// W3C trace-context: version 00, 32-hex trace id, 16-hex parent id, 2-hex flags.
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function collect(env: Env, prefix: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (name.startsWith(prefix) && name.length > prefix.length && value !== undefined) out[name.slice(prefix.length)] = value
  }
  return out
}

/**
 * Pure: the validated configuration for an environment, or a ConfigError naming every bad
 * variable (never its value). Offline rule: the offline provider answers when MODEL_PROVIDER or
 * MODEL_API_FORMAT is `offline`, when EXECUTOR_OFFLINE is `true`, or when none of MODEL_API_KEY,
 * MODEL_ENDPOINT and ANTHROPIC_VERTEX_PROJECT_ID is set and EXECUTOR_OFFLINE is not `false`.
 */
export function parseConfig(env: Env): ExecutorConfig {
  const parsed = EnvSchema.safeParse(env)
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || 'environment'}: ${i.message}`))
  }
  const e = parsed.data
  const executor = collect(env, 'EXECUTOR_')
  const issues: string[] = []

  const provider = e.MODEL_PROVIDER.trim()
  const apiFormat: ApiFormat =
    e.MODEL_API_FORMAT ?? (provider === 'offline' ? 'offline' : provider === 'anthropic' || provider === 'vertex-ai' ? 'anthropic' : 'openai')
  const offlineSwitch = (executor.OFFLINE ?? '').trim().toLowerCase()
  // A Vertex project counts as a configured model: it must fail loudly, not fall back to offline.
  const noRemote = e.MODEL_API_KEY === undefined && e.MODEL_ENDPOINT === undefined && e.ANTHROPIC_VERTEX_PROJECT_ID === undefined
  const explicitOffline = apiFormat === 'offline' || provider === 'offline' || offlineSwitch === 'true'
  const offline = explicitOffline || (noRemote && offlineSwitch !== 'false')

  if (!offline && noRemote) issues.push('MODEL_API_KEY: required (or MODEL_ENDPOINT) when EXECUTOR_OFFLINE=false')
  if (!offline && e.ANTHROPIC_VERTEX_PROJECT_ID !== undefined && e.MODEL_ENDPOINT === undefined && e.MODEL_API_KEY === undefined) {
    issues.push('ANTHROPIC_VERTEX_PROJECT_ID: Vertex AI authentication is not built in; set MODEL_ENDPOINT or use an executor image with Vertex support')
  }
  if ((e.MODEL_PRICE_IN === undefined) !== (e.MODEL_PRICE_OUT === undefined)) {
    issues.push('MODEL_PRICE_IN/MODEL_PRICE_OUT: set both or neither')
  }
  if (issues.length > 0) throw new ConfigError(issues)

  // Zero means "no limit" for both time settings, as in purko's executor.
  const maxExecutionMs = e.MAX_EXECUTION_TIME !== undefined && e.MAX_EXECUTION_TIME > 0 ? e.MAX_EXECUTION_TIME : undefined
  const traceparent = e.TRACEPARENT !== undefined && TRACEPARENT.test(e.TRACEPARENT.trim()) ? e.TRACEPARENT.trim() : undefined

  const stepInputs: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(collect(env, 'STEP_INPUT_'))) stepInputs[key] = parseMaybeJson(value)

  const own = e.KINETIC_NAMESPACE?.trim()
  // Every token any entry names stays a secret to redact, whether it is sent or not.
  const named = e.MCP_SERVERS.flatMap((s) => [s.token, s.tokenEnv ? env[s.tokenEnv] : undefined])
  const mcpServers: McpServerEntry[] = e.MCP_SERVERS.map((server) => {
    // A token is only for a server of the step's own namespace, whose MCPServer named its Secret
    // there; whatever carries one for a server of another namespace, it is not sent.
    if (own !== undefined && server.namespace !== undefined && server.namespace !== own) {
      const { token: _token, tokenEnv: _tokenEnv, ...rest } = server
      return rest
    }
    const fromEnv = server.tokenEnv ? env[server.tokenEnv] : undefined
    return fromEnv && !server.token ? { ...server, token: fromEnv } : server
  })
  if (mcpServers.length === 0) {
    if (e.MCP_SERVER_URL !== undefined) mcpServers.push({ name: 'lumino', url: e.MCP_SERVER_URL })
    if (e.GITHUB_MCP_URL !== undefined) {
      mcpServers.push({
        name: 'github',
        url: e.GITHUB_MCP_URL,
        ...(e.GITHUB_MCP_TOKEN !== undefined ? { auth: 'bearer', token: e.GITHUB_MCP_TOKEN } : {}),
      })
    }
  }

  const secrets = [...new Set([e.MODEL_API_KEY, e.GITHUB_MCP_TOKEN, ...mcpServers.map((s) => s.token), ...named])].filter(
    (s): s is string => typeof s === 'string' && s.length > 0,
  )

  return {
    step: e.STEP_NAME,
    workflow: e.WORKFLOW_NAME,
    inputText: e.STEP_INPUT,
    input: parseMaybeJson(e.STEP_INPUT),
    stepInputs,
    model: {
      provider,
      name: e.MODEL_NAME,
      apiFormat: offline ? 'offline' : apiFormat,
      ...(e.MODEL_ENDPOINT !== undefined ? { endpoint: e.MODEL_ENDPOINT.replace(/\/+$/, '') } : {}),
      ...(e.MODEL_API_KEY !== undefined ? { apiKey: e.MODEL_API_KEY } : {}),
      // Node timers cannot wait longer than 2^31-1 ms.
      timeoutMs: e.MODEL_TIMEOUT !== undefined && e.MODEL_TIMEOUT > 0 ? Math.min(e.MODEL_TIMEOUT, 2 ** 31 - 1) : 120_000,
      maxTokens: e.MODEL_MAX_TOKENS ?? 4096,
      temperature: e.MODEL_TEMPERATURE ?? 0.2,
      ...(e.MODEL_PRICE_IN !== undefined && e.MODEL_PRICE_OUT !== undefined
        ? { price: { inPerMTok: e.MODEL_PRICE_IN, outPerMTok: e.MODEL_PRICE_OUT } }
        : {}),
    },
    offline,
    offlineFallback: offline && !explicitOffline,
    systemPrompt: e.AGENT_SYSTEM_PROMPT,
    agentTools: e.AGENT_TOOLS,
    mcpServers,
    codeExecutionRequested: e.CODE_EXECUTION_ENABLED?.trim().toLowerCase() === 'true',
    autonomy: e.AUTONOMY_LEVEL,
    maxToolCalls: e.MAX_TOOL_CALLS ?? 20,
    costLimitUsd: e.COST_LIMIT_USD ?? 0,
    contentFilters: e.CONTENT_FILTERS,
    ...(maxExecutionMs !== undefined ? { maxExecutionMs } : {}),
    memory: {
      type: e.MEMORY_TYPE,
      ...(e.MEMORY_BEHAVIOR !== undefined ? { behavior: e.MEMORY_BEHAVIOR } : {}),
      agentMemory: e.AGENT_MEMORY,
      maxContextTokens: e.MAX_CONTEXT_TOKENS ?? 8192,
    },
    executor,
    ...(traceparent !== undefined ? { traceparent } : {}),
    secrets,
  }
}
