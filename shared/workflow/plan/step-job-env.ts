/**
 * The environment of a step Job's executor container (purko's executor contract): the step and
 * its input, the model and its provider (a step's `model` overrides the Agent's, spec §5.10), the
 * MCP servers the step may use with their tokens, the Agent's guardrails, memory, code execution,
 * tools and runtime variables, then Kinetic's own variables. Credentials only ever come through
 * `secretKeyRef`. Pure: the same input always gives the same list, in the same order.
 */
import type { V1EnvVar } from '@kubernetes/client-node'
import type { Agent } from '../../schemas/agent.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import type { RegistryEntry } from '../../mcp/plan/registry.js'
import { stepMcpView, type McpVisibility } from '../../mcp/plan/visibility.js'
import type { Workflow, WorkflowStep } from '../../schemas/workflow.js'
import { goFixed2, goFormatValue, goJson, goJsonOrdered, goShortestDecimal } from '../../core/go-format.js'
import { memoryEnv } from '../../memory/plan/memory-env.js'
import type { PlainEnv } from './step-input.js'
import type { StepCredentials } from './credentials.js'
import { overridesProvider, resolvedModelName, wantedProviderName } from '../../agent/plan/provider-resolution.js'

const INTEGER = /^[-+]?\d+$/

/** What the container's environment is made of; lookups (agent, provider, servers, recall) happen before. */
export interface StepEnvInput {
  workflow: Workflow
  runId: string
  step: WorkflowStep
  attempt: number
  agent: Agent
  /** Already chosen (`chooseProvider`: purko's resolution, then the fallback rule). */
  provider: LLMProvider | undefined
  /**
   * Secrets of the Workflow's namespace holding the provider's key (`chooseProvider`); when
   * absent, the provider's own `credentials.secretRef`, as for a provider of that namespace.
   */
  credentials?: StepCredentials
  /** The `mcp-servers` registry entries as read, in registry order (as purko's registry lists them). */
  mcpServers: RegistryEntry[]
  /** Which of them the step may use (shared/mcp/plan/visibility.ts): the builder lists no other. */
  mcpVisibility: McpVisibility
  stepInput: string
  inputFromEnv: PlainEnv[]
  traceparent?: string
  /** The functions' OTEL_* export settings (shared/telemetry/config.ts), so the executor's spans reach the same collector. */
  telemetryEnv?: ReadonlyArray<{ name: string; value: string }>
  recalledMemory?: string
}

/** Pure: name of the env var that carries an MCP server's bearer token (`MCP_TOKEN_<NAME>`). */
export function mcpTokenEnvName(serverName: string): string {
  return `MCP_TOKEN_${serverName.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`
}

// Locale-independent ordering, so the manifest does not depend on the process's locale.
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function plain(name: string, value: string): V1EnvVar {
  return { name, value }
}

function fromSecret(name: string, secret: string, key: string, optional: boolean): V1EnvVar {
  return { name, valueFrom: { secretKeyRef: { name: secret, key, optional } } }
}

/**
 * MCP_SERVERS: the servers a step in `namespace` may use (its own namespace's, the agent
 * namespace's, the shared namespaces'), one per name, the least trusted first so that a more
 * trusted server's tool replaces theirs. A bearer token goes only with a server of the step's own
 * namespace, from the Secret its MCPServer names: a pod reads Secrets of its own namespace only,
 * and a Secret of the same name there was never meant for another namespace's server.
 */
function mcpServersEnv(registry: readonly RegistryEntry[], namespace: string, visibility: McpVisibility): V1EnvVar[] {
  const entries: Array<Record<string, string>> = []
  const tokens: V1EnvVar[] = []
  const used = new Set<string>()
  for (const { entry: server, namespace: owner } of stepMcpView(registry, namespace, visibility).servers) {
    const { name, url } = server
    const auth = server.auth || 'none'
    const entry: Record<string, string> = { name, url, auth }
    if (auth === 'bearer' && server.secretRef && owner === namespace) {
      let tokenEnv = mcpTokenEnvName(name)
      // Distinct servers such as `a-b` and `a.b` would share a name after sanitising.
      for (let n = 2; used.has(tokenEnv); n++) tokenEnv = `${mcpTokenEnvName(name)}_${n}`
      used.add(tokenEnv)
      entry.tokenEnv = tokenEnv
      // Optional like purko's registry, which simply omitted a token it could not read.
      tokens.push(fromSecret(tokenEnv, server.secretRef, 'token', true))
    }
    entry.namespace = owner
    entries.push(entry)
  }
  return [plain('MCP_SERVERS', goJsonOrdered(entries)), ...tokens]
}

