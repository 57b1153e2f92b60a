// Why this file stays long: it is one declarative schema, the WorkflowRecipe CRD, read top to
// bottom next to spec §2 and §9 like every other file in shared/schemas/ (one file per kind).
// Nearly every line is a field with its bound, default and description; the CRD generator and
// the code that reads recipes see the kind as one module, and its sections (inputs, workloads,
// tests, steps, status) share the bounded building blocks below.
//
// WorkflowRecipe (purko.io/v1alpha1): spec §2 (fields, defaults, bounds), §8.1 (the
// CEL rules of the CRD with their exact messages) and spec §9 (status). The one source of
// crds/workflowrecipes.purko.io.yaml (`npm run generate:crds`).
//
// Checks the CRD cannot express (whole-graph, cross-list or CEL-evaluating ones) are spec §8.2
// `SpecValid` checks in shared/recipe/plan/: InputMissing, UnknownInput, InputTypeMismatch,
// InputOutOfRange, ComputedValueError, IncludeWhenError, UnknownDependency, DependencyCycle,
// DuplicateEnvName, VolumeMountConflict, the template errors of spec §4.4 (replicas, image, schedule
// and quantities after rendering), ImmutableFieldChanged and RevisionTooLarge.
//
// Every string and list a rule reads is bounded (maxLength / maxItems) so each rule's cost stays
// linear in one object and within the API server's budget (shared/crd/cel-cost.ts). No rule sits
// on the int-or-string `replicas` node: its string form is costed at the maximum request size.
import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { BASELINE_CAPABILITIES, dateTime, int64, MCP_TRANSPORT_KINDS } from './fields.js'

// ---------------------------------------------------------------------------------------------
// Enums and patterns

export const WORKLOAD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'] as const
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number]

export const INPUT_TYPES = ['string', 'integer', 'number', 'boolean'] as const
export type InputType = (typeof INPUT_TYPES)[number]

export const RECIPE_TRANSPORTS = MCP_TRANSPORT_KINDS
export type RecipeTransport = (typeof RECIPE_TRANSPORTS)[number]

/** Capabilities a recipe may add: exactly what the Pod Security baseline level admits (spec §2.6). */
export const RECIPE_CAPABILITIES = BASELINE_CAPABILITIES
export type RecipeCapability = (typeof RECIPE_CAPABILITIES)[number]

export const RESOURCE_NAMES = ['cpu', 'memory', 'ephemeral-storage'] as const
export type ResourceName = (typeof RESOURCE_NAMES)[number]

export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const

/** The 13 phases of spec §7.1. */
export const RECIPE_PHASES = [
  'Candidate', 'PendingApproval', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active', 'Degraded',
  'RollingBack', 'Failed', 'Rejected', 'Deprecated', 'RollbackFailed',
] as const
export type RecipePhase = (typeof RECIPE_PHASES)[number]

export const WORKLOAD_PHASES = ['Excluded', 'Waiting', 'Progressing', 'Ready', 'NotReady', 'Failed', 'Removing'] as const
export type WorkloadPhase = (typeof WORKLOAD_PHASES)[number]
export const TEST_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed'] as const
export type TestPhase = (typeof TEST_PHASES)[number]
export const APPROVAL_STATES = ['NotRequired', 'Pending', 'Approved', 'Rejected', 'Expired'] as const
export type ApprovalState = (typeof APPROVAL_STATES)[number]
export const POLICY_MODES = ['Enforce', 'Audit', 'Warn'] as const
export type PolicyMode = (typeof POLICY_MODES)[number]

/** Recipe names (spec §2): 1-40 characters. */
export const RECIPE_NAME_MAX = 40
export const RECIPE_NAME_PATTERN = '^[a-z]([-a-z0-9]*[a-z0-9])?$'
export const IDENT_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$'
export const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
export const DNS1035_LABEL = '^[a-z]([-a-z0-9]*[a-z0-9])?$'
export const DNS1123_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
export const IANA_SERVICE_NAME = '^[a-z]([-a-z0-9]*[a-z0-9])?$'
export const SECRET_KEY_PATTERN = '^[-._a-zA-Z0-9]+$'
/** Exactly one `{{...}}` placeholder (spec §2.4 replicas, §8.1 quantities). */
export const SINGLE_PLACEHOLDER = '^[{][{][ \\t]*[A-Za-z][A-Za-z0-9_.-]*[ \\t]*[}][}]$'
/** A Kubernetes quantity (resource.Quantity's grammar). */
export const QUANTITY_PATTERN = '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$'
export const ABSOLUTE_PATH = '^/'

