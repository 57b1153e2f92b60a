/**
 * WorkflowRecipePolicy evaluation (spec §10): matching by namespaceSelector and
 * recipeSelector (full LabelSelector semantics), every rule of spec §10.1 against the rendered
 * revision (included workloads, tests, stdio MCP workloads) in the order of spec §10.2, the exact
 * messages of spec §10.3, the combination (Enforce rejects, Audit/Warn are findings), the approval
 * requirement of spec §7.5 as data, the built-in Pod Security check of §10.6 (pod-security.ts), the
 * recipe's `status.policy` (spec §9) and the policy's own status (§10.5).
 *
 * Pure: no I/O, no clock (`now` comes in), no environment. Every rule reads the rendered revision
 * (the values the manifests are built from), so `objects` is not needed by any rule today.
 */
import type { WorkflowRecipePolicyStatus } from '../../schemas/workflowrecipepolicy.js'
import { setCondition } from '../../core/conditions.js'
import { compareQuantities, isQuantity } from '../../quantity.js'
import { podSecurityViolations, POD_SECURITY_POLICY } from './pod-security.js'
import {
  inSpecOrder, type IdRange, type LabelSelector, type NamespaceLabels, type PolicyApproval, type PolicyInput, type PolicyOutcome,
  type PolicySpecInput, type PolicyViolation, type RecipeInput, type RenderedInput, type RenderedTestInput, type RenderedWorkloadInput,
  type ResourceMap, type ResourceName,
} from './policy-inputs.js'

// The inputs and outputs live in policy-inputs.ts (pod-security.ts reads them too); callers take them from here.
export type {
  InputsFit, LabelSelector, LabelSelectorRequirement, NamespaceLabels, PolicyApproval, PolicyInput, PolicyMode, PolicyOutcome,
  PolicySpecInput, PolicyViolation, RecipeInput, RenderedInput, RenderedTestInput, RenderedWorkloadInput, ResourcesInput, SecurityInput,
} from './policy-inputs.js'
export { inSpecOrder } from './policy-inputs.js'

// ---------------------------------------------------------------------------------------------
// Matching

/** Pure: Kubernetes LabelSelector semantics; an absent selector (or `{}`) matches everything. */
export function selectorMatches(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>> | undefined): boolean {
  if (!selector) return true
  const have = labels ?? {}
  const has = (key: string): boolean => Object.prototype.hasOwnProperty.call(have, key)
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || have[key] !== value) return false
  }
  for (const req of selector.matchExpressions ?? []) {
    const values = req.values ?? []
    switch (req.operator) {
      case 'In':
        if (!has(req.key) || !values.includes(have[req.key]!)) return false
        break
      case 'NotIn':
        if (has(req.key) && values.includes(have[req.key]!)) return false
        break
      case 'Exists':
        if (!has(req.key)) return false
        break
      case 'DoesNotExist':
        if (has(req.key)) return false
        break
      default:
        return false // an unknown operator selects nothing, as labels.Parse refuses it
    }
  }
  return true
}

/**
 * Pure: the labels of a namespace, with `kubernetes.io/metadata.name` that the API server always
 * sets (so a selector by namespace name works even when the caller passed only some labels).
 */
export function labelsOfNamespace(namespaceLabels: NamespaceLabels, namespace: string): Record<string, string> {
  return { ...(namespaceLabels[namespace] ?? {}), 'kubernetes.io/metadata.name': namespace }
}

/** Pure: whether `policy` applies to `recipe` (spec §10.2: both selectors match). */
export function policyMatches(policy: PolicyInput, recipe: RecipeInput, namespaceLabels: NamespaceLabels): boolean {
  const namespace = recipe.metadata.namespace ?? ''
  return selectorMatches(policy.spec?.namespaceSelector, labelsOfNamespace(namespaceLabels, namespace))
    && selectorMatches(policy.spec?.recipeSelector, recipe.metadata.labels)
}

