// WorkflowRecipePolicy (purko.io/v1alpha1, cluster-scoped): spec §10.1 (spec) and
// spec §10.5 (status). The one source of crds/workflowrecipepolicies.purko.io.yaml.
// Evaluation (spec §10.2-10.4, §10.6) is shared/recipe/plan/policy.ts; the CRD checks bounds and the two
// spec §10.1 CEL rules (disjoint capability lists, ranges with min <= max).
import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { dateTime, int64 } from './fields.js'
import {
  POLICY_MODES, QUANTITY_PATTERN, RECIPE_CAPABILITIES, RECIPE_TRANSPORTS, RESOURCE_NAMES, WORKLOAD_KINDS,
} from './workflowrecipe.js'

const INT32_MAX = 2147483647
const quantity = () => z.string().min(1).max(64).regex(new RegExp(QUANTITY_PATTERN))

/** A Kubernetes LabelSelector with bounded lists (spec §10.1). */
export const LabelSelectorSchema = z.object({
  matchLabels: z.record(z.string().max(317), z.string().max(63)).optional().meta({ maxProperties: 16 }),
  matchExpressions: z.array(z.object({
    key: z.string().min(1).max(317),
    operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
    values: z.array(z.string().max(63)).max(64).optional(),
  })).max(16).optional(),
})
export type LabelSelector = z.infer<typeof LabelSelectorSchema>

/** An inclusive `{min, max}` ID range. */
export const IdRangeSchema = z.object({
  min: int64().min(0).max(INT32_MAX),
  max: int64().min(0).max(INT32_MAX),
}).meta({ 'x-kubernetes-validations': [{ rule: 'self.min <= self.max', message: 'min must not be greater than max' }] })
export type IdRange = z.infer<typeof IdRangeSchema>

const capabilities = () => z.array(z.enum(RECIPE_CAPABILITIES)).max(RECIPE_CAPABILITIES.length)
  .meta({ 'x-kubernetes-list-type': 'set' })
const resourceNames = () => z.array(z.enum(RESOURCE_NAMES)).max(RESOURCE_NAMES.length).meta({ 'x-kubernetes-list-type': 'set' })

export const WorkflowRecipePolicySpecSchema = z.object({
  description: z.string().max(1024).optional(),
  mode: z.enum(POLICY_MODES).default('Enforce')
    .describe('Enforce rejects violating generations; Audit records them; Warn records them and emits PolicyWarning.'),
  namespaceSelector: LabelSelectorSchema.optional().describe('Recipe namespaces it applies to (absent: all).'),
  recipeSelector: LabelSelectorSchema.optional().describe('Recipe labels it applies to (absent: all).'),
  requireApproval: z.boolean().default(false).describe('Matching recipes need human approval (Enforce mode only).'),
  approvalTimeoutSeconds: z.number().int().min(0).max(2592000).default(0)
    .describe('Pending approvals older than this are rejected (0: none).'),
  images: z.object({
    allowedRegistries: z.array(z.string().min(1).max(253)).max(32).optional()
      .describe('Prefixes the rendered image reference must start with, as written; end entries with /.'),
    requireDigest: z.boolean().default(false).describe('The reference must contain @sha256:<64 hex>.'),
  }).optional(),
  allowedKinds: z.array(z.enum(WORKLOAD_KINDS)).max(WORKLOAD_KINDS.length).optional().meta({ 'x-kubernetes-list-type': 'set' }),
  maxReplicas: z.number().int().min(0).max(1000).optional(),
  maxWorkloads: z.number().int().min(1).max(32).optional(),
  allowedTransports: z.array(z.enum(RECIPE_TRANSPORTS)).max(RECIPE_TRANSPORTS.length).optional()
    .meta({ 'x-kubernetes-list-type': 'set' }).describe('[] forbids MCP workloads.'),
  allowSteps: z.boolean().default(true),
  security: z.object({
    allowedCapabilities: capabilities().optional().describe('Only these may be added.'),
    forbiddenCapabilities: capabilities().optional().describe('These may not be added.'),
    allowedUserRanges: z.array(IdRangeSchema).max(16).optional().describe('Allowed runAsUser.'),
    allowedGroupRanges: z.array(IdRangeSchema).max(16).optional().describe('Allowed runAsGroup and fsGroup.'),
    requireRunAsUser: z.boolean().default(false),
    requireReadOnlyRootFilesystem: z.boolean().default(false),
  }).optional().meta({
    'x-kubernetes-validations': [{
      rule: '!has(self.allowedCapabilities) || !has(self.forbiddenCapabilities) || !self.forbiddenCapabilities.exists(c, c in self.allowedCapabilities)',
      message: 'security.allowedCapabilities and security.forbiddenCapabilities must not share a capability',
    }],
  }),
  resources: z.object({
    requireRequests: resourceNames().optional(),
    requireLimits: resourceNames().optional(),
    maxLimits: z.object({
      cpu: quantity().optional(),
      memory: quantity().optional(),
      'ephemeral-storage': quantity().optional(),
    }).optional(),
  }).optional(),
  storage: z.object({
    maxClaimSize: quantity().optional(),
    allowedStorageClasses: z.array(z.string().max(253)).max(32).optional().describe('"" stands for unset (cluster default).'),
  }).optional(),
})
export type WorkflowRecipePolicySpec = z.infer<typeof WorkflowRecipePolicySpecSchema>

export const WorkflowRecipePolicyStatusSchema = z.object({
  observedGeneration: int64().optional(),
  conditions: z.array(StrictConditionSchema).max(8).optional().describe('Ready: the policy is well formed.'),
  totalViolations: z.number().int().min(0).optional(),
  violations: z.array(z.object({
    namespace: z.string().max(63),
    recipe: z.string().max(253),
    rule: z.string().max(64),
    message: z.string().max(1024),
  })).max(20).optional(),
  lastEvaluationTime: dateTime().optional(),
})
export type WorkflowRecipePolicyStatus = z.infer<typeof WorkflowRecipePolicyStatusSchema>

export const WorkflowRecipePolicySchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('WorkflowRecipePolicy').default('WorkflowRecipePolicy'),
  metadata: ObjectMetaSchema,
  spec: WorkflowRecipePolicySpecSchema,
  status: WorkflowRecipePolicyStatusSchema.optional(),
})
export type WorkflowRecipePolicy = z.infer<typeof WorkflowRecipePolicySchema>