/** Most characters of one rendered templatable string (spec §4.4). */
export const MAX_TEMPLATED = 16384
const INT32_MAX = 2147483647

// Bounded building blocks ---------------------------------------------------------------------

const re = (p: string) => new RegExp(p)
const ident = () => z.string().min(1).max(63).regex(re(IDENT_PATTERN))
const dns1123 = (max = 63) => z.string().min(1).max(max).regex(re(DNS1123_LABEL))
const dns1035 = (max = 63) => z.string().min(1).max(max).regex(re(DNS1035_LABEL))
const text = (max = 1024) => z.string().max(max)
const listMap = (key = 'name') => ({ 'x-kubernetes-list-type': 'map' as const, 'x-kubernetes-list-map-keys': [key] })
const rules = (...r: { rule: string; message: string; messageExpression?: string; fieldPath?: string }[]) => ({ 'x-kubernetes-validations': r })

/**
 * A scalar value (string ≤ 4096, number or boolean). A structural schema cannot say "one of three
 * types", and the API server gives CEL no view of an untyped node, so the CRD keeps any value here
 * and the type is checked as spec §8.2 InputTypeMismatch (zod refuses other shapes).
 */
export const ScalarSchema = z.union([z.string().max(4096), z.number(), z.boolean()]).meta({
  'x-kubernetes-preserve-unknown-fields': true,
})
export type Scalar = z.infer<typeof ScalarSchema>

/** A map string → scalar of at most 64 entries. */
const scalarMap = () => z.record(z.string().max(63), ScalarSchema).meta({ maxProperties: 64 })

/** A Kubernetes quantity or exactly one placeholder, checked by CEL with the spec §8.1 message. */
const templQuantity = (field: string) => z.string().min(1).max(64).meta(rules({
  rule: `self.matches('${QUANTITY_PATTERN}') || self.matches('${SINGLE_PLACEHOLDER}')`,
  message: `${field} must be a Kubernetes quantity or a single {{...}} placeholder`,
}))
/** A plain (not templatable) quantity. */
export const quantity = () => z.string().min(1).max(64).regex(re(QUANTITY_PATTERN))

const resourceValues = (prefix: string) => z.object({
  cpu: templQuantity(`${prefix}.cpu`).optional(),
  memory: templQuantity(`${prefix}.memory`).optional(),
  'ephemeral-storage': templQuantity(`${prefix}.ephemeral-storage`).optional(),
})

/** Container resources (templatable quantities). */
export const ResourcesSchema = z.object({
  requests: resourceValues('resources.requests').optional(),
  limits: resourceValues('resources.limits').optional(),
})
export type Resources = z.infer<typeof ResourcesSchema>

// ---------------------------------------------------------------------------------------------
// spec §2.2 inputs, profiles

export const InputSchema = z.object({
  name: ident().describe('Referenced as inputs.<name>.'),
  type: z.enum(INPUT_TYPES).default('string').describe('Declared type.'),
  default: ScalarSchema.optional().describe('Value when neither spec.values nor the profile sets one; without it the input is required.'),
  description: text().optional(),
  enum: z.array(z.string().max(4096)).max(32).optional().describe('Allowed values (type string only).'),
  pattern: z.string().max(256).optional().describe('ECMAScript regular expression the whole value must match (type string only).'),
  minimum: z.number().optional().describe('Inclusive lower bound (integer and number only).'),
  maximum: z.number().optional().describe('Inclusive upper bound (integer and number only).'),
}).meta(rules(
  { rule: "!(has(self.enum) || has(self.pattern)) || !has(self.type) || self.type == 'string'", message: 'enum and pattern are only allowed for type string' },
  { rule: "!(has(self.minimum) || has(self.maximum)) || (has(self.type) && (self.type == 'integer' || self.type == 'number'))", message: 'minimum and maximum are only allowed for type integer and number' },
))
export type Input = z.infer<typeof InputSchema>

export const ProfileSchema = z.object({
  name: dns1123().describe('Profile name (DNS-1123 label).'),
  description: text().optional(),
  values: scalarMap().optional().describe('Input values of this profile.'),
})
export type Profile = z.infer<typeof ProfileSchema>