/** Pure: the policies that apply to `recipe`, in name order (ties keep their input order). */
export function matchingPolicies<P extends PolicyInput>(policies: readonly P[], recipe: RecipeInput, namespaceLabels: NamespaceLabels): P[] {
  return sortByName(policies.filter((p) => policyMatches(p, recipe, namespaceLabels)))
}

// ---------------------------------------------------------------------------------------------
// Rules

const DIGEST = /@sha256:[0-9a-f]{64}$/
const RESOURCE_NAMES: readonly ResourceName[] = ['cpu', 'memory', 'ephemeral-storage']

function list(items: readonly string[]): string {
  return items.length === 0 ? 'none' : items.join(', ')
}

function ranges(rs: readonly IdRange[]): string {
  return rs.map((r) => `${r.min}-${r.max}`).join(', ')
}

function inRanges(n: number, rs: readonly IdRange[]): boolean {
  return rs.some((r) => n >= r.min && n <= r.max)
}

function storageClassLabel(c: string): string {
  return c === '' ? '(default)' : c
}

type Emit = (rule: string, message: string) => void

/** Rules shared by workloads and tests (images, capabilities, security, resources), in spec §10.3 order, with the workload-only ones between. */
function subjectRules(spec: PolicySpecInput, subject: string, s: RenderedWorkloadInput | RenderedTestInput, workload: RenderedWorkloadInput | undefined, emit: Emit): void {
  const allowedKinds = spec.allowedKinds
  if (workload && allowedKinds && !allowedKinds.includes(workload.kind)) {
    emit('kinds.allowed', `${subject}: kind ${workload.kind} is not allowed (allowed: ${list(allowedKinds)})`)
  }
  const registries = spec.images?.allowedRegistries
  if (registries && !registries.some((prefix) => s.image.startsWith(prefix))) {
    emit('images.allowedRegistries', `${subject}: image "${s.image}" is not from an allowed registry (allowed: ${list(registries)})`)
  }
  if (spec.images?.requireDigest && !DIGEST.test(s.image)) {
    emit('images.requireDigest', `${subject}: image "${s.image}" is not pinned by digest`)
  }
  if (workload && spec.maxReplicas !== undefined) {
    const replicas = replicasOf(workload)
    if (replicas > spec.maxReplicas) emit('replicas.max', `${subject}: replicas ${replicas} exceeds the maximum ${spec.maxReplicas}`)
  }
  const transports = spec.allowedTransports
  if (workload?.transport !== undefined && transports && !transports.includes(workload.transport)) {
    emit('transports.allowed', `${subject}: transport ${workload.transport} is not allowed (allowed: ${list(transports)})`)
  }
  const security = s.security ?? {}
  const added = security.addCapabilities ?? []
  const forbidden = spec.security?.forbiddenCapabilities
  if (forbidden) {
    for (const cap of added) if (forbidden.includes(cap)) emit('capabilities.forbidden', `${subject}: capability ${cap} is forbidden`)
  }
  const allowed = spec.security?.allowedCapabilities
  if (allowed) {
    for (const cap of added) if (!allowed.includes(cap)) emit('capabilities.allowed', `${subject}: capability ${cap} is not allowed (allowed: ${list(allowed)})`)
  }
  const userRanges = spec.security?.allowedUserRanges
  if (security.runAsUser === undefined) {
    if (spec.security?.requireRunAsUser) emit('security.runAsUser', `${subject}: runAsUser must be set`)
  } else if (userRanges && !inRanges(security.runAsUser, userRanges)) {
    emit('security.runAsUser', `${subject}: runAsUser ${security.runAsUser} is outside the allowed ranges (${ranges(userRanges)})`)
  }
  const groupRanges = spec.security?.allowedGroupRanges
  if (groupRanges) {
    for (const field of ['runAsGroup', 'fsGroup'] as const) {
      const id = security[field]
      if (id !== undefined && !inRanges(id, groupRanges)) {
        emit(`security.${field}`, `${subject}: ${field} ${id} is outside the allowed ranges (${ranges(groupRanges)})`)
      }
    }
  }
  if (spec.security?.requireReadOnlyRootFilesystem && security.readOnlyRootFilesystem !== true) {
    emit('security.readOnlyRootFilesystem', `${subject}: readOnlyRootFilesystem must be true`)
  }
  const resources = s.resources ?? {}
  for (const name of spec.resources?.requireRequests ?? []) {
    if (!present(resources.requests, name)) emit('resources.requireRequests', `${subject}: missing ${name} request`)
  }
  for (const name of spec.resources?.requireLimits ?? []) {
    if (!present(resources.limits, name)) emit('resources.requireLimits', `${subject}: missing ${name} limit`)
  }
  const maxLimits = spec.resources?.maxLimits
  if (maxLimits) {
    for (const name of RESOURCE_NAMES) {
      const max = maxLimits[name]
      const limit = resources.limits?.[name]
      if (max === undefined || limit === undefined || limit === '') continue
      if (compareQuantities(limit, max) === 1) emit('resources.maxLimits', `${subject}: ${name} limit ${limit} exceeds the maximum ${max}`)
    }
  }
  if (!workload) return
  const claims = workload.volumeClaimTemplates ?? []
  const maxClaim = spec.storage?.maxClaimSize
  if (maxClaim !== undefined) {
    for (const c of claims) {
      if (compareQuantities(c.storage, maxClaim) === 1) {
        emit('storage.maxClaimSize', `${subject}: volumeClaimTemplate "${c.name}" requests ${c.storage}, more than the maximum ${maxClaim}`)
      }
    }
  }
  const classes = spec.storage?.allowedStorageClasses
  if (classes) {
    for (const c of claims) {
      const cls = c.storageClassName ?? ''
      if (!classes.includes(cls)) {
        emit('storage.allowedStorageClasses', `${subject}: volumeClaimTemplate "${c.name}" uses storage class "${storageClassLabel(cls)}" (allowed: ${list(classes.map(storageClassLabel))})`)
      }
    }
  }
}