function toolsJson(agent: Agent): string {
  const tools = (agent.spec.tools ?? []).map((tool) => {
    const out: Record<string, unknown> = { name: tool.name, type: tool.type }
    const declared = tool.endpoint
    if (declared) {
      const endpoint: Record<string, unknown> = { url: declared.url ?? '' }
      if (declared.method) endpoint.method = declared.method
      if (declared.headers && Object.keys(declared.headers).length > 0) endpoint.headers = sortedRecord(declared.headers)
      if (declared.timeoutSeconds) endpoint.timeoutSeconds = declared.timeoutSeconds
      if (declared.authScheme) endpoint.authScheme = declared.authScheme
      if (declared.authHeader) endpoint.authHeader = declared.authHeader
      out.endpoint = endpoint
    }
    const ref = tool.credentialsSecretRef
    if (ref) {
      const secretRef: Record<string, unknown> = { name: ref.name }
      if (ref.namespace) secretRef.namespace = ref.namespace
      if (ref.key) secretRef.key = ref.key
      out.credentialsSecretRef = secretRef
    }
    if (tool.config !== undefined) out.config = tool.config
    return out
  })
  return goJsonOrdered(tools)
}

function sortedRecord(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => byText(a, b)))
}

function codeExecutionEnv(agent: Agent): V1EnvVar[] {
  const code = agent.spec.runtime?.codeExecution
  if (!code?.enabled) return []
  const env = [plain('CODE_EXECUTION_ENABLED', 'true')]
  if (code.languages && code.languages.length > 0) env.push(plain('CODE_LANGUAGES', code.languages.join(',')))
  const sandbox = code.sandbox
  if (sandbox) {
    const out: Record<string, unknown> = {}
    if (sandbox.maxExecutionSeconds) out.maxExecutionSeconds = sandbox.maxExecutionSeconds
    if (sandbox.maxOutputBytes) out.maxOutputBytes = sandbox.maxOutputBytes
    if (sandbox.networkAccess) out.networkAccess = sandbox.networkAccess
    if (sandbox.writablePaths && sandbox.writablePaths.length > 0) out.writablePaths = sandbox.writablePaths
    env.push(plain('CODE_SANDBOX', goJsonOrdered(out)))
  }
  return env
}

function guardrailEnv(agent: Agent): V1EnvVar[] {
  const guardrails = agent.spec.guardrails
  if (!guardrails) return []
  const env: V1EnvVar[] = []
  if (guardrails.maxIterations !== undefined) env.push(plain('MAX_TOOL_CALLS', goFormatValue(guardrails.maxIterations)))
  if (guardrails.costLimitUSD !== undefined) env.push(plain('COST_LIMIT_USD', goFormatValue(guardrails.costLimitUSD)))
  if (guardrails.contentFilters !== undefined) env.push(plain('CONTENT_FILTERS', goJson(guardrails.contentFilters)))
  if (guardrails.maxExecutionTime !== undefined) env.push(plain('MAX_EXECUTION_TIME', goFormatValue(guardrails.maxExecutionTime)))
  return env
}

/** The provider's own Secret, as for a provider of the Workflow's namespace. */
export function ownCredentials(provider: LLMProvider): StepCredentials {
  const spec = provider.spec
  const secret = spec.credentials?.secretRef
  // A vertex-ai Secret holds service-account credentials (mounted by the Job, job-builder.ts), not an API key, unless a key is named.
  const hasKey = Boolean(secret) && (spec.type !== 'vertex-ai' || Boolean(spec.credentials?.secretKey))
  return {
    ...(hasKey ? { apiKey: { secret: secret!, key: spec.credentials?.secretKey || 'api-key' } } : {}),
    ...(spec.type === 'vertex-ai' ? { gcp: { secret: secret || 'gcp-credentials' } } : {}),
  }
}

function providerEnv(provider: LLMProvider, model: string, credentials: StepCredentials): { env: V1EnvVar[]; hasKey: boolean } {
  const spec = provider.spec
  const env: V1EnvVar[] = []
  const apiFormat = spec.apiFormat || (spec.type === 'anthropic' || spec.type === 'vertex-ai' ? 'anthropic' : 'openai')
  env.push(plain('MODEL_API_FORMAT', apiFormat))
  if (spec.endpoint) env.push(plain('MODEL_ENDPOINT', spec.endpoint))
  const hasKey = credentials.apiKey !== undefined
  if (credentials.apiKey) {
    // A Secret of the Workflow's namespace: a pod can only read Secrets of its own namespace.
    env.push(fromSecret('MODEL_API_KEY', credentials.apiKey.secret, credentials.apiKey.key, false))
  }
  const timeout = spec.config?.timeoutSeconds
  if (timeout !== undefined && INTEGER.test(timeout)) env.push(plain('MODEL_TIMEOUT', timeout))
  const pricing = spec.models?.find((entry) => entry.name === model)?.pricing
  if (pricing) {
    env.push(plain('MODEL_PRICE_IN', goShortestDecimal(pricing.inputPerMToken ?? 0)))
    env.push(plain('MODEL_PRICE_OUT', goShortestDecimal(pricing.outputPerMToken ?? 0)))
  }
  if (spec.type === 'vertex-ai') {
    if (spec.config?.projectId !== undefined) env.push(plain('ANTHROPIC_VERTEX_PROJECT_ID', spec.config.projectId))
    if (spec.config?.region !== undefined) env.push(plain('CLOUD_ML_REGION', spec.config.region))
    env.push(plain('GOOGLE_APPLICATION_CREDENTIALS', '/var/run/secrets/gcp/credentials.json'))
  }
  return { env, hasKey }
}