// spec §2.3
export const ComputedSchema = z.object({
  name: ident().describe('Referenced as computed.<name>.'),
  expression: z.string().min(1).max(1024).describe('CEL over inputs, earlier computed values and recipe.'),
  description: text().optional(),
})
export type Computed = z.infer<typeof ComputedSchema>

// ---------------------------------------------------------------------------------------------
// spec §2.4-2.8 workloads

export const EnvSchema = z.object({
  name: z.string().min(1).max(128).regex(re(IDENT_PATTERN)),
  value: z.string().max(MAX_TEMPLATED).default('').describe('Templatable.'),
})
export type Env = z.infer<typeof EnvSchema>

export const EnvSecretSchema = z.object({
  name: z.string().min(1).max(128).regex(re(IDENT_PATTERN)).describe('Environment variable name.'),
  secretName: z.string().min(1).max(253).regex(re(DNS1123_SUBDOMAIN)).describe("Secret in the recipe's namespace."),
  key: z.string().min(1).max(253).regex(re(SECRET_KEY_PATTERN)).describe('Key inside that Secret.'),
  optional: z.boolean().default(false).describe('A missing key leaves the variable unset.'),
})
export type EnvSecret = z.infer<typeof EnvSecretSchema>

export const SecuritySchema = z.object({
  runAsUser: int64().min(1).max(INT32_MAX).optional().describe('Pod runAsUser (0 is refused).'),
  runAsGroup: int64().min(0).max(INT32_MAX).optional(),
  fsGroup: int64().min(0).max(INT32_MAX).optional().describe('Pod fsGroup (fsGroupChangePolicy OnRootMismatch).'),
  addCapabilities: z.array(z.enum(RECIPE_CAPABILITIES)).max(RECIPE_CAPABILITIES.length).optional()
    .meta({ 'x-kubernetes-list-type': 'set' }).describe('Capabilities added after dropping ALL.'),
  readOnlyRootFilesystem: z.boolean().default(false),
})
export type Security = z.infer<typeof SecuritySchema>

export const PortSchema = z.object({
  name: z.string().min(1).max(15).regex(re(IANA_SERVICE_NAME)).describe('IANA service name.'),
  port: z.number().int().min(1).max(65535).describe('Service port.'),
  targetPort: z.number().int().min(1).max(65535).optional().describe('Container port (default: port).'),
  protocol: z.enum(['TCP', 'UDP']).default('TCP'),
})
export type Port = z.infer<typeof PortSchema>

export const ServiceSettingsSchema = z.object({
  internalTrafficPolicy: z.enum(['Cluster', 'Local']).default('Cluster'),
  sessionAffinity: z.enum(['None', 'ClientIP']).optional().describe('Default None, except MCP http workloads (docs/recipes/lifecycle-spec.md §2.11).'),
})
export type ServiceSettings = z.infer<typeof ServiceSettingsSchema>

export const VolumeSchema = z.object({
  name: dns1123().describe('Volume name (DNS-1123 label).'),
  mountPath: z.string().min(1).max(4096).regex(re(ABSOLUTE_PATH)).describe('Absolute mount path.'),
  readOnly: z.boolean().default(false),
  emptyDir: z.object({
    medium: z.enum(['', 'Memory']).optional(),
    sizeLimit: quantity().optional(),
  }).optional().describe('emptyDir settings (default {}); emptyDir is the only volume source.'),
})
export type Volume = z.infer<typeof VolumeSchema>

export const VolumeClaimTemplateSchema = z.object({
  name: dns1123().describe('Claim name (DNS-1123 label).'),
  storage: z.string().min(1).max(64).describe('Requested size: a quantity, or one placeholder.'),
  accessModes: z.array(z.enum(ACCESS_MODES)).max(4).default(['ReadWriteOnce']).meta({ 'x-kubernetes-list-type': 'set' }),
  storageClassName: z.string().max(253).optional().describe('Unset = cluster default.'),
  mountPath: z.string().min(1).max(4096).regex(re(ABSOLUTE_PATH)).optional()
    .describe('Required unless a volume of the same name exists.'),
}).meta(rules({
  rule: `self.storage.matches('${QUANTITY_PATTERN}') || self.storage.matches('${SINGLE_PLACEHOLDER}')`,
  message: 'volumeClaimTemplates[].storage must be a Kubernetes quantity or a single {{...}} placeholder',
  messageExpression: `'volumeClaimTemplates[' + self.name + '].storage must be a Kubernetes quantity or a single {{...}} placeholder'`,
  fieldPath: '.storage',
}))
export type VolumeClaimTemplate = z.infer<typeof VolumeClaimTemplateSchema>

