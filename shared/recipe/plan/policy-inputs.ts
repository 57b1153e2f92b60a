/**
 * What WorkflowRecipePolicy evaluation (policy.ts) and the built-in Pod Security check
 * (pod-security.ts) read and give: the policy, recipe and rendered revision typed structurally
 * (only what the rules read), the violations and the outcome, and the spec order both report in.
 * Pure.
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy, WorkflowRecipePolicyStatus } from '../../schemas/workflowrecipepolicy.js'
import type { RenderOk } from './rendered.js'

// ---------------------------------------------------------------------------------------------
// Inputs, typed structurally: the schema's WorkflowRecipePolicy / WorkflowRecipe and R2's
// RenderedWorkload / RenderedTest are assignable to these (only what the rules read).

export type PolicyMode = 'Enforce' | 'Audit' | 'Warn'

export interface LabelSelectorRequirement {
  key: string
  operator: string
  values?: readonly string[] | undefined
}

export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>> | undefined
  matchExpressions?: readonly LabelSelectorRequirement[] | undefined
}

export interface IdRange { min: number; max: number }
export type ResourceName = 'cpu' | 'memory' | 'ephemeral-storage'
export type ResourceMap = { readonly [K in ResourceName]?: string | undefined }

export interface PolicySpecInput {
  description?: string | undefined
  mode?: PolicyMode | undefined
  namespaceSelector?: LabelSelector | undefined
  recipeSelector?: LabelSelector | undefined
  requireApproval?: boolean | undefined
  approvalTimeoutSeconds?: number | undefined
  images?: { allowedRegistries?: readonly string[] | undefined; requireDigest?: boolean | undefined } | undefined
  allowedKinds?: readonly string[] | undefined
  maxReplicas?: number | undefined
  maxWorkloads?: number | undefined
  allowedTransports?: readonly string[] | undefined
  allowSteps?: boolean | undefined
  security?: {
    allowedCapabilities?: readonly string[] | undefined
    forbiddenCapabilities?: readonly string[] | undefined
    allowedUserRanges?: readonly IdRange[] | undefined
    allowedGroupRanges?: readonly IdRange[] | undefined
    requireRunAsUser?: boolean | undefined
    requireReadOnlyRootFilesystem?: boolean | undefined
  } | undefined
  resources?: {
    requireRequests?: readonly string[] | undefined
    requireLimits?: readonly string[] | undefined
    maxLimits?: ResourceMap | undefined
  } | undefined
  storage?: { maxClaimSize?: string | undefined; allowedStorageClasses?: readonly string[] | undefined } | undefined
}

export interface PolicyInput {
  metadata: { name?: string | undefined; generation?: number | undefined }
  spec?: PolicySpecInput | undefined
  status?: WorkflowRecipePolicyStatus | undefined
}

export interface SecurityInput {
  runAsUser?: number | undefined
  runAsGroup?: number | undefined
  fsGroup?: number | undefined
  addCapabilities?: readonly string[] | undefined
  readOnlyRootFilesystem?: boolean | undefined
}

export interface ResourcesInput {
  requests?: ResourceMap | undefined
  limits?: ResourceMap | undefined
}

/** What the rules read of a rendered test. */
export interface RenderedTestInput {
  name: string
  image: string
  namespace?: string | undefined
  security?: SecurityInput | undefined
  resources?: ResourcesInput | undefined
}

/** What the rules read of a rendered (included) workload. */
export interface RenderedWorkloadInput extends RenderedTestInput {
  kind: string
  replicas?: number | string | undefined
  transport?: string | undefined
  volumeClaimTemplates?: readonly { name: string; storage: string; storageClassName?: string | undefined }[] | undefined
}

export interface RecipeInput {
  metadata: { name?: string | undefined; namespace?: string | undefined; labels?: Readonly<Record<string, string>> | undefined }
  spec: {
    workloads?: readonly { name: string }[] | undefined
    tests?: readonly { name: string }[] | undefined
    steps?: readonly unknown[] | undefined
    requireApproval?: boolean | undefined
  }
}

export interface RenderedInput {
  workloads: readonly RenderedWorkloadInput[]
  tests?: readonly RenderedTestInput[] | undefined
  steps?: readonly unknown[] | undefined
}

/** Compile-time proof that what callers hold fits the inputs: the schema's objects and renderRecipe's result. */
type Fits<T extends U, U> = T
export type InputsFit = [Fits<WorkflowRecipePolicy, PolicyInput>, Fits<WorkflowRecipe, RecipeInput>, Fits<RenderOk, RenderedInput>]

/** Labels of namespaces by name: the recipe's namespace (namespaceSelector) and the target namespaces (spec §10.6). */
export type NamespaceLabels = Readonly<Record<string, Readonly<Record<string, string>> | undefined>>

// ---------------------------------------------------------------------------------------------
// Outputs

/** One violation (spec §10.3): `{policy, mode, rule, workload | test, message}`. */
export interface PolicyViolation {
  policy: string
  mode: PolicyMode
  rule: string
  workload?: string
  test?: string
  message: string
}

export interface PolicyApproval {
  /** `spec.requireApproval` or a matching Enforce policy with `requireApproval: true`. */
  required: boolean
  /** `recipe` first when the recipe asks, then the policy names in name order (spec §7.5). */
  requiredBy: string[]
  /** Smallest non-zero `approvalTimeoutSeconds` among the policies that require approval; absent when none. */
  timeoutSeconds?: number
}

export interface PolicyOutcome {
  /** Names of the matching WorkflowRecipePolicies, in name order (the built-in check is not listed). */
  evaluated: string[]
  /** Every violation in evaluation order (spec §10.2); the built-in check sorts as a policy named `pod-security`. */
  violations: PolicyViolation[]
  totalViolations: number
  /** No violation of any mode. */
  compliant: boolean
  /** An Enforce (or Pod Security) violation: the generation is rejected (T4). */
  rejected: boolean
  /** `PolicyCompliant` reason: `Compliant`, `PolicyViolation`, `WarnViolation` (some Warn finding) or `AuditViolation`. */
  reason: 'Compliant' | 'PolicyViolation' | 'AuditViolation' | 'WarnViolation'
  /** `Rejected by policy: ...` (Enforce violations only), `Policy findings: ...` or `""` when compliant. */
  message: string
  /** Warn-mode violations: each gives a `PolicyWarning` Event on the recipe, once per revision. */
  warnings: PolicyViolation[]
  approval: PolicyApproval
}

/** Pure: the included workloads in spec order (the rendered list is topological), then those the spec does not list. */
export function inSpecOrder<T extends { name: string }>(items: readonly T[], declared: readonly { name: string }[] | undefined): T[] {
  const index = new Map((declared ?? []).map((d, i) => [d.name, i]))
  return items
    .map((item, i) => ({ item, i, at: index.get(item.name) ?? Number.MAX_SAFE_INTEGER }))
    .sort((a, b) => a.at - b.at || a.i - b.i)
    .map((x) => x.item)
}
