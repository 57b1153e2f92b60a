import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { ConditionSchema } from './condition.js'
import { dateTime, EnvVarSchema, int64, ObservabilitySchema, SecretKeyRefSchema } from './fields.js'

/** Agent archetypes (`spec.type`). */
export const AGENT_TYPES = ['planner', 'executor', 'reviewer', 'router', 'monitor', 'retriever'] as const
export type AgentType = (typeof AGENT_TYPES)[number]

/** Autonomy levels (`spec.autonomyLevel`). */
export const AUTONOMY_LEVELS = ['full', 'supervised', 'restricted', 'manual'] as const
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number]

/** Shu-Ha-Ri trust levels. */
export const SHU_HA_RI_LEVELS = ['shu', 'ha', 'ri'] as const
export type ShuHaRiLevel = (typeof SHU_HA_RI_LEVELS)[number]

/** Tool kinds (`spec.tools[].type`). */
export const TOOL_TYPES = ['function', 'api', 'mcp', 'builtin', 'kubernetes', 'workflow', 'cli'] as const
export type ToolType = (typeof TOOL_TYPES)[number]

/** Agent phases (`status.phase`). */
export const AGENT_PHASES = ['Pending', 'Initializing', 'Ready', 'Running', 'Error', 'Terminated'] as const
export type AgentPhase = (typeof AGENT_PHASES)[number]

/** Legacy memory types accepted in `spec.memory.type`. */
export const MEMORY_TYPES = ['buffer', 'summary', 'vector', 'none'] as const
/** Memory behaviours accepted in `spec.memory.behavior` (wins over `type`). */
export const MEMORY_BEHAVIORS = ['off', 'session', 'persistent'] as const
/** Recall pools accepted in `spec.memory.scope`. */
export const MEMORY_SCOPES = ['agent', 'group', 'namespace'] as const

/** Largest `spec.model.maxTokens` an Agent may ask for. */
export const MAX_MODEL_TOKENS = 2000000

/** Model settings of an Agent (unknown fields kept); strings the CEL rules read are bounded to keep their cost estimate low. */
export const ModelSchema = z.looseObject({
  provider: z.string().max(253).describe('LLMProvider name or provider family (e.g. anthropic, openai).'),
  name: z.string().max(253).describe('The model name.'),
  version: z.string().optional().describe('The model version or variant.'),
  temperature: z.number().optional().describe('Sampling temperature, 0.0 to 2.0.'),
  maxTokens: z.number().int().optional().describe('Maximum number of tokens to generate, 1 to 2000000.'),
  topP: z.number().min(0).max(1).optional().describe('Top-p (nucleus) sampling parameter.'),
  frequencyPenalty: z.number().min(-2).max(2).optional().describe('Frequency penalty to reduce repetition.'),
  presencePenalty: z.number().min(-2).max(2).optional().describe('Presence penalty to encourage topic diversity.'),
  credentialsSecretRef: SecretKeyRefSchema.optional().describe('Secret containing model provider credentials.'),
  fallback: z.looseObject({
    model: z.string().optional(),
    provider: z.string().optional(),
  }).optional().describe('Fallback model configuration if the primary model is unavailable.'),
}).meta({
  description: 'Model configuration for the AI model used by this agent.',
  // Numbers are quoted back with format(): kube-apiserver costs `'...' + string(n)` as a string of
  // unbounded size and refuses the whole CRD, while format() is costed by its template.
  'x-kubernetes-validations': [
    { rule: "self.provider != ''", message: 'spec.model.provider must not be empty', fieldPath: '.provider' },
    { rule: "self.name != ''", message: 'spec.model.name must not be empty', fieldPath: '.name' },
    {
      rule: `!has(self.maxTokens) || (self.maxTokens >= 1 && self.maxTokens <= ${MAX_MODEL_TOKENS})`,
      message: `spec.model.maxTokens must be between 1 and ${MAX_MODEL_TOKENS}`,
      messageExpression: `'spec.model.maxTokens must be between 1 and ${MAX_MODEL_TOKENS}, got %d'.format([self.maxTokens])`,
      fieldPath: '.maxTokens',
    },
    {
      rule: '!has(self.temperature) || (self.temperature >= 0.0 && self.temperature <= 2.0)',
      message: 'spec.model.temperature must be between 0.0 and 2.0',
      messageExpression: "'spec.model.temperature must be between 0.0 and 2.0, got %f'.format([self.temperature])",
      fieldPath: '.temperature',
    },
  ],
})
export type Model = z.infer<typeof ModelSchema>

