/**
 * The Kubernetes Job that runs one attempt of one Workflow step (purko's job builder), with
 * Kinetic's fixes: credentials only through `secretKeyRef`, the agent's ServiceAccount, a
 * restricted pod security context, and labels that identify the run and the attempt. A step's
 * `model` (Kinetic extension, spec §5.10) overrides the Agent's provider, model
 * name, temperature and maxTokens for that step's Job.
 */
import type { V1EnvVar, V1Job, V1ResourceRequirements, V1Volume, V1VolumeMount } from '@kubernetes/client-node'
import type { Agent } from '../../schemas/agent.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import type { RegistryEntry } from '../../mcp/plan/registry.js'
import { stepMcpView, type McpVisibility } from '../../mcp/plan/visibility.js'
import type { Workflow, WorkflowStep } from '../../schemas/workflow.js'
import {
  API_VERSION, LABEL_AGENT, LABEL_ATTEMPT, LABEL_RUN_ID, LABEL_SHARD, LABEL_STEP, LABEL_WORKFLOW,
} from '../../schemas/labels.js'
import { agentServiceAccountName } from '../../agent/plan/names.js'
import { parseGoDuration } from '../../core/duration.js'
import { goFixed2, goFormatValue, goJson, goJsonOrdered, goShortestDecimal } from '../../core/go-format.js'
import { memoryEnv, usesLegacyVectorVolume } from '../../memory/plan/memory-env.js'
import { stepJobShard } from './job-shard.js'
import { sha256Hex } from '../../core/sha256.js'
import type { PlainEnv } from './step-input.js'
import type { StepCredentials } from './credentials.js'
import { overridesProvider, resolvedModelName, wantedProviderName } from '../../agent/plan/provider-resolution.js'

/** Container name of every step Job (purko's executor contract). */
export const STEP_CONTAINER_NAME = 'step-executor'
/** Step deadline when neither the step nor the agent sets one (seconds). */
export const DEFAULT_STEP_TIMEOUT_SECONDS = 1800
/** Finished step Jobs are garbage-collected after this many seconds. */
export const JOB_TTL_SECONDS = 3600
/** UID and GID step containers run as (the conventional unprivileged "nonroot" user). */
export const STEP_RUN_AS_ID = 65532

const MAX_NAME = 63
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const INTEGER = /^[-+]?\d+$/

/** Everything the builder needs; lookups (agent, provider, servers, recall) happen before. */
export interface StepJobInput {
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
  executorImage: string
  hostNetwork: boolean
  traceparent?: string
  /** The functions' OTEL_* export settings (shared/telemetry/config.ts), so the executor's spans reach the same collector. */
  telemetryEnv?: ReadonlyArray<{ name: string; value: string }>
  recalledMemory?: string
  /** Computed by `stepTimeoutSeconds`. */
  activeDeadlineSeconds: number
}

/**
 * Pure: `<wf>-<step>-<runId>` (plus `-r<n>` for retry n), or `<12 hex of sha256("<wf>/<step>")>-<runId>[-r<n>]`
 * when that is longer than 63 characters; the same inputs always give the same name.
 */
export function stepJobName(workflowName: string, stepName: string, runId: string, attempt: number): string {
  const suffix = attempt > 0 ? `-r${attempt}` : ''
  const base = `${workflowName}-${stepName}-${runId}${suffix}`
  if (base.length <= MAX_NAME) return base
  return `${sha256Hex(`${workflowName}/${stepName}`).slice(0, 12)}-${runId}${suffix}`
}

/**
 * Pure: `value` when it is a valid label value, else a deterministic valid one (a prefix plus 12
 * hex of its SHA-256). Workflow and Agent names may be up to 253 characters but label values only
 * 63, so anything that must find a Job's Workflow should use the ownerReference, not this label.
 */
export function labelValue(value: string): string {
  if (value.length <= MAX_NAME && LABEL_VALUE.test(value)) return value
  const prefix = value.replace(/[^-A-Za-z0-9_.]/g, '-').slice(0, MAX_NAME - 13).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
  const hash = sha256Hex(value).slice(0, 12)
  return prefix === '' ? hash : `${prefix}-${hash}`
}