const probePort = () => z.union([z.number().int().min(1).max(65535), z.string().min(1).max(15)])
  .describe('Port number or port name.')

export const ProbeSchema = z.object({
  httpGet: z.object({ path: z.string().max(2048).default('/'), port: probePort() }).optional(),
  tcpSocket: z.object({ port: probePort() }).optional(),
  exec: z.object({ command: z.array(z.string().max(4096)).min(1).max(64) }).optional(),
  initialDelaySeconds: z.number().int().min(0).max(3600).optional(),
  periodSeconds: z.number().int().min(1).max(3600).optional(),
  timeoutSeconds: z.number().int().min(1).max(3600).optional(),
  failureThreshold: z.number().int().min(1).max(100).optional(),
}).meta(rules({
  rule: '(has(self.httpGet) ? 1 : 0) + (has(self.tcpSocket) ? 1 : 0) + (has(self.exec) ? 1 : 0) == 1',
  message: 'a probe needs exactly one of httpGet, tcpSocket, exec',
}))
export type Probe = z.infer<typeof ProbeSchema>

export const TolerationSchema = z.object({
  key: z.string().max(317).optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().max(63).optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: int64().optional(),
})
export type Toleration = z.infer<typeof TolerationSchema>

export const McpSettingsSchema = z.object({
  port: z.number().int().min(1).max(65535).optional()
    .describe("http: one of ports[].port (default the first); stdio: the bridge's port (default 8000)."),
  path: z.string().min(1).max(253).optional().describe('http only; default /mcp.'),
  stateless: z.boolean().default(false).describe('http: Service sessionAffinity None when true, ClientIP when false.'),
  category: z.string().max(63).default('recipe').describe('MCPServer category.'),
  icon: z.string().max(16).optional().describe('MCPServer icon.'),
  auth: z.enum(['none', 'bearer']).default('none').describe('MCPServer auth.'),
  tokenSecret: z.object({
    secretName: z.string().min(1).max(253).regex(re(DNS1123_SUBDOMAIN)),
    key: z.string().min(1).max(253).regex(re(SECRET_KEY_PATTERN)),
  }).optional().describe("Secret in the recipe's namespace holding the bearer token."),
}).meta(rules(
  { rule: "!has(self.path) || self.path.matches('^/[^?# ]*$')", message: 'mcp.path must start with / and contain no ?, # or spaces', fieldPath: '.path' },
  { rule: "!has(self.auth) || self.auth != 'bearer' || has(self.tokenSecret)", message: 'mcp.auth bearer requires mcp.tokenSecret' },
))
export type McpSettings = z.infer<typeof McpSettingsSchema>

/** `replicas`: an integer 0..1000 or exactly one placeholder; schema keywords only (no CEL, spec §8.1). */
export const ReplicasSchema = z.union([z.number().int(), z.string()]).meta({
  minimum: 0, maximum: 1000, maxLength: 64, pattern: SINGLE_PLACEHOLDER,
  description: 'Desired replicas: an integer 0..1000 or one {{...}} placeholder; 1 when absent at creation, never enforced afterwards.',
})

const onlyFor = (field: string, kinds: readonly WorkloadKind[]) => ({
  rule: `!has(self.${field}) || ${kinds.map((k) => `self.kind == '${k}'`).join(' || ')}`,
  message: `${field} is only allowed for kind ${kinds.join(' and ')}`,
})
const none = (field: string) => `(!has(self.${field}) || size(self.${field}) == 0)`