function present(map: ResourceMap | undefined, name: string): boolean {
  const v = (map as Record<string, string | undefined> | undefined)?.[name]
  return v !== undefined && v !== ''
}

/** The rendered replica count: an integer, a string of decimal digits, or 1 when absent (spec §10.1). */
function replicasOf(w: RenderedWorkloadInput): number {
  if (typeof w.replicas === 'number') return w.replicas
  if (typeof w.replicas === 'string' && /^\d+$/.test(w.replicas)) return Number(w.replicas)
  return 1
}

/** Pure: the violations of one policy (spec §10.2 order: recipe-level rules, then workloads in spec order, then tests). */
export function policyViolations(policy: PolicyInput, recipe: RecipeInput, rendered: RenderedInput): PolicyViolation[] {
  const spec = policy.spec ?? {}
  const name = policy.metadata.name ?? ''
  const mode = spec.mode ?? 'Enforce'
  const out: PolicyViolation[] = []
  const at = (extra: { workload?: string; test?: string }): Emit => (rule, message) => { out.push({ policy: name, mode, rule, ...extra, message }) }
  const recipeLevel = at({})
  const count = rendered.workloads.length
  if (spec.maxWorkloads !== undefined && count > spec.maxWorkloads) {
    recipeLevel('workloads.max', `recipe has ${count} workloads, more than the maximum ${spec.maxWorkloads}`)
  }
  const steps = rendered.steps ?? recipe.spec.steps ?? []
  if (spec.allowSteps === false && steps.length > 0) {
    recipeLevel('steps.allowed', 'recipe has agentic steps, which this policy does not allow')
  }
  for (const w of inSpecOrder(rendered.workloads, recipe.spec.workloads)) {
    subjectRules(spec, `workload "${w.name}"`, w, w, at({ workload: w.name }))
  }
  for (const t of inSpecOrder(rendered.tests ?? [], recipe.spec.tests)) {
    subjectRules(spec, `test "${t.name}"`, t, undefined, at({ test: t.name }))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Combination

const MESSAGE_ITEMS = 5

/** Pure: `<prefix><policy>: <rule>: <message>; ...`, at most 5 entries then `; and <n> more` (spec §10.3). */
export function violationsMessage(prefix: string, violations: readonly PolicyViolation[]): string {
  const shown = violations.slice(0, MESSAGE_ITEMS).map((v) => `${v.policy}: ${v.rule}: ${v.message}`).join('; ')
  const more = violations.length > MESSAGE_ITEMS ? `; and ${violations.length - MESSAGE_ITEMS} more` : ''
  return `${prefix}${shown}${more}`
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function sortByName<P extends PolicyInput>(policies: readonly P[]): P[] {
  return policies
    .map((p, i) => ({ p, i }))
    .sort((a, b) => compareNames(a.p.metadata.name ?? '', b.p.metadata.name ?? '') || a.i - b.i)
    .map((x) => x.p)
}

/**
 * Pure: evaluate every matching policy and the built-in Pod Security check against the rendered
 * revision and combine them (spec §10.2). `objects` (the built child objects) is accepted for the
 * fixed interface; every rule reads the rendered values they are built from.
 */
export function evaluatePolicies(
  recipe: RecipeInput,
  rendered: RenderedInput,
  _objects: unknown,
  policies: readonly PolicyInput[],
  namespaceLabels: NamespaceLabels,
): PolicyOutcome {
  const matching = matchingPolicies(policies, recipe, namespaceLabels)
  const groups: { name: string; builtin: boolean; violations: PolicyViolation[] }[] = matching.map((p) => ({
    name: p.metadata.name ?? '', builtin: false, violations: policyViolations(p, recipe, rendered),
  }))
  const podSecurity = podSecurityViolations(recipe, rendered, namespaceLabels)
  // The built-in check sorts as a policy named `pod-security` (after a real policy of that name).
  const at = groups.findIndex((g) => compareNames(g.name, POD_SECURITY_POLICY) > 0)
  groups.splice(at < 0 ? groups.length : at, 0, { name: POD_SECURITY_POLICY, builtin: true, violations: podSecurity })
  const violations = groups.flatMap((g) => g.violations)
  const enforce = violations.filter((v) => v.mode === 'Enforce')
  const warnings = violations.filter((v) => v.mode === 'Warn')
  const rejected = enforce.length > 0
  const reason: PolicyOutcome['reason'] = rejected ? 'PolicyViolation'
    : warnings.length > 0 ? 'WarnViolation'
      : violations.length > 0 ? 'AuditViolation' : 'Compliant'
  const message = rejected ? violationsMessage('Rejected by policy: ', enforce)
    : violations.length > 0 ? violationsMessage('Policy findings: ', violations) : ''
  return {
    evaluated: matching.map((p) => p.metadata.name ?? ''),
    violations,
    totalViolations: violations.length,
    compliant: violations.length === 0,
    rejected,
    reason,
    message,
    warnings,
    approval: approvalOf(recipe, matching),
  }
}

/** Pure: the approval requirement of spec §7.5 (only Enforce policies can require approval). */
export function approvalOf(recipe: RecipeInput, matching: readonly PolicyInput[]): PolicyApproval {
  const requiring = sortByName(matching).filter((p) => (p.spec?.mode ?? 'Enforce') === 'Enforce' && p.spec?.requireApproval === true)
  const requiredBy = [...(recipe.spec.requireApproval ? ['recipe'] : []), ...requiring.map((p) => p.metadata.name ?? '')]
  const timeouts = requiring.map((p) => p.spec?.approvalTimeoutSeconds ?? 0).filter((t) => t > 0)
  return {
    required: requiredBy.length > 0,
    requiredBy,
    ...(timeouts.length > 0 ? { timeoutSeconds: Math.min(...timeouts) } : {}),
  }
}

// ---------------------------------------------------------------------------------------------
// Status

const STATUS_VIOLATIONS = 20

/** The recipe's `status.policy` (spec §9). */
export interface RecipePolicyStatus {
  compliant: boolean
  evaluated: string[]
  violations: PolicyViolation[]
  totalViolations: number
}

/** Pure: the recipe's `status.policy` from an outcome: at most 20 violations, the total counts all. */
export function recipePolicyStatus(outcome: PolicyOutcome): RecipePolicyStatus {
  return {
    compliant: outcome.compliant,
    evaluated: [...outcome.evaluated],
    violations: outcome.violations.slice(0, STATUS_VIOLATIONS).map((v) => ({ ...v })),
    totalViolations: outcome.totalViolations,
  }
}

/** A matching recipe's latest evaluation, as the policy function collects them. */
export interface RecipeEvaluation {
  namespace: string
  recipe: string
  violations: readonly PolicyViolation[]
}

/** Pure: what makes a policy not well formed (Ready=False); empty when it is. */
export function policyProblems(policy: PolicyInput): string[] {
  const spec = policy.spec ?? {}
  const problems: string[] = []
  for (const name of RESOURCE_NAMES) {
    const q = spec.resources?.maxLimits?.[name]
    if (q !== undefined && !isQuantity(q)) problems.push(`spec.resources.maxLimits.${name}: "${q}" is not a Kubernetes quantity`)
  }
  const claim = spec.storage?.maxClaimSize
  if (claim !== undefined && !isQuantity(claim)) problems.push(`spec.storage.maxClaimSize: "${claim}" is not a Kubernetes quantity`)
  const allowed = spec.security?.allowedCapabilities ?? []
  const both = (spec.security?.forbiddenCapabilities ?? []).filter((c) => allowed.includes(c))
  if (both.length > 0) problems.push(`spec.security: ${both.join(', ')} both allowed and forbidden`)
  for (const field of ['allowedUserRanges', 'allowedGroupRanges'] as const) {
    for (const r of spec.security?.[field] ?? []) {
      if (r.min > r.max) problems.push(`spec.security.${field}: range ${r.min}-${r.max} has min above max`)
    }
  }
  return problems
}

/**
 * Pure: the policy's next status (spec §10.5) from the latest evaluations of the recipes it matches:
 * `observedGeneration`, `Ready` (well formed: `Valid`, else `InvalidSpec` with the problems),
 * `totalViolations` (this policy's violations over all those recipes), `violations[]` (the first
 * 20, recipes by namespace then name, each in evaluation order) and `lastEvaluationTime`.
 * Null when nothing but the evaluation time would change: no write.
 */
export function policyStatus(policy: PolicyInput, evaluations: readonly RecipeEvaluation[], now: string): WorkflowRecipePolicyStatus | null {
  const name = policy.metadata.name ?? ''
  const current = policy.status ?? {}
  const generation = policy.metadata.generation
  const at = generation === undefined ? {} : { observedGeneration: generation }
  const problems = policyProblems(policy)
  const conditions = setCondition(current.conditions, problems.length === 0
    ? { type: 'Ready', status: 'True', reason: 'Valid', message: 'The policy is well formed', ...at }
    : { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: problems.join('; '), ...at }, now)
  const own = [...evaluations]
    .sort((a, b) => compareNames(a.namespace, b.namespace) || compareNames(a.recipe, b.recipe))
    .flatMap((e) => e.violations.filter((v) => v.policy === name).map((v) => ({ namespace: e.namespace, recipe: e.recipe, rule: v.rule, message: v.message })))
  const next: WorkflowRecipePolicyStatus = {
    ...at,
    conditions,
    totalViolations: own.length,
    violations: own.slice(0, STATUS_VIOLATIONS),
  }
  const { lastEvaluationTime: _ignored, ...currentRest } = current
  if (canonical(next) === canonical(currentRest)) return null
  return { ...next, lastEvaluationTime: now }
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => compareNames(a, b)))
    : v))
}