/** One tool an Agent may call. */
export const ToolSchema = z.looseObject({
  name: z.string().max(253).describe('Name of the tool (unique within the Agent).'),
  type: z.enum(TOOL_TYPES).describe('Type of the tool.'),
  endpoint: z.looseObject({
    url: z.string().optional().describe('URL of the tool endpoint.'),
    method: z.enum(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']).optional().describe('HTTP method for the endpoint.'),
    headers: z.record(z.string(), z.string()).optional().describe('HTTP headers to include in requests.'),
    timeoutSeconds: z.number().int().min(1).optional().describe('Timeout in seconds for endpoint requests.'),
    authScheme: z.string().optional().describe('Authentication scheme (e.g. Bearer).'),
    authHeader: z.string().optional().describe('Header carrying the credential.'),
  }).optional().describe('Endpoint configuration for API-based tools.'),
  credentialsSecretRef: SecretKeyRefSchema.optional().describe('Secret with the tool credential.'),
  config: z.looseObject({
    configMapName: z.string().max(253).optional().describe('ConfigMap of the namespace mounted at /etc/tool-config/<tool>.'),
  }).optional().describe('Additional tool-specific configuration.'),
}).describe('An external tool or function available to the agent.')
export type Tool = z.infer<typeof ToolSchema>

/** Memory settings (declared keys, unknown fields kept); enum checks carry purko's messages. */
export const MemorySchema = z.looseObject({
  type: z.string().max(63).optional().describe('Legacy memory type: buffer, summary, vector or none.'),
  behavior: z.string().max(63).optional().describe('off = clean slate, session = within one run, persistent = across runs.'),
  providerRef: z.string().optional().describe('MemoryProvider name; empty = platform default.'),
  scope: z.string().max(63).optional().describe('Recall pool: agent (default), group, namespace.'),
  backend: z.string().optional().describe('Deprecated storage backend name.'),
  ttl: z.string().optional().describe('Time-to-live for memory entries.'),
  maxEntries: z.number().int().min(0).optional().describe('Maximum number of memory entries to retain (<= 10000).'),
  maxContextTokens: z.number().int().optional().describe('Recall budget in tokens (<= 32768).'),
  retentionPolicy: z.string().optional().describe('Deprecated retention policy.'),
  persistentStorage: z.looseObject({
    enabled: z.boolean().optional(),
    volumeClaimRef: z.string().optional(),
  }).optional().describe('Legacy vector PVC mount.'),
  vectorStore: z.looseObject({
    enabled: z.boolean().optional(),
    provider: z.string().optional(),
    dimensions: z.number().int().min(1).optional(),
    indexName: z.string().optional(),
  }).optional().describe('Vector store configuration for semantic memory.'),
}).meta({
  description: 'Memory configuration for the agent.',
  'x-kubernetes-validations': [
    {
      rule: `!has(self.type) || self.type in ${celList(MEMORY_TYPES)}`,
      message: 'spec.memory.type must be buffer, summary, vector, or none',
      messageExpression: `'spec.memory.type must be buffer, summary, vector, or none (got "' + self.type + '")'`,
      fieldPath: '.type',
    },
    {
      rule: `!has(self.behavior) || self.behavior in ${celList(MEMORY_BEHAVIORS)}`,
      message: 'spec.memory.behavior must be off, session, or persistent',
      messageExpression: `'spec.memory.behavior must be off, session, or persistent (got "' + self.behavior + '")'`,
      fieldPath: '.behavior',
    },
    {
      rule: `!has(self.scope) || self.scope in ${celList(MEMORY_SCOPES)}`,
      message: 'spec.memory.scope must be agent, group, or namespace',
      messageExpression: `'spec.memory.scope must be agent, group, or namespace (got "' + self.scope + '")'`,
      fieldPath: '.scope',
    },
    {
      rule: '!has(self.maxContextTokens) || self.maxContextTokens <= 32768',
      message: 'spec.memory.maxContextTokens must be <= 32768',
      messageExpression: "'spec.memory.maxContextTokens must be <= 32768 (got %d)'.format([self.maxContextTokens])",
      fieldPath: '.maxContextTokens',
    },
    {
      rule: '!has(self.maxEntries) || self.maxEntries <= 10000',
      message: 'spec.memory.maxEntries must be <= 10000',
      messageExpression: "'spec.memory.maxEntries must be <= 10000 (got %d)'.format([self.maxEntries])",
      fieldPath: '.maxEntries',
    },
  ],
})
export type Memory = z.infer<typeof MemorySchema>

const resourceList = (keys: string[]) =>
  z.looseObject(Object.fromEntries(keys.map((k) => [k, z.string().optional()])))

/** Runtime settings of the step executor for this Agent (unknown fields kept). */
export const RuntimeSchema = z.looseObject({
  image: z.string().optional().describe('Executor image for this agent.'),
  resources: z.looseObject({
    limits: resourceList(['cpu', 'memory', 'gpu']).optional(),
    requests: resourceList(['cpu', 'memory']).optional(),
  }).optional().describe('Compute resource requirements.'),
  env: z.array(EnvVarSchema).optional().describe('Environment variables for the executor container.'),
  serviceAccountName: z.string().optional().describe('ServiceAccount the agent runs as.'),
  config: z.record(z.string(), z.string()).optional().describe('Executor settings, passed as EXECUTOR_<KEY> env.'),
  codeExecution: z.looseObject({
    enabled: z.boolean().optional(),
    languages: z.array(z.string()).optional(),
    sandbox: z.looseObject({
      maxExecutionSeconds: z.number().int().optional(),
      maxOutputBytes: z.number().int().optional(),
      networkAccess: z.boolean().optional(),
      writablePaths: z.array(z.string()).optional(),
    }).optional(),
    preinstalled: z.array(z.string()).optional(),
  }).optional().describe('Code execution sandbox settings.'),
}).describe('Runtime configuration for the agent container.')
export type Runtime = z.infer<typeof RuntimeSchema>

/** Guardrails read by the executor plus the keys purko's CRD declares (unknown fields kept). */
export const GuardrailsSchema = z.looseObject({
  maxIterations: z.number().int().optional().describe('Maximum tool-calling iterations.'),
  costLimitUSD: z.number().optional().describe('Cost limit of one execution in USD.'),
  contentFilters: z.array(z.string()).optional().describe('Content filters applied to output.'),
  maxExecutionTime: z.string().optional().describe('Maximum execution time (duration string).'),
  humanApprovalRequired: z.boolean().optional().describe('Whether steps of this agent wait for human approval.'),
  inputFilters: z.array(z.string()).optional().describe('Filters applied to input before processing.'),
  outputFilters: z.array(z.string()).optional().describe('Filters applied to output before returning.'),
  contentPolicy: z.string().optional().describe('Content moderation policy to enforce.'),
  maxTokensPerRequest: z.number().int().min(1).optional().describe('Maximum tokens allowed per single request.'),
  rateLimiting: z.looseObject({
    requestsPerMinute: z.number().int().min(1).optional(),
    tokensPerMinute: z.number().int().min(1).optional(),
  }).optional().describe('Rate limiting configuration for agent requests.'),
}).describe('Safety guardrails and content filtering configuration.')
export type Guardrails = z.infer<typeof GuardrailsSchema>

const lifecycleHook = z.looseObject({
  command: z.array(z.string()).optional(),
  webhook: z.string().optional(),
})

/** Desired state of an Agent. */
export const AgentSpecSchema = z.looseObject({
  model: ModelSchema,
  type: z.enum(AGENT_TYPES).optional().describe('Agent archetype that determines behavior profile.'),
  role: z.string().min(1).optional().describe('The role or persona of the agent.'),
  systemPrompt: z.string().optional().describe('System-level prompt that defines agent behavior.'),
  instructions: z.string().optional().describe('Detailed instructions for the agent.'),
  autonomyLevel: z.enum(AUTONOMY_LEVELS).optional().describe('Level of autonomous decision-making allowed.'),
  shuHaRi: z.object({
    level: z.enum(SHU_HA_RI_LEVELS).optional().describe('Current trust level.'),
    promotedAt: dateTime().optional().describe('When the agent was last promoted.'),
  }).optional().describe('Shu-Ha-Ri progression of this agent.'),
  approvalPolicy: z.object({
    mode: z.enum(['manual', 'semi-autonomous', 'autonomous']).optional(),
    autoApproveRiskBelow: z.enum(['low', 'medium', 'high']).optional(),
    requireApprovalAbove: z.enum(['low', 'medium', 'high']).optional(),
  }).optional().describe('Human-approval policy for agent actions.'),
  confidenceThreshold: z.number().min(0).max(1).optional()
    .describe('Minimum confidence score required before the agent takes autonomous action.'),
  replicas: z.number().int().min(0).max(100).default(1).describe('Number of agent replicas.'),
  maxConcurrency: z.number().int().min(1).default(10).describe('Maximum concurrent tasks the agent can process.'),
  timeout: z.string().default('5m').describe('Default timeout of agent operations (e.g. 30s, 5m, 1h).'),
  tools: z.array(ToolSchema).max(256).optional().meta({
    description: 'Tools the agent can use; names are unique.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
  memory: MemorySchema.optional(),
  runtime: RuntimeSchema.optional(),
  scaling: z.looseObject({
    minReplicas: z.number().int().min(0).optional(),
    maxReplicas: z.number().int().min(1).optional(),
    targetUtilization: z.number().int().min(1).max(100).optional(),
  }).optional().describe('Autoscaling configuration for the agent.'),
  guardrails: GuardrailsSchema.optional(),
  observability: ObservabilitySchema.optional().describe('Observability configuration.'),
  lifecycle: z.looseObject({
    preStart: lifecycleHook.optional(),
    postStop: lifecycleHook.optional(),
    healthCheck: z.looseObject({
      path: z.string().optional(),
      port: z.number().int().optional(),
      intervalSeconds: z.number().int().min(1).optional(),
    }).optional(),
  }).optional().describe('Lifecycle hooks for the agent.'),
  schedule: z.looseObject({
    cron: z.string().optional(),
    timezone: z.string().optional(),
    suspend: z.boolean().optional(),
  }).optional().describe('Schedule configuration for periodic agent activation.'),
  blastRadiusLimit: z.looseObject({
    maxAffectedResources: z.number().int().min(1).optional(),
    allowedNamespaces: z.array(z.string()).optional(),
    deniedActions: z.array(z.string()).optional(),
  }).optional().describe('Limits on the scope of changes an agent can make.'),
  escalationPolicy: z.looseObject({
    escalateTo: z.string().optional(),
    timeout: z.string().optional(),
    notificationChannel: z.string().optional(),
  }).optional().describe('Policy for escalating decisions that exceed the agent autonomy level.'),
  capabilities: z.array(z.looseObject({})).optional().describe('Agent capabilities.'),
}).meta({
  description: 'AgentSpec defines the desired state of an Agent.',
  'x-kubernetes-validations': [
    {
      rule: "!has(self.type) || self.type != 'monitor' || !has(self.replicas) || self.replicas <= 1",
      message: 'AG-005: monitor agents are limited to replicas <= 1',
      fieldPath: '.replicas',
    },
    {
      rule: "!has(self.type) || self.type != 'retriever' || (has(self.memory) && ("
        + "(has(self.memory.type) && self.memory.type in ['vector', 'buffer', 'summary'])"
        + " || (has(self.memory.behavior) && self.memory.behavior in ['session', 'persistent'])))",
      message: 'AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)',
    },
  ],
})
export type AgentSpec = z.infer<typeof AgentSpecSchema>

/** Most step attempts an Agent remembers having counted (the exactly-once window). */
export const MAX_RECORDED_ATTEMPTS = 256

/** Usage metrics the workflow functions record on an Agent (purko's fields plus Kinetic's). */
export const AgentMetricsSchema = z.looseObject({
  totalInvocations: z.number().int().optional().describe('Step attempts this agent finished.'),
  totalTokensUsed: z.number().int().optional().describe('Input plus output tokens of all attempts.'),
  averageLatencyMs: z.number().int().optional().describe('Mean time from step start to result, in ms.'),
  totalLatencyMs: z.number().int().optional().describe('Sum of all attempt latencies in ms, so the mean stays exact.'),
  totalCostUSD: z.number().optional().describe('Cost of all attempts since the last reset, in USD.'),
  lastInvocationTime: dateTime().optional().describe('When the last attempt finished.'),
  successCount: z.number().int().optional(),
  failureCount: z.number().int().optional(),
  consecutiveFailures: z.number().int().optional(),
  consecutiveSuccesses: z.number().int().optional().describe('Successes since the last failure (the incident-free streak).'),
  successRate: z.number().min(0).max(1).optional().describe('successCount / (successCount + failureCount).'),
  costResetTime: dateTime().optional().describe('When totalCostUSD was last reset by the kinetic.dev/reset-cost annotation.'),
  recordedAttempts: z.array(z.string().max(512)).max(MAX_RECORDED_ATTEMPTS).optional()
    .describe('Keys of the latest step attempts counted, so a redelivered result is not counted twice.'),
})
export type AgentMetrics = z.infer<typeof AgentMetricsSchema>

/** One recorded promotion approval (from the purko.io/approve-promotion annotation). */
export const PromotionApprovalSchema = z.looseObject({
  level: z.enum(SHU_HA_RI_LEVELS).describe('The level the approval is for.'),
  value: z.string().max(253).optional().describe('The annotation value as given (e.g. "ha by alice"); each distinct value counts once.'),
  approvedAt: dateTime().describe('When the approval was recorded.'),
})
export type PromotionApproval = z.infer<typeof PromotionApprovalSchema>

/** Observed Shu-Ha-Ri progress of an Agent. */
export const ShuHaRiStatusSchema = z.looseObject({
  currentLevel: z.enum(SHU_HA_RI_LEVELS).optional(),
  levelSince: dateTime().optional().describe('When the agent entered its current level (the promotion clock).'),
  readyForPromotion: z.boolean().optional(),
  policy: z.string().optional().describe('The AgentAutonomyPolicy that was applied.'),
  approvals: z.array(PromotionApprovalSchema).max(64).optional().describe('Approvals recorded for the next level.'),
  levelStart: z.looseObject({
    invocations: z.number().int().optional(),
    successes: z.number().int().optional(),
    failures: z.number().int().optional(),
  }).optional().describe('The metrics counters when the agent entered its level: actions and success rate count from here.'),
  promotionProgress: z.looseObject({
    nextLevel: z.enum(SHU_HA_RI_LEVELS).optional(),
    actionsCompleted: z.number().int().optional(),
    actionsRequired: z.number().int().optional(),
    successRate: z.number().optional(),
    successRateRequired: z.number().optional(),
    daysInLevel: z.number().int().optional(),
    daysRequired: z.number().int().optional(),
    incidentFreeStreak: z.number().int().optional(),
    streakRequired: z.number().int().optional(),
    approvals: z.number().int().optional(),
    approvalsRequired: z.number().int().optional(),
  }).optional(),
})
export type ShuHaRiStatus = z.infer<typeof ShuHaRiStatusSchema>

/** Observed state of an Agent. */
export const AgentStatusSchema = z.looseObject({
  phase: z.enum(AGENT_PHASES).optional().describe('Current phase of the agent lifecycle.'),
  message: z.string().optional().describe('Human-readable message describing the current status.'),
  observedGeneration: int64().optional().describe('Most recent generation observed.'),
  conditions: z.array(ConditionSchema).optional().describe('Latest observations of the agent state.'),
  metrics: AgentMetricsSchema.optional(),
  shuHaRi: ShuHaRiStatusSchema.optional(),
  serviceAccountName: z.string().optional()
    .describe('The ServiceAccount that exists for this agent and that its step Jobs run as (set by agent-changed).'),
  startTime: dateTime().optional(),
  completionTime: dateTime().optional(),
  lastActiveTime: dateTime().optional(),
  availableReplicas: z.number().int().optional(),
  totalTasksProcessed: int64().optional(),
  errorCount: int64().optional(),
}).describe('AgentStatus defines the observed state of an Agent.')
export type AgentStatus = z.infer<typeof AgentStatusSchema>

/** An Agent object as read from the API server. */
export const AgentSchema = z.looseObject({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('Agent').default('Agent'),
  metadata: ObjectMetaSchema,
  spec: AgentSpecSchema,
  status: AgentStatusSchema.optional(),
}).describe('Agent represents an autonomous AI agent managed within a Kubernetes cluster.')
export type Agent = z.infer<typeof AgentSchema>

function celList(values: readonly string[]): string {
  return `[${values.map((v) => `'${v}'`).join(', ')}]`
}