export const WorkloadSchema = z.object({
  name: dns1035(32).describe('Identity inside the recipe (DNS-1035 label); part of child names.'),
  kind: z.enum(WORKLOAD_KINDS).describe('Kubernetes kind to create.'),
  description: text().optional(),
  image: z.string().min(1).max(512).describe('Container image (templatable).'),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  command: z.array(z.string().max(4096)).max(64).optional().describe('Templatable.'),
  args: z.array(z.string().max(4096)).max(64).optional().describe('Templatable.'),
  env: z.array(EnvSchema).max(64).optional().meta(listMap()).describe('Plain environment variables (templatable values).'),
  envSecret: z.array(EnvSecretSchema).max(64).optional().meta(listMap()).describe('Individual Secret keys as environment variables.'),
  ports: z.array(PortSchema).max(16).optional().meta(listMap()).describe('Container ports; they create a Service.'),
  service: ServiceSettingsSchema.optional(),
  replicas: ReplicasSchema.optional(),
  strategy: z.enum(['RollingUpdate', 'Recreate']).optional().describe('Deployment only; default RollingUpdate.'),
  podManagementPolicy: z.enum(['OrderedReady', 'Parallel']).optional().describe('StatefulSet only; default OrderedReady.'),
  persistentVolumeClaimRetention: z.enum(['Retain', 'Delete']).optional().describe('StatefulSet only; whenDeleted (default Retain).'),
  schedule: z.string().min(1).max(128).optional().describe('CronJob only: five-field cron expression (templatable).'),
  cronJob: z.object({
    timeZone: z.string().max(64).optional(),
    concurrencyPolicy: z.enum(['Allow', 'Forbid', 'Replace']).default('Forbid'),
    startingDeadlineSeconds: int64().min(0).optional(),
    successfulJobsHistoryLimit: z.number().int().min(0).max(100).default(3),
    failedJobsHistoryLimit: z.number().int().min(0).max(100).default(1),
    suspend: z.boolean().default(false),
  }).optional().describe('CronJob settings.'),
  job: z.object({
    backoffLimit: z.number().int().min(0).max(10).default(0),
    activeDeadlineSeconds: int64().min(1).optional(),
    ttlSecondsAfterFinished: z.number().int().min(0).optional(),
  }).optional().describe('Job settings (also the CronJob job template).'),
  resources: ResourcesSchema.optional(),
  security: SecuritySchema.optional(),
  volumes: z.array(VolumeSchema).max(16).optional().meta(listMap()).describe('emptyDir volumes and mount points.'),
  volumeClaimTemplates: z.array(VolumeClaimTemplateSchema).max(8).optional().meta(listMap())
    .describe('Persistent volume claims per replica (StatefulSet only).'),
  readinessProbe: ProbeSchema.optional(),
  livenessProbe: ProbeSchema.optional(),
  nodeSelector: z.record(z.string().max(317), z.string().max(63)).optional().meta({ maxProperties: 16 }),
  tolerations: z.array(TolerationSchema).max(16).optional(),
  dependsOn: z.array(z.string().max(32)).max(31).optional().describe('Workloads that must be Ready first.'),
  includeWhen: z.string().max(1024).optional().describe('CEL; the workload exists only when it is true.'),
  readinessTimeoutSeconds: z.number().int().min(10).max(86400).optional(),
  transport: z.enum(RECIPE_TRANSPORTS).optional().describe('Marks an MCP workload (docs/recipes/lifecycle-spec.md §5.9).'),
  mcp: McpSettingsSchema.optional(),
}).meta(rules(
  onlyFor('replicas', ['Deployment', 'StatefulSet']),
  { rule: "has(self.schedule) == (self.kind == 'CronJob')", message: 'schedule is required for kind CronJob and not allowed for other kinds' },
  { rule: `${none('volumeClaimTemplates')} || self.kind == 'StatefulSet'`, message: 'volumeClaimTemplates is only allowed for kind StatefulSet' },
  {
    rule: '!has(self.volumeClaimTemplates) || self.volumeClaimTemplates.all(v, has(v.mountPath) || (has(self.volumes) && self.volumes.exists(x, x.name == v.name)))',
    message: 'a volumeClaimTemplate needs a mountPath or a volume of the same name',
    messageExpression: `'volumeClaimTemplate "' + self.volumeClaimTemplates.filter(v, !has(v.mountPath) && !(has(self.volumes) && self.volumes.exists(x, x.name == v.name)))[0].name + '" needs a mountPath or a volume of the same name'`,
  },
  { rule: `${none('ports')} || !(self.kind == 'Job' || self.kind == 'CronJob')`, message: 'ports are not allowed for kind Job and CronJob' },
  onlyFor('strategy', ['Deployment']),
  onlyFor('podManagementPolicy', ['StatefulSet']),
  onlyFor('persistentVolumeClaimRetention', ['StatefulSet']),
  onlyFor('cronJob', ['CronJob']),
  onlyFor('job', ['Job', 'CronJob']),
  {
    rule: "!has(self.transport) || self.kind == 'Deployment' || (self.kind == 'StatefulSet' && self.transport == 'http')",
    message: 'transport is only allowed for kind Deployment (http or stdio) and StatefulSet (http)',
  },
  { rule: "!has(self.transport) || self.transport != 'http' || (has(self.ports) && size(self.ports) > 0)", message: 'transport http requires at least one port' },
  {
    rule: `!has(self.transport) || self.transport != 'stdio' || (${none('ports')} && ${none('volumes')} && ${none('volumeClaimTemplates')} && !has(self.readinessProbe) && !has(self.livenessProbe) && (!has(self.replicas) || (type(self.replicas) == int && self.replicas <= 10)))`,
    message: 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas',
  },
  { rule: '!has(self.mcp) || has(self.transport)', message: 'mcp settings require transport' },
  {
    rule: "!has(self.mcp) || !has(self.mcp.port) || !has(self.transport) || self.transport != 'http' || (has(self.ports) && self.ports.exists(p, p.port == self.mcp.port))",
    message: "mcp.port must be one of the workload's ports",
  },
  { rule: "!has(self.service) || (has(self.ports) && size(self.ports) > 0)", message: 'service settings require ports' },
  {
    rule: '!has(self.dependsOn) || !(self.name in self.dependsOn)',
    message: 'a workload cannot depend on itself',
    messageExpression: `'workload "' + self.name + '" cannot depend on itself'`,
  },
))
export type Workload = z.infer<typeof WorkloadSchema>

