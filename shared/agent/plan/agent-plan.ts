import type { V1Secret } from '@kubernetes/client-node'
import type { AgentPatch } from '../../kube/port.js'
import type { Agent, AgentStatus } from '../../schemas/agent.js'
import type { Condition } from '../../schemas/condition.js'
import { ANNOTATION_RESET_COST, FINALIZER_AGENT } from '../../schemas/labels.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import { UNCHANGED, type Transition } from '../../core/plan.js'
import { OFFLINE_PROVIDER, resolvedModelName, resolveProvider } from './provider-resolution.js'
import { setCondition } from '../../core/conditions.js'
import { planIdentity, type ExistingIdentity, type IdentityPlan } from './identity.js'
import { quotaCondition, type CheckedCondition } from './quota.js'

/** The conditions agent-changed owns: purko's five plus Kinetic's SpecValid and Warning. */
export const AGENT_CONDITIONS = ['Ready', 'CredentialsValid', 'ToolsRegistered', 'QuotaAvailable', 'ModelAvailable', 'SpecValid', 'Warning'] as const

/** Label whose value is the recall group of `spec.memory.scope: group` (purko's rule 13). */
export const LABEL_COMPONENT = 'app.kubernetes.io/component'

/** Key of the credentials Secret when `credentialsSecretRef.key` is unset (purko's). */
const DEFAULT_KEY = 'api-key'

/** Everything besides the Agent that the planner judges it by. */
export interface AgentFacts {
  identity: ExistingIdentity
  /** The Secret of `spec.model.credentialsSecretRef` in the Agent's namespace; null when absent, undefined when there is no ref. */
  credentialsSecret?: V1Secret | null
  /** Set when agent-changed may not read that Secret (the namespace has not opted in): what to do about it. */
  credentialsForbidden?: string
  /** LLMProviders of the Agent's namespace, then of the platform namespace (resolution order). */
  providers: LLMProvider[]
  /** Whether `spec.memory.providerRef` exists in the platform namespace; undefined when there is no ref. */
  memoryProviderFound?: boolean
  /** Image step Jobs run when the Agent names none (named in the Ready message). */
  executorImage: string
  /** Namespace searched for LLMProviders after the Agent's own. */
  platformNamespace: string
}

/** How writing the identity went; planned as `ok`, refined by the writer when the API refused. */
export type IdentityOutcome = { ok: true } | { ok: false; reason: 'SACreationFailed' | 'RBACFailed'; message: string }

/** What agent-changed writes for one Agent. */
export interface AgentPlan {
  identity: IdentityPlan
  /** Merge patch of annotations (consumed reset) and finalizers (purko's removed); null = none. */
  metadata: NonNullable<AgentPatch['metadata']> | null
  /** The next status (whole; the writer re-applies it to a fresher one on a lost race); null = leave it. */
  status: AgentStatus | null
  /** The total cost was reset by the annotation (the writer zeroes it on whatever it finds). */
  costReset: boolean
  transitions: Transition[]
}

/** One failed rule of purko's Agent admission webhook that the CRD's CEL cannot check (it needs a lookup or the labels). */
interface RuleFailure { reason: string; message: string; fieldPath: string }

/**
 * Pure: what agent-changed must write so the Agent's identity, conditions and phase match its
 * spec and the world (`facts`), in purko's words. Deletion only drops purko's finalizer;
 * a reconcile that finds everything in place returns UNCHANGED (lastActiveTime only moves
 * with a real change). Every check that newly fails becomes a Warning transition.
 */