/** Pure: a step's deadline in seconds: its `timeout.timeoutSeconds` > 0, else the agent's `guardrails.maxExecutionTime`, else 1800. */
export function stepTimeoutSeconds(step: WorkflowStep, agent: Agent): number {
  const own = step.timeout?.timeoutSeconds
  if (own !== undefined && own > 0) return own
  const raw = agent.spec.guardrails?.maxExecutionTime
  const parsed = typeof raw === 'string' ? parseGoDuration(raw) : null
  if (parsed !== null && Math.trunc(parsed) >= 1) return Math.trunc(parsed)
  return DEFAULT_STEP_TIMEOUT_SECONDS
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
    const ep = tool.endpoint
    if (ep) {
      const endpoint: Record<string, unknown> = { url: ep.url ?? '' }
      if (ep.method) endpoint.method = ep.method
      if (ep.headers && Object.keys(ep.headers).length > 0) endpoint.headers = sortedRecord(ep.headers)
      if (ep.timeoutSeconds) endpoint.timeoutSeconds = ep.timeoutSeconds
      if (ep.authScheme) endpoint.authScheme = ep.authScheme
      if (ep.authHeader) endpoint.authHeader = ep.authHeader
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
  const g = agent.spec.guardrails
  if (!g) return []
  const env: V1EnvVar[] = []
  if (g.maxIterations !== undefined) env.push(plain('MAX_TOOL_CALLS', goFormatValue(g.maxIterations)))
  if (g.costLimitUSD !== undefined) env.push(plain('COST_LIMIT_USD', goFormatValue(g.costLimitUSD)))
  if (g.contentFilters !== undefined) env.push(plain('CONTENT_FILTERS', goJson(g.contentFilters)))
  if (g.maxExecutionTime !== undefined) env.push(plain('MAX_EXECUTION_TIME', goFormatValue(g.maxExecutionTime)))
  return env
}

/** The provider's own Secret, as for a provider of the Workflow's namespace. */
function ownCredentials(provider: LLMProvider): StepCredentials {
  const spec = provider.spec
  const secret = spec.credentials?.secretRef
  // A vertex-ai Secret holds service-account credentials (mounted below), not an API key, unless a key is named.
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
  const pricing = spec.models?.find((m) => m.name === model)?.pricing
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

function stepEnv(input: StepJobInput): V1EnvVar[] {
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
    const p = providerEnv(provider, model, input.credentials ?? ownCredentials(provider))
    env.push(...p.env)
    providerKey = p.hasKey
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
  env.push(...input.inputFromEnv.map((e) => plain(e.name, e.value)))
  env.push(...runtimeEnv(agent))
  // Kinetic's own variables come last so that an agent's runtime.env cannot shadow them.
  env.push(plain('KINETIC_RUN_ID', input.runId), plain('KINETIC_ATTEMPT', String(input.attempt)))
  // The executor sends an MCP token only to a server of this namespace (executor/config.ts).
  env.push(plain('KINETIC_NAMESPACE', workflow.metadata.namespace ?? ''))
  if (input.traceparent) env.push(plain('TRACEPARENT', input.traceparent))
  env.push(...(input.telemetryEnv ?? []).map((e) => plain(e.name, e.value)))
  return env
}

function volumeName(raw: string): string {
  return raw.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, MAX_NAME).replace(/^-+|-+$/g, '') || 'tool-cfg'
}

function volumes(input: StepJobInput): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const { agent, provider } = input
  // The root filesystem is read-only; executors write scratch files (code execution) under /tmp.
  const vols: V1Volume[] = [{ name: 'tmp', emptyDir: {} }]
  const mounts: V1VolumeMount[] = [{ name: 'tmp', mountPath: '/tmp' }]
  for (const tool of agent.spec.tools ?? []) {
    const cm = (tool.config as { configMapName?: unknown } | undefined)?.configMapName
    if (typeof cm !== 'string' || cm === '') continue
    const name = volumeName(`tool-cfg-${tool.name.replaceAll('_', '-')}`)
    vols.push({ name, configMap: { name: cm, optional: true } })
    mounts.push({ name, mountPath: `/etc/tool-config/${tool.name}`, readOnly: true })
  }
  if (usesLegacyVectorVolume(agent)) {
    const claimName = agent.spec.memory?.persistentStorage?.volumeClaimRef || `${agent.metadata.name ?? ''}-memory`
    vols.push({ name: 'agent-memory', persistentVolumeClaim: { claimName } })
    mounts.push({ name: 'agent-memory', mountPath: '/var/run/agent-memory' })
  }
  const gcp = provider ? (input.credentials ?? ownCredentials(provider)).gcp : undefined
  if (provider?.spec.type === 'vertex-ai' && gcp) {
    // A copy holds the key under the provider's name; the executor expects the file credentials.json.
    const items = gcp.key ? { items: [{ key: gcp.key, path: 'credentials.json' }] } : {}
    vols.push({ name: 'gcp-creds', secret: { secretName: gcp.secret, ...items, optional: true } })
    mounts.push({ name: 'gcp-creds', mountPath: '/var/run/secrets/gcp', readOnly: true })
  }
  return { volumes: vols, mounts }
}

