import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { dateTime } from './fields.js'

/** MCPServer phases (`status.phase`). */
export const MCP_SERVER_PHASES = ['Pending', 'Ready', 'Error'] as const
export type MCPServerPhase = (typeof MCP_SERVER_PHASES)[number]

/** Authentication modes of an MCPServer (`spec.auth`). */
export const MCP_AUTH_MODES = ['none', 'bearer'] as const
export type MCPAuthMode = (typeof MCP_AUTH_MODES)[number]

/** Desired state of an MCPServer. */
export const MCPServerSpecSchema = z.object({
  image: z.string().describe('Container image for the MCP server.'),
  port: z.number().int().min(1).max(65535).default(8000).describe('Port the server listens on.'),
  args: z.array(z.string()).optional().describe('Container command arguments.'),
  replicas: z.number().int().min(0).max(10).default(1),
  auth: z.enum(MCP_AUTH_MODES).default('none').describe('Authentication type.'),
  secretRef: z.string().optional().describe('Secret name containing the auth token (key token).'),
  icon: z.string().optional().describe('Display icon for the dashboard.'),
  category: z.string().optional().describe('Tool category for grouping.'),
  hostNetwork: z.boolean().default(false).describe('Use host networking.'),
  env: z.array(z.object({ name: z.string(), value: z.string().optional() })).optional()
    .describe('Extra environment variables for the container.'),
  resources: z.object({
    requests: z.record(z.string(), z.string()).optional(),
    limits: z.record(z.string(), z.string()).optional(),
  }).optional(),
})
export type MCPServerSpec = z.infer<typeof MCPServerSpecSchema>

/** Observed state of an MCPServer. */
export const MCPServerStatusSchema = z.object({
  phase: z.enum(MCP_SERVER_PHASES).optional(),
  toolCount: z.number().int().optional(),
  lastDiscovery: dateTime().optional(),
  message: z.string().optional(),
  conditions: z.array(StrictConditionSchema).optional(),
})
export type MCPServerStatus = z.infer<typeof MCPServerStatusSchema>

/** An MCPServer object as read from the API server (fully structural). */
export const MCPServerSchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('MCPServer').default('MCPServer'),
  metadata: ObjectMetaSchema,
  spec: MCPServerSpecSchema,
  status: MCPServerStatusSchema.optional(),
})
export type MCPServer = z.infer<typeof MCPServerSchema>