// spec §2.9 tests
export const RecipeTestSchema = z.object({
  name: dns1123(32).describe('Test name (DNS-1123 label).'),
  image: z.string().min(1).max(512).describe('Templatable.'),
  command: z.array(z.string().max(4096)).max(64).optional(),
  args: z.array(z.string().max(4096)).max(64).optional(),
  env: z.array(EnvSchema).max(64).optional().meta(listMap()),
  envSecret: z.array(EnvSecretSchema).max(64).optional().meta(listMap()),
  resources: ResourcesSchema.optional(),
  security: SecuritySchema.optional(),
  timeoutSeconds: z.number().int().min(10).max(3600).default(300).describe("The Job's activeDeadlineSeconds."),
  backoffLimit: z.number().int().min(0).max(10).default(0),
})
export type RecipeTest = z.infer<typeof RecipeTestSchema>

// spec §2.10 steps and workflow settings
export const RecipeStepSchema = z.object({
  name: dns1123().describe('Step name (DNS-1123 label).'),
  agent: z.string().min(1).max(253).describe("Agent in the recipe's namespace."),
  description: text().optional(),
  dependsOn: z.array(z.string().max(63)).max(64).optional(),
  task: z.string().max(MAX_TEMPLATED).optional().describe('Templatable; becomes input.task.'),
  input: z.looseObject({}).optional().describe('Merged into the step input (task wins); string leaves templatable.'),
  inputFrom: z.array(z.object({
    step: z.string().min(1).max(63),
    outputKey: z.string().max(253).optional(),
  })).max(64).optional(),
  condition: z.string().max(1024).optional().describe("As purko's step condition."),
  retryPolicy: z.object({
    maxRetries: z.number().int().min(0).max(100).optional(),
    backoff: z.string().max(64).optional(),
    backoffSeconds: z.number().int().min(0).max(86400).optional(),
    retryOn: z.array(z.string().max(1024)).max(32).optional(),
  }).optional(),
  timeoutSeconds: z.number().int().min(1).max(86400).optional(),
  model: z.object({
    provider: z.string().max(253).optional(),
    name: z.string().max(253).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().min(1).max(2000000).optional(),
  }).optional().describe('Per-step model override (docs/recipes/lifecycle-spec.md §5.10).'),
}).meta(rules({
  rule: '!has(self.dependsOn) || !(self.name in self.dependsOn)',
  message: 'a step cannot depend on itself',
  messageExpression: `'step "' + self.name + '" cannot depend on itself'`,
}))
export type RecipeStep = z.infer<typeof RecipeStepSchema>

export const FAILURE_STRATEGIES = ['failFast', 'continueOnError', 'stop', 'rollback'] as const
export const WorkflowSettingsSchema = z.object({
  parallelism: z.number().int().min(1).max(200).default(1),
  failureStrategy: z.enum(FAILURE_STRATEGIES).default('failFast'),
  timeout: z.string().max(32).regex(/^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$/).default('30m').describe('Duration, e.g. 30m.'),
  parameters: z.record(z.string().max(63), z.string().max(MAX_TEMPLATED)).optional().meta({ maxProperties: 64 })
    .describe('Workflow parameters (templatable values).'),
})
export type WorkflowSettings = z.infer<typeof WorkflowSettingsSchema>