export function planAgent(agent: Agent, facts: AgentFacts, now: string, outcome: IdentityOutcome = { ok: true }): AgentPlan | typeof UNCHANGED {
  const finalizers = agent.metadata.finalizers ?? []
  const dropFinalizer = finalizers.includes(FINALIZER_AGENT)
  const withoutFinalizer = dropFinalizer ? { finalizers: finalizers.filter((f) => f !== FINALIZER_AGENT) } : {}
  const emptyIdentity: IdentityPlan = { writes: [], serviceAccountName: '', problems: [] }
  const finalizerNote: Transition[] = dropFinalizer
    ? [{ kind: 'finalizer.removed', type: 'Normal', reason: 'FinalizerRemoved', message: `Removed ${FINALIZER_AGENT}: Kinetic cleans up through ownerReferences`, record: false }]
    : []

  if (agent.metadata.deletionTimestamp) {
    // The garbage collector removes the owned identity; holding the Agent back helps no one.
    if (!dropFinalizer) return UNCHANGED
    return { identity: emptyIdentity, metadata: withoutFinalizer, status: null, costReset: false, transitions: finalizerNote }
  }

  const identity = planIdentity(agent, facts.identity)
  const resetValue = agent.metadata.annotations?.[ANNOTATION_RESET_COST]
  const costReset = resetValue !== undefined
  const previous = agent.status ?? {}
  const metrics = costReset ? { ...(previous.metrics ?? {}), totalCostUSD: 0, costResetTime: now } : previous.metrics
  const judged: Agent = { ...agent, status: { ...previous, ...(metrics ? { metrics } : {}) } }

  const generation = agent.metadata.generation
  const checks = conditionsFor(judged, facts, identity, outcome)
  let conditions = previous.conditions ?? []
  for (const { fieldPath: _, ...c } of checks.conditions) {
    conditions = setCondition(conditions, { ...c, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  }
  if (!checks.conditions.some((c) => c.type === 'Warning')) conditions = conditions.filter((c) => c.type !== 'Warning')

  const ready = checks.conditions.find((c) => c.type === 'Ready')!
  const next: AgentStatus = {
    ...previous,
    phase: ready.status === 'True' ? 'Ready' : 'Error',
    message: ready.status === 'True' ? readyPhaseMessage(agent) : ready.message,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    startTime: previous.startTime ?? now,
    ...(metrics ? { metrics } : {}),
  }
  // Step Jobs wait for this name: set only once the ServiceAccount exists (or its create is about to succeed).
  if (!outcome.ok && outcome.reason === 'SACreationFailed') delete next.serviceAccountName
  else next.serviceAccountName = identity.serviceAccountName

  const statusChanged = !sameJson(withoutActivity(previous), withoutActivity(next))
  const status = statusChanged ? { ...next, lastActiveTime: now } : null
  const metadata = costReset || dropFinalizer
    ? { ...(costReset ? { annotations: { [ANNOTATION_RESET_COST]: null } } : {}), ...withoutFinalizer }
    : null
  if (!status && !metadata && identity.writes.length === 0) return UNCHANGED

  const transitions = [
    ...newlyFailed(previous.conditions ?? [], checks),
    ...(ready.status === 'True' && conditionOf(previous.conditions, 'Ready')?.status !== 'True'
      ? [{ kind: 'ready', type: 'Normal' as const, reason: 'Ready', message: readyPhaseMessage(agent), record: true }] : []),
    ...(costReset ? [{
      kind: 'cost.reset', type: 'Normal' as const, reason: 'CostReset', record: true,
      message: `Total cost reset from $${(previous.metrics?.totalCostUSD ?? 0).toFixed(2)} to $0.00 (${ANNOTATION_RESET_COST}: ${resetValue})`,
    }] : []),
    ...identity.writes.map((w): Transition => ({
      kind: 'identity.written', type: 'Normal', reason: w.op === 'create' ? 'Created' : w.op === 'replace' ? 'Updated' : 'Deleted', record: false,
      message: `${w.op === 'create' ? 'Created' : w.op === 'replace' ? 'Updated' : 'Deleted'} ${w.kind} ${w.op === 'delete' ? w.name : w.object.metadata?.name}`,
    })),
    ...finalizerNote,
  ]
  return { identity, metadata, status, costReset, transitions }
}

/** What the checks found: the conditions to set, and the individual rule failures and warnings behind SpecValid/Warning. */
interface Checks {
  conditions: CheckedCondition[]
  failures: RuleFailure[]
  warnings: string[]
}

function conditionsFor(agent: Agent, facts: AgentFacts, identity: IdentityPlan, outcome: IdentityOutcome): Checks {
  const failures = ruleFailures(agent, facts)
  const warnings = specWarnings(agent)
  const credentials = credentialsCondition(agent, facts)
  const tools = agent.spec.tools?.length ?? 0
  const conditions: Checks['conditions'] = [
    readyCondition(agent, facts, identity, outcome, failures),
    credentials,
    { type: 'ToolsRegistered', status: 'True', reason: 'ToolsConfigured', message: `${tools} tools configured` },
    quotaCondition(agent),
    modelCondition(agent, facts),
    failures.length === 0
      ? { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'agent validation passed' }
      : { type: 'SpecValid', status: 'False', reason: failures[0]!.reason, message: failures.map((f) => f.message).join('\n'), fieldPath: failures[0]!.fieldPath },
    ...(warnings.length > 0 ? [{ type: 'Warning', status: 'True' as const, reason: 'SpecWarnings', message: warnings.join('\n'), fieldPath: 'spec.memory' }] : []),
  ]
  return { conditions, failures, warnings }
}

function readyCondition(agent: Agent, facts: AgentFacts, identity: IdentityPlan, outcome: IdentityOutcome, failures: RuleFailure[]): CheckedCondition {
  const model = agent.spec.model
  if (!model.provider || !model.name) return { type: 'Ready', status: 'False', reason: 'InvalidConfig', message: 'model.provider and model.name are required' }
  if (!outcome.ok) return { type: 'Ready', status: 'False', reason: outcome.reason, message: outcome.message }
  if (identity.problems.length > 0) return { type: 'Ready', status: 'False', reason: 'RBACFailed', message: identity.problems.join('; ') }
  if (failures.length > 0) return { type: 'Ready', status: 'False', reason: 'ValidationFailed', message: failures[0]!.message }
  const image = agent.spec.runtime?.image || facts.executorImage
  return { type: 'Ready', status: 'True', reason: 'Initialized', message: `Agent ready: SA=${identity.serviceAccountName}, ${agent.spec.tools?.length ?? 0} tools, image=${image}` }
}

/** purko's phase message of a Ready Agent. */
function readyPhaseMessage(agent: Agent): string {
  return `Agent ${agent.metadata.name} (${agent.spec.model.provider}/${agent.spec.model.name}) ready with ${agent.spec.tools?.length ?? 0} tools`
}

function credentialsCondition(agent: Agent, facts: AgentFacts): CheckedCondition {
  const ref = agent.spec.model.credentialsSecretRef
  if (!ref?.name) return { type: 'CredentialsValid', status: 'True', reason: 'SecretFound', message: 'Credentials loaded from ' }
  if (facts.credentialsForbidden) {
    return { type: 'CredentialsValid', status: 'Unknown', reason: 'SecretNotReadable', message: facts.credentialsForbidden, fieldPath: 'spec.model.credentialsSecretRef' }
  }
  const key = ref.key || DEFAULT_KEY
  const secret = facts.credentialsSecret
  const hasKey = Boolean(secret && (secret.data?.[key] !== undefined || secret.stringData?.[key] !== undefined))
  return hasKey
    ? { type: 'CredentialsValid', status: 'True', reason: 'SecretFound', message: `Credentials loaded from ${ref.name}` }
    : { type: 'CredentialsValid', status: 'False', reason: 'SecretMissing', message: 'Required credentials not found', fieldPath: 'spec.model.credentialsSecretRef' }
}

function modelCondition(agent: Agent, facts: AgentFacts): CheckedCondition {
  const { provider: wanted, name } = agent.spec.model
  const provider = resolveProvider(agent, facts.providers)
  const namespace = agent.metadata.namespace ?? ''
  if (!provider && wanted === OFFLINE_PROVIDER) {
    return { type: 'ModelAvailable', status: 'True', reason: 'OfflineModel', message: `Model ${wanted}/${name} configured: steps run on the executor's deterministic offline model (no model API; nothing leaves the machine)` }
  }
  if (!provider) {
    return {
      type: 'ModelAvailable', status: 'False', reason: 'ProviderNotFound', fieldPath: 'spec.model.provider',
      message: `No LLMProvider "${wanted}" in namespace ${namespace} or ${facts.platformNamespace}, and no default LLMProvider there: steps call provider "${wanted}" directly with the Agent's own credentials`,
    }
  }
  if (provider.metadata.name === wanted) return { type: 'ModelAvailable', status: 'True', reason: 'Configured', message: `Model ${wanted}/${name} configured` }
  return {
    type: 'ModelAvailable', status: 'True', reason: 'DefaultProvider',
    message: `Model ${provider.metadata.name}/${resolvedModelName(agent, provider)} configured: no LLMProvider "${wanted}", default LLMProvider ${provider.metadata.namespace}/${provider.metadata.name} used`,
  }
}

/** purko's webhook rules 6 (AG-003), 13 and 16, in its order, with its messages. */
function ruleFailures(agent: Agent, facts: AgentFacts): RuleFailure[] {
  const out: RuleFailure[] = []
  const namespace = agent.metadata.namespace ?? ''
  const secretName = agent.spec.model.credentialsSecretRef?.name
  if (secretName && facts.credentialsSecret === null) {
    out.push({ reason: 'SecretNotFound', fieldPath: 'spec.model.credentialsSecretRef', message: `AG-003: referenced Secret "${secretName}" not found in namespace "${namespace}"` })
  }
  const memory = agent.spec.memory
  if (memory) {
    if (memory.scope === 'group' && !agent.metadata.labels?.[LABEL_COMPONENT]) {
      out.push({ reason: 'GroupLabelMissing', fieldPath: 'spec.memory.scope', message: 'spec.memory.scope=group requires the app.kubernetes.io/component label (the group key)' })
    }
    if (memory.providerRef && facts.memoryProviderFound === false) {
      out.push({ reason: 'MemoryProviderNotFound', fieldPath: 'spec.memory.providerRef', message: `spec.memory.providerRef "${memory.providerRef}" not found (MemoryProviders live in purko-system)` })
    }
  }
  return out
}

/** purko's webhook warnings W1, W2, W3, in its order. */
export function specWarnings(agent: Pick<Agent, 'spec'>): string[] {
  const memory = agent.spec.memory
  if (!memory) return []
  const out: string[] = []
  if (memory.type && memory.behavior) {
    out.push('spec.memory: both type and behavior set — behavior wins; type is ignored at runtime')
    if (memory.type === 'vector') out.push('spec.memory: behavior overrides the vector PVC path — the persistent-storage mount will not be used')
  }
  if (memory.scope === 'namespace' && agent.spec.autonomyLevel === 'full') {
    out.push("spec.memory.scope=namespace with autonomyLevel=full: a low-trust agent's memories may be recalled and acted on by this high-autonomy agent")
  }
  return out
}

/**
 * A Warning per check that fails now and did not fail the same way before (by status and
 * reason, so a growing cost does not repeat it); one per rule failure and per warning that is new.
 */
function newlyFailed(previous: readonly Condition[], checks: Checks): Transition[] {
  const out: Transition[] = []
  for (const c of checks.conditions) {
    if (c.type === 'SpecValid' || c.type === 'Warning' || c.status === 'True') continue
    if (c.type === 'Ready' && c.reason === 'ValidationFailed') continue // each rule failure has its own
    const before = conditionOf(previous, c.type)
    if (before?.status === c.status && before.reason === c.reason) continue
    out.push({ kind: 'check.failed', type: 'Warning', reason: c.reason, message: c.message, record: true, ...(c.fieldPath ? { fieldPath: c.fieldPath } : {}), data: { condition: c.type } })
  }
  const seen = (type: string) => new Set((conditionOf(previous, type)?.message ?? '').split('\n'))
  const failedBefore = conditionOf(previous, 'SpecValid')?.status === 'False' ? seen('SpecValid') : new Set<string>()
  for (const f of checks.failures) {
    if (!failedBefore.has(f.message)) out.push({ kind: 'check.failed', type: 'Warning', reason: f.reason, message: f.message, record: true, fieldPath: f.fieldPath, data: { condition: 'SpecValid' } })
  }
  const warnedBefore = seen('Warning')
  for (const w of checks.warnings) {
    if (!warnedBefore.has(w)) out.push({ kind: 'spec.warning', type: 'Warning', reason: 'SpecWarning', message: w, record: true, fieldPath: 'spec.memory', data: { condition: 'Warning' } })
  }
  return out
}

function conditionOf(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type)
}

function withoutActivity(status: AgentStatus): AgentStatus {
  const { lastActiveTime: _, ...rest } = status
  return rest
}

/** Deep equality of JSON values, independent of key order. */
function sameJson(a: unknown, b: unknown): boolean {
  return stable(a) === stable(b)
}

function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}