function runtimeEnv(agent: Agent): V1EnvVar[] {
  const env: V1EnvVar[] = []
  for (const item of agent.spec.runtime?.env ?? []) {
    // Unknown fields are kept by the CRD, so an agent may reference a Secret the Kubernetes way.
    const valueFrom = (item as { valueFrom?: unknown }).valueFrom
    if (valueFrom !== null && typeof valueFrom === 'object') env.push({ name: item.name, valueFrom: valueFrom as V1EnvVar['valueFrom'] })
    else env.push(plain(item.name, item.value ?? ''))
  }
  const config = agent.spec.runtime?.config ?? {}
  for (const key of Object.keys(config).sort()) {
    env.push(plain(`EXECUTOR_${key.toUpperCase().replaceAll('.', '_')}`, config[key]!))
  }
  return env
}

/** Pure: the executor container's environment, in the order purko's builder wrote it; Kinetic's own variables last. */
export function stepEnv(input: StepEnvInput): V1EnvVar[] {
  const { agent, provider, step, workflow } = input
  const spec = agent.spec
  // The step's model override (spec §5.10): each field it sets replaces the Agent's.
  const override = step.model
  const model = resolvedModelName(agent, provider, override)
  const maxTokens = override?.maxTokens ?? spec.model.maxTokens
  const temperature = override?.temperature ?? spec.model.temperature
  const env: V1EnvVar[] = [
    plain('STEP_NAME', step.name),
    plain('WORKFLOW_NAME', workflow.metadata.name ?? ''),
    plain('MODEL_PROVIDER', wantedProviderName(agent, override)),
    plain('MODEL_NAME', model),
  ]
  if (maxTokens !== undefined) env.push(plain('MODEL_MAX_TOKENS', String(maxTokens)))
  let providerKey = false
  if (provider) {
    const fromProvider = providerEnv(provider, model, input.credentials ?? ownCredentials(provider))
    env.push(...fromProvider.env)
    providerKey = fromProvider.hasKey
  }
  if (spec.autonomyLevel) env.push(plain('AUTONOMY_LEVEL', spec.autonomyLevel))
  if (spec.systemPrompt) env.push(plain('AGENT_SYSTEM_PROMPT', spec.systemPrompt))
  if (input.stepInput !== '') env.push(plain('STEP_INPUT', input.stepInput))
  env.push(...mcpServersEnv(input.mcpServers, workflow.metadata.namespace ?? '', input.mcpVisibility))
  if (temperature !== undefined) env.push(plain('MODEL_TEMPERATURE', goFixed2(temperature)))
  env.push(...guardrailEnv(agent))
  env.push(...memoryEnv(agent, input.recalledMemory))
  env.push(...codeExecutionEnv(agent))
  if (spec.tools && spec.tools.length > 0) env.push(plain('AGENT_TOOLS', toolsJson(agent)))
  // The Agent's own key is for the Agent's provider, not for one a step switched to.
  const ref = overridesProvider(agent, override) ? undefined : spec.model.credentialsSecretRef
  if (ref && !providerKey) {
    // `ref.namespace` is ignored, as in purko: a pod can only read Secrets of its own namespace.
    env.push(fromSecret('MODEL_API_KEY', ref.name, ref.key || 'api-key', true))
  }
  env.push(...input.inputFromEnv.map((variable) => plain(variable.name, variable.value)))
  env.push(...runtimeEnv(agent))
  // Kinetic's own variables come last so that an agent's runtime.env cannot shadow them.
  env.push(plain('KINETIC_RUN_ID', input.runId), plain('KINETIC_ATTEMPT', String(input.attempt)))
  // The executor sends an MCP token only to a server of this namespace (executor/config.ts).
  env.push(plain('KINETIC_NAMESPACE', workflow.metadata.namespace ?? ''))
  if (input.traceparent) env.push(plain('TRACEPARENT', input.traceparent))
  env.push(...(input.telemetryEnv ?? []).map((variable) => plain(variable.name, variable.value)))
  return env
}