// spec §2.1
export const WorkflowRecipeSpecSchema = z.object({
  description: text().optional(),
  version: z.string().max(63).optional().describe("The author's version label."),
  inputs: z.array(InputSchema).max(64).optional().meta(listMap()),
  profile: z.string().max(63).optional().describe('Selected profile (an entry of profiles).'),
  profiles: z.array(ProfileSchema).max(16).optional().meta(listMap()),
  values: scalarMap().optional().describe('Explicit input values; highest precedence.'),
  computed: z.array(ComputedSchema).max(32).optional().meta(listMap()),
  workloads: z.array(WorkloadSchema).max(32).optional().meta(listMap()),
  tests: z.array(RecipeTestSchema).max(8).optional().meta(listMap()),
  steps: z.array(RecipeStepSchema).max(50).optional().meta(listMap()),
  workflow: WorkflowSettingsSchema.optional(),
  requireApproval: z.boolean().default(false).describe('Require human approval even if no policy does.'),
  progressDeadlineSeconds: z.number().int().min(10).max(86400).default(600)
    .describe('Deadline of Pending, Deploying and RollingBack.'),
  rollback: z.object({ automatic: z.boolean().default(true) }).default({ automatic: true }),
  revisionHistoryLimit: z.number().int().min(1).max(20).default(5),
  driftPolicy: z.enum(['Correct', 'Warn']).default('Correct'),
  deletionPolicy: z.enum(['Delete', 'Orphan']).default('Delete'),
}).meta(rules(
  {
    rule: '(has(self.workloads) && size(self.workloads) > 0) || (has(self.steps) && size(self.steps) > 0)',
    message: 'a recipe needs at least one workload or one step',
  },
  {
    rule: '!has(self.profile) || (has(self.profiles) && self.profiles.exists(p, p.name == self.profile))',
    message: 'profile is not declared in spec.profiles',
    messageExpression: `'profile "' + self.profile + '" is not declared in spec.profiles'`,
    fieldPath: '.profile',
  },
  { rule: '!has(self.workflow) || (has(self.steps) && size(self.steps) > 0)', message: 'spec.workflow requires spec.steps', fieldPath: '.workflow' },
))
export type WorkflowRecipeSpec = z.infer<typeof WorkflowRecipeSpecSchema>

// ---------------------------------------------------------------------------------------------
// spec §9 status

const statusText = (max: number) => z.string().max(max)
/** `status.revisions[].state` (spec §7.9). */
export const REVISION_STATES = ['InProgress', 'Active', 'Superseded', 'Failed', 'Abandoned'] as const

