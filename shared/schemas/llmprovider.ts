import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { dateTime, int64 } from './fields.js'

/** Provider families (`spec.type`). */
export const LLM_PROVIDER_TYPES = ['vertex-ai', 'anthropic', 'openai', 'ollama', 'custom'] as const
export type LLMProviderType = (typeof LLM_PROVIDER_TYPES)[number]

/** Wire formats (`spec.apiFormat`); inferred from the type when empty. */
export const LLM_API_FORMATS = ['anthropic', 'openai'] as const
export type LLMApiFormat = (typeof LLM_API_FORMATS)[number]

/** LLMProvider phases (`status.phase`). */
export const LLM_PROVIDER_PHASES = ['Pending', 'Ready', 'Error', 'Degraded'] as const
export type LLMProviderPhase = (typeof LLM_PROVIDER_PHASES)[number]

/** One model offered by a provider, with optional pricing in USD per million tokens. */
export const LLMModelSchema = z.object({
  name: z.string(),
  displayName: z.string().optional(),
  maxTokens: z.number().int().optional(),
  pricing: z.object({
    inputPerMToken: z.number().optional(),
    outputPerMToken: z.number().optional(),
  }).optional(),
})
export type LLMModel = z.infer<typeof LLMModelSchema>

/** Desired state of an LLMProvider. */
export const LLMProviderSpecSchema = z.object({
  type: z.enum(LLM_PROVIDER_TYPES).describe('Provider type.'),
  endpoint: z.string().optional().describe('Custom API endpoint URL.'),
  apiFormat: z.enum(LLM_API_FORMATS).optional().describe('API protocol format.'),
  model: z.string().describe('Default model name.'),
  models: z.array(LLMModelSchema).optional(),
  config: z.record(z.string(), z.string()).optional().describe('Provider settings (timeoutSeconds, projectId, region).'),
  credentials: z.object({
    secretRef: z.string().optional(),
    secretKey: z.string().optional(),
  }).optional().describe('Secret in the provider namespace holding the API key (default key api-key).'),
  healthCheck: z.object({
    enabled: z.boolean().optional(),
    intervalSeconds: z.number().int().optional(),
    timeoutSeconds: z.number().int().optional(),
  }).optional(),
  fallback: z.object({ providerRef: z.string().optional() }).optional(),
  default: z.boolean().optional().describe('Whether this is the default provider.'),
})
export type LLMProviderSpec = z.infer<typeof LLMProviderSpecSchema>

/** At most this many discovered model names are kept in `status.discoveredModels`. */
export const MAX_DISCOVERED_MODELS = 100

/**
 * Observed state of an LLMProvider. purko's fields keep their meaning; Kinetic adds the
 * generation it observed, the model names the last probe discovered (bounded) and the probe
 * bookkeeping every replica and tick agrees on (consecutive failures, next due time).
 */
export const LLMProviderStatusSchema = z.object({
  phase: z.enum(LLM_PROVIDER_PHASES).optional(),
  message: z.string().optional(),
  lastHealthCheck: dateTime().optional(),
  availableModels: z.number().int().optional(),
  conditions: z.array(StrictConditionSchema).optional(),
  observedGeneration: int64().optional().describe('Generation of the spec the status was computed from.'),
  discoveredModels: z.array(z.string().max(256)).max(MAX_DISCOVERED_MODELS).optional()
    .describe('Model names the last probe listed (at most 100; availableModels has the full count).'),
  consecutiveFailures: z.number().int().min(0).optional().describe('Probes that failed in a row (drives the backoff).'),
  nextProbeAt: dateTime().optional().describe('When the probe round next checks this provider.'),
})
export type LLMProviderStatus = z.infer<typeof LLMProviderStatusSchema>

/** An LLMProvider object as read from the API server (fully structural: unknown spec fields are pruned). */
export const LLMProviderSchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('LLMProvider').default('LLMProvider'),
  metadata: ObjectMetaSchema,
  spec: LLMProviderSpecSchema,
  status: LLMProviderStatusSchema.optional(),
})
export type LLMProvider = z.infer<typeof LLMProviderSchema>
