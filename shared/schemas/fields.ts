import { z } from 'zod'

/** An RFC 3339 timestamp string as Kubernetes serialises `metav1.Time` (format only, no pattern). */
export const dateTime = () => z.string().meta({ format: 'date-time' })

/** A 64-bit integer field as Kubernetes declares `int64`. */
export const int64 = () => z.number().int().meta({ format: 'int64' })

/** Reference to a Secret: name, optional namespace and key (unknown fields kept, as purko's CRD does). */
export const SecretKeyRefSchema = z.looseObject({
  name: z.string().describe('Name of the Secret.'),
  namespace: z.string().optional().describe('Namespace of the Secret.'),
  key: z.string().optional().describe('Key inside the Secret.'),
})
export type SecretKeyRef = z.infer<typeof SecretKeyRefSchema>

/** A key of a Secret or ConfigMap of the object's own namespace, the Kubernetes way. */
const KeySelectorSchema = z.looseObject({
  name: z.string().max(253).describe('Name of the Secret or ConfigMap (in the same namespace).'),
  key: z.string().optional().describe('The key to select.'),
  optional: z.boolean().optional().describe('Whether the Secret or ConfigMap or its key must exist.'),
})

/**
 * `{name, value}` environment variable pair, or (Kubernetes' form, kept by the CRD) a `valueFrom`
 * Secret or ConfigMap key. Declared so the admission policy can read who may name which Secret.
 */
export const EnvVarSchema = z.looseObject({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z.looseObject({
    secretKeyRef: KeySelectorSchema.optional(),
    configMapKeyRef: KeySelectorSchema.optional(),
  }).optional().describe('A value from a Secret or ConfigMap key of the namespace.'),
})
export type EnvVar = z.infer<typeof EnvVarSchema>

/** Observability block shared by Agent and Workflow specs (declared keys, unknown ones kept). */
export const ObservabilitySchema = z.looseObject({
  metrics: z.looseObject({
    enabled: z.boolean().optional(),
    port: z.number().int().optional(),
    path: z.string().optional(),
  }).optional(),
  logging: z.looseObject({
    level: z.enum(['debug', 'info', 'warn', 'error']).optional(),
    format: z.enum(['json', 'text']).optional(),
  }).optional(),
  tracing: z.looseObject({
    enabled: z.boolean().optional(),
    endpoint: z.string().optional(),
    samplingRate: z.number().min(0).max(1).optional(),
  }).optional(),
})
export type Observability = z.infer<typeof ObservabilitySchema>

/** Capabilities a workload may add: exactly what the Pod Security baseline level admits (spec §2.6). */
export const BASELINE_CAPABILITIES = [
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
] as const

/** How an MCP server speaks: Streamable HTTP, or stdin/stdout bridged to it (spec §5.9). */
export const MCP_TRANSPORT_KINDS = ['http', 'stdio'] as const