function resources(agent: Agent): V1ResourceRequirements | undefined {
  const r = agent.spec.runtime?.resources
  const pick = (list: Record<string, unknown> | undefined) => {
    const out: Record<string, string> = {}
    for (const key of ['cpu', 'memory']) {
      const v = list?.[key]
      if (typeof v === 'string' && v !== '') out[key] = v
    }
    return Object.keys(out).length > 0 ? out : undefined
  }
  const requests = pick(r?.requests)
  const limits = pick(r?.limits)
  if (!requests && !limits) return undefined
  return { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) }
}

/** Pure: the step Job manifest; identical input always yields an identical manifest (nothing time- or random-based). */
export function stepJobManifest(input: StepJobInput): V1Job {
  const { workflow, step, agent, runId, attempt } = input
  const workflowName = workflow.metadata.name ?? ''
  const labels: Record<string, string> = {
    [LABEL_WORKFLOW]: labelValue(workflowName),
    [LABEL_STEP]: labelValue(step.name),
    [LABEL_AGENT]: labelValue(agent.metadata.name ?? step.agentRef?.name ?? ''),
    [LABEL_RUN_ID]: labelValue(runId),
    [LABEL_ATTEMPT]: String(attempt),
    [LABEL_SHARD]: stepJobShard(workflow.metadata.namespace ?? '', workflowName),
  }
  const { volumes: vols, mounts } = volumes(input)
  const res = resources(agent)
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: stepJobName(workflowName, step.name, runId, attempt),
      namespace: workflow.metadata.namespace ?? '',
      labels,
      ownerReferences: [{
        apiVersion: API_VERSION,
        kind: 'Workflow',
        name: workflowName,
        uid: workflow.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: input.activeDeadlineSeconds,
      ttlSecondsAfterFinished: JOB_TTL_SECONDS,
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          restartPolicy: 'Never',
          // Steps run as the agent's own identity (purko uses the namespace default); the planner
          // starts no step before that ServiceAccount exists. Its token is not mounted because
          // executors talk to models and MCP servers, not to the API server.
          serviceAccountName: agentServiceAccountName(agent),
          automountServiceAccountToken: false,
          hostNetwork: input.hostNetwork,
          dnsPolicy: input.hostNetwork ? 'Default' : 'ClusterFirst',
          securityContext: {
            runAsNonRoot: true,
            runAsUser: STEP_RUN_AS_ID,
            runAsGroup: STEP_RUN_AS_ID,
            fsGroup: STEP_RUN_AS_ID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [{
            name: STEP_CONTAINER_NAME,
            image: agent.spec.runtime?.image || input.executorImage,
            imagePullPolicy: 'IfNotPresent',
            env: stepEnv(input),
            ...(res ? { resources: res } : {}),
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
              capabilities: { drop: ['ALL'] },
            },
            volumeMounts: mounts,
          }],
          volumes: vols,
        },
      },
    },
  }
}
