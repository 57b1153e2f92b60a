import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { BASELINE_CAPABILITIES, dateTime, int64, MCP_TRANSPORT_KINDS } from './fields.js'

/** MCPServer phases (`status.phase`). */
export const MCP_SERVER_PHASES = ['Pending', 'Ready', 'Error'] as const
export type MCPServerPhase = (typeof MCP_SERVER_PHASES)[number]

/** Authentication modes of an MCPServer (`spec.auth`). */
export const MCP_AUTH_MODES = ['none', 'bearer'] as const
export type MCPAuthMode = (typeof MCP_AUTH_MODES)[number]

/** How the server speaks MCP (`spec.transport`, a Kinetic addition). */
export const MCP_TRANSPORTS = MCP_TRANSPORT_KINDS
export type MCPTransport = (typeof MCP_TRANSPORTS)[number]

/** Capabilities an MCPServer may add: exactly what the Pod Security baseline level admits (spec §2.6). */
export const MCP_CAPABILITIES = BASELINE_CAPABILITIES

/** Label on an MCPServer's Deployment, Service and pods (purko's). */
export const LABEL_MCP_SERVER = 'purko.io/mcp-server'
/** Finalizer that removes the registry entry before the MCPServer goes (purko's). */
export const FINALIZER_MCPSERVER = 'purko.io/mcpserver-finalizer'
/** Most tools kept in `status.tools` (and the discovery cap). */
export const MAX_STATUS_TOOLS = 256
/** Longest tool description kept in status. */
export const MAX_TOOL_DESCRIPTION = 256

const INT32_MAX = 2147483647
/** Bounds of `spec.env` (purko has none; far above what a pod spec carries in practice). */
export const MAX_ENV_VARS = 512
export const MAX_ENV_VALUE = 65536

/** One environment variable of an MCPServer: a value, or (Kinetic) a key of a Secret in the MCPServer's namespace. */
export const MCPServerEnvVarSchema = z.object({
  name: z.string(),
  // Bounded so the exclusivity rule below has a finite CEL cost.
  value: z.string().max(MAX_ENV_VALUE).optional(),
  valueFrom: z.object({
    secretKeyRef: z.object({
      name: z.string().min(1).max(253).describe('Secret in the MCPServer namespace.'),
      key: z.string().min(1).max(253).describe('Key inside the Secret.'),
      optional: z.boolean().optional().describe('The pod starts without the variable when the Secret or key is missing.'),
    }),
  }).optional().describe('Kinetic: the value from a Secret key, passed to the pod as secretKeyRef.'),
}).meta({
  'x-kubernetes-validations': [
    { rule: '!(has(self.value) && has(self.valueFrom))', message: 'spec.env[].value and spec.env[].valueFrom are mutually exclusive' },
  ],
})
export type MCPServerEnvVar = z.infer<typeof MCPServerEnvVarSchema>

/** Pod security overrides (Kinetic), applied on top of the fixed hardening. */
export const MCPServerSecurityContextSchema = z.object({
  runAsUser: int64().min(1).max(INT32_MAX).optional()
    .describe('UID of the server process; set it for images whose user is root or not numeric (0 is refused).'),
  runAsGroup: int64().min(0).max(INT32_MAX).optional().describe('GID of the server process.'),
  fsGroup: int64().min(0).max(INT32_MAX).optional().describe('Group owning mounted volumes.'),
  addCapabilities: z.array(z.enum(MCP_CAPABILITIES)).max(MCP_CAPABILITIES.length).optional()
    .meta({ 'x-kubernetes-list-type': 'set' }).describe('Capabilities added after dropping ALL.'),
})
export type MCPServerSecurityContext = z.infer<typeof MCPServerSecurityContextSchema>

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
  env: z.array(MCPServerEnvVarSchema).max(MAX_ENV_VARS).optional()
    .describe('Extra environment variables for the container.'),
  resources: z.object({
    requests: z.record(z.string(), z.string()).optional(),
    limits: z.record(z.string(), z.string()).optional(),
  }).optional(),
  managed: z.boolean().default(true)
    .describe('Kinetic: false registers and discovers spec.url; no Deployment and no Service are made.'),
  url: z.string().max(2048).regex(/^https?:\/\//).optional().describe('Kinetic: endpoint of an unmanaged server.'),
  transport: z.enum(MCP_TRANSPORTS).default('http')
    .describe('Kinetic: stdio runs a server that speaks MCP on stdin/stdout, bridged to Streamable HTTP on spec.port.'),
  command: z.array(z.string()).max(64).optional().describe('Kinetic: container command.'),
  securityContext: MCPServerSecurityContextSchema.optional().describe('Kinetic: pod security overrides.'),
}).meta({
  'x-kubernetes-validations': [
    { rule: 'self.managed || has(self.url)', message: 'an unmanaged MCPServer needs spec.url', fieldPath: '.url' },
    { rule: '!self.managed || !has(self.url)', message: 'spec.url is only for unmanaged MCPServers', fieldPath: '.url' },
    { rule: "self.transport != 'stdio' || self.managed", message: 'stdio transport requires managed: true', fieldPath: '.transport' },
  ],
})
export type MCPServerSpec = z.infer<typeof MCPServerSpecSchema>

/** One tool as discovered over MCP. */
export const MCPToolSchema = z.object({
  name: z.string().max(253),
  description: z.string().max(MAX_TOOL_DESCRIPTION).optional(),
  readOnly: z.boolean().optional().describe('The server hints the tool does not modify its environment.'),
})
export type MCPTool = z.infer<typeof MCPToolSchema>

/** Observed state of an MCPServer. */
export const MCPServerStatusSchema = z.object({
  phase: z.enum(MCP_SERVER_PHASES).optional(),
  toolCount: z.number().int().optional(),
  lastDiscovery: dateTime().optional(),
  message: z.string().optional(),
  conditions: z.array(StrictConditionSchema).optional(),
  observedGeneration: int64().optional().describe('Kinetic: generation this status was computed from.'),
  url: z.string().max(2048).optional().describe('Kinetic: URL registered in the mcp-servers ConfigMap.'),
  tools: z.array(MCPToolSchema).max(MAX_STATUS_TOOLS).optional().describe('Kinetic: tools found by the last discovery.'),
  toolsTruncated: z.boolean().optional().describe('Kinetic: the server offers more tools than status keeps.'),
  discoveredTransport: z.enum(['streamable-http', 'sse']).optional()
    .describe('Kinetic: how the last successful discovery spoke to the server.'),
  discoveredFor: z.string().max(128).optional()
    .describe('Kinetic: fingerprint of the spec generation and pods the last discovery saw; a change rediscovers.'),
  failures: z.number().int().min(0).optional().describe('Kinetic: failed checks in a row (writes or discovery), for the backoff.'),
  nextCheckAt: dateTime().optional().describe('Kinetic: when the resync tick looks at this server again.'),
  rolloutStartTime: dateTime().optional()
    .describe('Kinetic: when the current generation was applied to the Deployment (DeploymentUnavailable counts from it).'),
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
