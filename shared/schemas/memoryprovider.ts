import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { dateTime, int64 } from './fields.js'

/** Memory backends (`spec.type`); only builtin is implemented. */
export const MEMORY_PROVIDER_TYPES = ['builtin', 'redis', 'postgres', 'mcp'] as const
export type MemoryProviderType = (typeof MEMORY_PROVIDER_TYPES)[number]

/** Desired state of a MemoryProvider. */
export const MemoryProviderSpecSchema = z.object({
  type: z.enum(MEMORY_PROVIDER_TYPES),
  config: z.record(z.string(), z.string()).optional(),
  credentials: z.object({
    secretRef: z.string().optional(),
    secretKey: z.string().optional(),
  }).optional(),
  default: z.boolean().optional().describe('Platform default when an Agent names no providerRef.'),
  retention: z.object({
    maxEntriesPerScope: z.number().int().optional().describe('Per-scope entry cap (500 when unset).'),
    maxAgeDays: z.number().int().optional(),
    recallLogMaxAgeDays: z.number().int().optional(),
  }).optional(),
})
export type MemoryProviderSpec = z.infer<typeof MemoryProviderSpecSchema>

/** Observed state of a MemoryProvider. */
export const MemoryProviderStatusSchema = z.object({
  healthy: z.boolean().optional(),
  entryCount: int64().optional(),
  lastError: z.string().optional(),
  lastChecked: dateTime().optional(),
  observedGeneration: int64().optional().describe('Generation of the spec the status was computed from (Kinetic).'),
})
export type MemoryProviderStatus = z.infer<typeof MemoryProviderStatusSchema>

/** A MemoryProvider object as read from the API server (fully structural). */
export const MemoryProviderSchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('MemoryProvider').default('MemoryProvider'),
  metadata: ObjectMetaSchema,
  spec: MemoryProviderSpecSchema,
  status: MemoryProviderStatusSchema.optional(),
})
export type MemoryProvider = z.infer<typeof MemoryProviderSchema>