export const WorkflowRecipeStatusSchema = z.object({
  phase: z.enum(RECIPE_PHASES).optional(),
  reason: statusText(128).optional(),
  message: statusText(1024).optional(),
  phaseTransitionTime: dateTime().optional(),
  observedGeneration: int64().optional(),
  revision: z.number().int().min(0).optional(),
  currentRevision: z.number().int().min(0).optional(),
  lastGoodRevision: z.number().int().min(0).optional(),
  readyWorkloads: statusText(16).optional().describe('<ready>/<included>, e.g. 3/3.'),
  nextCheckAt: dateTime().optional(),
  resolved: z.object({
    profile: statusText(63).optional(),
    inputs: z.record(z.string(), ScalarSchema).optional(),
    computed: z.record(z.string(), ScalarSchema).optional(),
    included: z.array(z.string().max(32)).max(32).optional(),
    excluded: z.array(z.string().max(32)).max(32).optional(),
    order: z.array(z.string().max(32)).max(32).optional(),
  }).optional(),
  approval: z.object({
    required: z.boolean().optional(),
    state: z.enum(APPROVAL_STATES).optional(),
    generation: int64().optional(),
    requiredBy: z.array(z.string().max(253)).max(32).optional(),
    requestedAt: dateTime().optional(),
    decidedAt: dateTime().optional(),
    approvedBy: statusText(253).optional(),
  }).optional(),
  policy: z.object({
    compliant: z.boolean().optional(),
    evaluated: z.array(z.string().max(253)).max(64).optional(),
    violations: z.array(z.object({
      policy: statusText(253),
      mode: z.enum(POLICY_MODES),
      rule: statusText(64),
      workload: statusText(32).optional(),
      test: statusText(32).optional(),
      message: statusText(1024),
    })).max(20).optional(),
    totalViolations: z.number().int().min(0).optional(),
  }).optional(),
  workloads: z.array(z.object({
    name: statusText(32),
    kind: z.enum(WORKLOAD_KINDS).optional(),
    included: z.boolean().optional(),
    namespace: statusText(63).optional(),
    objectName: statusText(253).optional(),
    phase: z.enum(WORKLOAD_PHASES).optional(),
    ready: z.boolean().optional(),
    replicas: z.number().int().min(0).optional(),
    readyReplicas: z.number().int().min(0).optional(),
    serviceName: statusText(63).optional(),
    url: statusText(512).optional(),
    jobName: statusText(63).optional(),
    lastScheduleTime: dateTime().optional(),
    lastSuccessfulTime: dateTime().optional(),
    mcpServer: z.object({
      name: statusText(253).optional(),
      managed: z.boolean().optional(),
      transport: z.enum(RECIPE_TRANSPORTS).optional(),
      url: statusText(512).optional(),
      phase: statusText(32).optional(),
    }).optional(),
    since: dateTime().optional(),
    message: statusText(512).optional(),
  })).max(32).optional(),
  tests: z.array(z.object({
    name: statusText(32),
    jobName: statusText(63).optional(),
    phase: z.enum(TEST_PHASES).optional(),
    startTime: dateTime().optional(),
    completionTime: dateTime().optional(),
    message: statusText(2048).optional(),
  })).max(8).optional(),
  workflow: z.object({
    name: statusText(253).optional(),
    phase: statusText(32).optional(),
    message: statusText(1024).optional(),
    totalSteps: z.number().int().min(0).optional(),
    completedSteps: z.number().int().min(0).optional(),
    failedSteps: z.number().int().min(0).optional(),
    steps: z.array(z.object({ name: statusText(63), phase: statusText(32).optional() })).max(50).optional(),
  }).optional(),
  mcpServers: z.array(z.object({
    workload: statusText(32),
    name: statusText(253).optional(),
    namespace: statusText(63).optional(),
    url: statusText(512).optional(),
    managed: z.boolean().optional(),
    transport: z.enum(RECIPE_TRANSPORTS).optional(),
    phase: statusText(32).optional(),
  })).max(32).optional(),
  revisions: z.array(z.object({
    revision: z.number().int().min(1),
    generation: int64().optional(),
    state: z.enum(REVISION_STATES).optional(),
    digest: z.string().regex(/^[0-9a-f]{16}$/).optional(),
    configMap: statusText(253).optional(),
    createdAt: dateTime().optional(),
    finishedAt: dateTime().optional(),
    reason: statusText(128).optional(),
  })).max(20).optional(),
  history: z.array(z.object({
    time: dateTime(),
    from: statusText(32).optional(),
    to: statusText(32),
    reason: statusText(128).optional(),
    revision: z.number().int().min(0).optional(),
    message: statusText(256).optional(),
  })).max(20).optional(),
  observedRetry: statusText(253).optional(),
  observedRollback: statusText(253).optional(),
  deletion: z.object({
    remaining: z.array(z.string().max(512)).max(32).optional(),
    blockedBy: statusText(512).optional(),
  }).optional(),
  conditions: z.array(StrictConditionSchema).max(16).optional(),
})
export type WorkflowRecipeStatus = z.infer<typeof WorkflowRecipeStatusSchema>

/** A WorkflowRecipe object (fully structural; the root rule checks the name, spec §2). */
export const WorkflowRecipeSchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('WorkflowRecipe').default('WorkflowRecipe'),
  metadata: ObjectMetaSchema,
  spec: WorkflowRecipeSpecSchema,
  status: WorkflowRecipeStatusSchema.optional(),
}).meta(rules({
  rule: `size(self.metadata.name) <= ${RECIPE_NAME_MAX} && self.metadata.name.matches('${RECIPE_NAME_PATTERN}')`,
  message: "WorkflowRecipe names are 1-40 characters: lowercase letters, digits and '-', starting with a letter",
}))
export type WorkflowRecipe = z.infer<typeof WorkflowRecipeSchema>
