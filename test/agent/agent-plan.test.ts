import type { V1Secret } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { UNCHANGED } from '../../shared/core/plan.js'
import { planAgent, type AgentFacts, type AgentPlan } from '../../shared/agent/plan/agent-plan.js'
import { agentRoleBindingManifest, agentRoleManifest, agentServiceAccountManifest } from '../../shared/agent/plan/identity.js'
import { AgentSchema, type Agent } from '../../shared/schemas/agent.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'

const NOW = '2026-02-01T10:00:00.000Z'
const LATER = '2026-02-01T11:00:00.000Z'

function anAgent(spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}, status?: Agent['status']): Agent {
  return AgentSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: { name: 'a', namespace: 'ns1', uid: 'uid-a', generation: 1, resourceVersion: '5', ...metadata },
    spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude' }, ...spec },
    ...(status ? { status } : {}),
  })
}

const provider = (name: string, namespace: string, extra: Record<string, unknown> = {}): LLMProvider =>
  ({ apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name, namespace }, spec: { type: 'anthropic', model: 'claude-default', ...extra } }) as LLMProvider
const secret = (name: string, data: Record<string, string>): V1Secret => ({ metadata: { name, namespace: 'ns1' }, data })

/** Facts of a world where the Agent's identity is in place and its provider exists. */
function facts(agent: Agent, overrides: Partial<AgentFacts> = {}): AgentFacts {
  return {
    identity: {
      serviceAccount: { ...agentServiceAccountManifest(agent), metadata: { ...agentServiceAccountManifest(agent).metadata, resourceVersion: '1' } },
      defaultServiceAccount: null,
      role: agentRoleManifest(agent),
      roleBinding: agentRoleBindingManifest(agent),
    },
    providers: [provider('anthropic', 'purko-system')],
    executorImage: 'kinetic-executor:1',
    platformNamespace: 'purko-system',
    ...overrides,
  }
}

function planned(agent: Agent, f: AgentFacts = facts(agent), now = NOW): AgentPlan {
  const plan = planAgent(agent, f, now)
  if (plan === UNCHANGED) throw new Error('expected changes')
  return plan
}
const conditionOf = (plan: AgentPlan, type: string) => plan.status?.conditions?.find((c) => c.type === type)
/** The Agent as stored after the plan's status and metadata writes. */
function applied(agent: Agent, plan: AgentPlan): Agent {
  const next = structuredClone(agent)
  if (plan.status) next.status = plan.status
  const annotations = { ...(next.metadata.annotations ?? {}) }
  for (const [k, v] of Object.entries(plan.metadata?.annotations ?? {})) if (v === null) delete annotations[k]
  next.metadata.annotations = annotations
  if (plan.metadata?.finalizers) next.metadata.finalizers = plan.metadata.finalizers
  return next
}

describe('planAgent: purko\'s conditions', () => {
  it('a healthy Agent is Ready with purko\'s messages, observedGeneration, startTime and its ServiceAccount', () => {
    const agent = anAgent({ tools: [{ name: 'search', type: 'api' }, { name: 'fs', type: 'builtin' }] })
    const plan = planned(agent)
    expect(plan.status).toMatchObject({
      phase: 'Ready', message: 'Agent a (anthropic/claude) ready with 2 tools', observedGeneration: 1,
      startTime: NOW, lastActiveTime: NOW, serviceAccountName: 'agent-a-sa',
    })
    expect(plan.status?.conditions?.map(({ type, status, reason, message }) => ({ type, status, reason, message }))).toEqual([
      { type: 'Ready', status: 'True', reason: 'Initialized', message: 'Agent ready: SA=agent-a-sa, 2 tools, image=kinetic-executor:1' },
      { type: 'CredentialsValid', status: 'True', reason: 'SecretFound', message: 'Credentials loaded from ' },
      { type: 'ToolsRegistered', status: 'True', reason: 'ToolsConfigured', message: '2 tools configured' },
      { type: 'QuotaAvailable', status: 'True', reason: 'WithinLimits', message: 'Cost within guardrail limits' },
      { type: 'ModelAvailable', status: 'True', reason: 'Configured', message: 'Model anthropic/claude configured' },
      { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'agent validation passed' },
    ])
    expect(plan.status?.conditions?.every((c) => c.observedGeneration === 1 && c.lastTransitionTime === NOW)).toBe(true)
    expect(plan.transitions.filter((t) => t.record).map((t) => [t.type, t.reason])).toEqual([['Normal', 'Ready']])
  })

  it.each<[string, Agent, Partial<AgentFacts>, { type: string; status: string; reason: string; message: string }, string]>([
    ['credentials found with their key', anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'k' } } }), { credentialsSecret: secret('k', { 'api-key': 'eA==' }) },
      { type: 'CredentialsValid', status: 'True', reason: 'SecretFound', message: 'Credentials loaded from k' }, 'Ready'],
    ['credentials with another key name', anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'k', key: 'token' } } }), { credentialsSecret: secret('k', { 'api-key': 'eA==' }) },
      { type: 'CredentialsValid', status: 'False', reason: 'SecretMissing', message: 'Required credentials not found' }, 'Ready'],
    ['a credentials Secret that does not exist', anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'k' } } }), { credentialsSecret: null },
      { type: 'CredentialsValid', status: 'False', reason: 'SecretMissing', message: 'Required credentials not found' }, 'Error'],
    ['a cost over the limit', anAgent({ guardrails: { costLimitUSD: 2 } }, {}, { metrics: { totalCostUSD: 2.345 } }), {},
      { type: 'QuotaAvailable', status: 'False', reason: 'CostLimitExceeded', message: 'Total cost $2.35 exceeds limit $2.00' }, 'Ready'],
    ["purko's string budget", anAgent({ guardrails: { costLimit: '$1.50' } }, {}, { metrics: { totalCostUSD: 1.6 } }), {},
      { type: 'QuotaAvailable', status: 'False', reason: 'CostLimitExceeded', message: 'Total cost $1.60 exceeds limit $1.50' }, 'Ready'],
    ['a cost exactly at the limit', anAgent({ guardrails: { costLimitUSD: 2 } }, {}, { metrics: { totalCostUSD: 2 } }), {},
      { type: 'QuotaAvailable', status: 'True', reason: 'WithinLimits', message: 'Cost within guardrail limits' }, 'Ready'],
    ['a budget that is no amount', anAgent({ guardrails: { costLimit: 'lots' } }), {},
      { type: 'QuotaAvailable', status: 'Unknown', reason: 'InvalidCostLimit', message: 'guardrails.costLimit "lots" is not an amount like "$5.00"; no budget is enforced' }, 'Ready'],
    ['an LLMProvider of its own namespace', anAgent({ model: { provider: 'team', name: 'claude' } }), { providers: [provider('team', 'ns1')] },
      { type: 'ModelAvailable', status: 'True', reason: 'Configured', message: 'Model team/claude configured' }, 'Ready'],
    ['only a default LLMProvider', anAgent({ model: { provider: 'gone', name: 'claude' } }), { providers: [provider('fallback', 'purko-system', { default: true })] },
      { type: 'ModelAvailable', status: 'True', reason: 'DefaultProvider', message: 'Model fallback/claude-default configured: no LLMProvider "gone", default LLMProvider purko-system/fallback used' }, 'Ready'],
    ['no LLMProvider at all', anAgent({ model: { provider: 'gone', name: 'claude' } }), { providers: [] },
      { type: 'ModelAvailable', status: 'False', reason: 'ProviderNotFound', message: 'No LLMProvider "gone" in namespace ns1 or purko-system, and no default LLMProvider there: steps call provider "gone" directly with the Agent\'s own credentials' }, 'Ready'],
    ['the offline model, even beside a default LLMProvider', anAgent({ model: { provider: 'offline', name: 'demo' } }), { providers: [provider('fallback', 'purko-system', { default: true })] },
      { type: 'ModelAvailable', status: 'True', reason: 'OfflineModel', message: "Model offline/demo configured: steps run on the executor's deterministic offline model (no model API; nothing leaves the machine)" }, 'Ready'],
    ['an empty model (purko\'s step 5; the CRD normally refuses it)', anAgent({ model: { provider: '', name: 'claude' } }), {},
      { type: 'Ready', status: 'False', reason: 'InvalidConfig', message: 'model.provider and model.name are required' }, 'Error'],
  ])('%s', (_, agent, overrides, expected, phase) => {
    const plan = planned(agent, facts(agent, overrides))
    expect(conditionOf(plan, expected.type)).toMatchObject(expected)
    expect(plan.status?.phase).toBe(phase)
    if (expected.status !== 'True') {
      expect(plan.transitions).toContainEqual(expect.objectContaining({ type: 'Warning', record: true, reason: expected.reason, message: expected.message }))
    }
  })
})

describe("planAgent: purko's webhook rules the CRD cannot check", () => {
  it.each<[string, Agent, Partial<AgentFacts>, string, string]>([
    ['AG-003: the credentials Secret is missing', anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'llm', namespace: 'elsewhere' } } }), { credentialsSecret: null },
      'SecretNotFound', 'AG-003: referenced Secret "llm" not found in namespace "ns1"'],
    ['rule 13: scope=group without the component label', anAgent({ memory: { behavior: 'persistent', scope: 'group' } }), {},
      'GroupLabelMissing', 'spec.memory.scope=group requires the app.kubernetes.io/component label (the group key)'],
    ['rule 13: scope=group with an empty component label', anAgent({ memory: { behavior: 'persistent', scope: 'group' } }, { labels: { 'app.kubernetes.io/component': '' } }), {},
      'GroupLabelMissing', 'spec.memory.scope=group requires the app.kubernetes.io/component label (the group key)'],
    ['rule 16: the MemoryProvider is not in purko-system', anAgent({ memory: { behavior: 'persistent', providerRef: 'nope' } }), { memoryProviderFound: false },
      'MemoryProviderNotFound', 'spec.memory.providerRef "nope" not found (MemoryProviders live in purko-system)'],
  ])('%s: SpecValid=False and Ready=False with purko\'s message, phase Error, one Event', (_, agent, overrides, reason, message) => {
    const plan = planned(agent, facts(agent, overrides))
    expect(conditionOf(plan, 'SpecValid')).toMatchObject({ status: 'False', reason, message })
    expect(conditionOf(plan, 'Ready')).toMatchObject({ status: 'False', reason: 'ValidationFailed', message })
    expect(plan.status).toMatchObject({ phase: 'Error', message })
    expect(plan.transitions.filter((t) => t.reason === reason)).toEqual([expect.objectContaining({ type: 'Warning', record: true, message })])
  })

  it.each<[string, Agent, Partial<AgentFacts>]>([
    ['scope=group with the label', anAgent({ memory: { behavior: 'persistent', scope: 'group' } }, { labels: { 'app.kubernetes.io/component': 'triage' } }), {}],
    ['a MemoryProvider that exists', anAgent({ memory: { behavior: 'persistent', providerRef: 'custom' } }), { memoryProviderFound: true }],
  ])('passes %s', (_, agent, overrides) => {
    expect(conditionOf(planned(agent, facts(agent, overrides)), 'SpecValid')).toMatchObject({ status: 'True', reason: 'Valid' })
  })

  it('reports every failed rule, purko\'s first one in Ready, and an Event for each', () => {
    const agent = anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'llm' } }, memory: { scope: 'group', providerRef: 'nope' } })
    const plan = planned(agent, facts(agent, { credentialsSecret: null, memoryProviderFound: false }))
    expect(conditionOf(plan, 'SpecValid')?.message?.split('\n')).toEqual([
      'AG-003: referenced Secret "llm" not found in namespace "ns1"',
      'spec.memory.scope=group requires the app.kubernetes.io/component label (the group key)',
      'spec.memory.providerRef "nope" not found (MemoryProviders live in purko-system)',
    ])
    expect(conditionOf(plan, 'Ready')?.message).toBe('AG-003: referenced Secret "llm" not found in namespace "ns1"')
    expect(plan.transitions.filter((t) => t.record && t.type === 'Warning').map((t) => t.reason))
      .toEqual(['SecretMissing', 'SecretNotFound', 'GroupLabelMissing', 'MemoryProviderNotFound'])
  })

  it.each<[string, Record<string, unknown>, string | undefined, string[]]>([
    ['W1: type and behavior', { type: 'buffer', behavior: 'session' }, undefined, ['spec.memory: both type and behavior set — behavior wins; type is ignored at runtime']],
    ['W1 and W2: vector with a behavior', { type: 'vector', behavior: 'persistent' }, undefined, [
      'spec.memory: both type and behavior set — behavior wins; type is ignored at runtime',
      'spec.memory: behavior overrides the vector PVC path — the persistent-storage mount will not be used']],
    ['W3: namespace scope with full autonomy', { behavior: 'persistent', scope: 'namespace' }, 'full', [
      "spec.memory.scope=namespace with autonomyLevel=full: a low-trust agent's memories may be recalled and acted on by this high-autonomy agent"]],
  ])('%s: a Warning condition (True, SpecWarnings) and a Warning Event per warning; the Agent stays Ready', (_, memory, autonomyLevel, warnings) => {
    const agent = anAgent({ memory, ...(autonomyLevel ? { autonomyLevel } : {}) })
    const plan = planned(agent)
    expect(conditionOf(plan, 'Warning')).toMatchObject({ status: 'True', reason: 'SpecWarnings', message: warnings.join('\n') })
    expect(plan.status?.phase).toBe('Ready')
    expect(plan.transitions.filter((t) => t.reason === 'SpecWarning').map((t) => [t.type, t.record, t.message])).toEqual(warnings.map((w) => ['Warning', true, w]))
  })

  it('drops the Warning condition once the warnings are fixed', () => {
    const warned = applied(anAgent({ memory: { type: 'buffer', behavior: 'session' } }), planned(anAgent({ memory: { type: 'buffer', behavior: 'session' } })))
    const fixed = { ...warned, metadata: { ...warned.metadata, generation: 2 }, spec: { ...warned.spec, memory: { behavior: 'session' } } }
    expect(conditionOf(planned(fixed), 'Warning')).toBeUndefined()
  })
})

describe('planAgent: writes only what changed', () => {
  it('is idempotent: re-planning on its own output writes nothing, even later', () => {
    for (const agent of [
      anAgent(),
      anAgent({ guardrails: { costLimitUSD: 1 } }, {}, { metrics: { totalCostUSD: 3 } }),
      anAgent({ memory: { type: 'vector', behavior: 'persistent', scope: 'group' } }),
    ]) {
      const once = applied(agent, planned(agent))
      expect(planAgent(once, facts(once), LATER)).toBe(UNCHANGED)
    }
  })

  it('sets startTime once, and moves lastActiveTime only with another change', () => {
    const first = applied(anAgent(), planned(anAgent()))
    const edited = { ...first, metadata: { ...first.metadata, generation: 2 } }
    const plan = planned(edited, facts(edited), LATER)
    expect(plan.status).toMatchObject({ startTime: NOW, lastActiveTime: LATER, observedGeneration: 2 })
    expect(conditionOf(plan, 'Ready')?.lastTransitionTime).toBe(NOW)
    expect(plan.transitions.filter((t) => t.record)).toEqual([])
  })

  it('keeps what other writers own: metrics, shuHaRi and their conditions', () => {
    const agent = anAgent({}, {}, {
      metrics: { totalInvocations: 4, totalCostUSD: 0.2 }, shuHaRi: { currentLevel: 'ha' },
      conditions: [{ type: 'ShuHaRiProgression', status: 'True', reason: 'Promoted', lastTransitionTime: NOW }],
    })
    const status = planned(agent).status!
    expect(status.metrics).toEqual({ totalInvocations: 4, totalCostUSD: 0.2 })
    expect(status.shuHaRi).toEqual({ currentLevel: 'ha' })
    expect(status.conditions?.[0]).toMatchObject({ type: 'ShuHaRiProgression', reason: 'Promoted' })
  })

  it('does not repeat a failed check\'s Event while it keeps failing the same way, even as the cost grows', () => {
    const over = anAgent({ guardrails: { costLimitUSD: 1 } }, {}, { metrics: { totalCostUSD: 1.2 } })
    const once = applied(over, planned(over))
    const more = { ...once, status: { ...once.status, metrics: { totalCostUSD: 1.9 } } }
    const plan = planned(more, facts(more), LATER)
    expect(conditionOf(plan, 'QuotaAvailable')?.message).toBe('Total cost $1.90 exceeds limit $1.00')
    expect(plan.transitions.filter((t) => t.record)).toEqual([])
  })

  it('plans the identity writes and sets serviceAccountName when they are due', () => {
    const agent = anAgent()
    const plan = planned(agent, facts(agent, { identity: { serviceAccount: null, defaultServiceAccount: null, role: null, roleBinding: null } }))
    expect(plan.identity.writes.map((w) => `${w.op} ${w.kind}`)).toEqual(['create ServiceAccount', 'create Role', 'create RoleBinding'])
    expect(plan.status?.serviceAccountName).toBe('agent-a-sa')
  })

  it('reports a refused ServiceAccount write as SACreationFailed and forgets the ServiceAccount', () => {
    const agent = anAgent({}, {}, { serviceAccountName: 'agent-a-sa' })
    const plan = planAgent(agent, facts(agent), NOW, { ok: false, reason: 'SACreationFailed', message: 'create serviceaccount: forbidden' })
    if (plan === UNCHANGED) throw new Error('expected changes')
    expect(plan.status).toMatchObject({ phase: 'Error', message: 'create serviceaccount: forbidden' })
    expect(plan.status?.serviceAccountName).toBeUndefined()
    expect(conditionOf(plan, 'Ready')).toMatchObject({ status: 'False', reason: 'SACreationFailed' })
  })
})

describe('planAgent: annotations and finalizers', () => {
  it('resets the cost on kinetic.dev/reset-cost: zero total, costResetTime, the annotation removed, quota back', () => {
    const agent = anAgent({ guardrails: { costLimitUSD: 1 } }, { annotations: { 'kinetic.dev/reset-cost': 'INC-7' } }, { metrics: { totalInvocations: 9, totalCostUSD: 4.5 } })
    const plan = planned(agent)
    expect(plan.costReset).toBe(true)
    expect(plan.status?.metrics).toEqual({ totalInvocations: 9, totalCostUSD: 0, costResetTime: NOW })
    expect(plan.metadata).toEqual({ annotations: { 'kinetic.dev/reset-cost': null } })
    expect(conditionOf(plan, 'QuotaAvailable')).toMatchObject({ status: 'True', reason: 'WithinLimits' })
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'CostReset', record: true, message: 'Total cost reset from $4.50 to $0.00 (kinetic.dev/reset-cost: INC-7)' }))
    expect(planAgent(applied(agent, plan), facts(agent), LATER)).toBe(UNCHANGED)
  })

  it("removes purko's finalizer and keeps the others", () => {
    const agent = anAgent({}, { finalizers: ['purko.io/agent-finalizer', 'example.com/keep'] })
    expect(planned(agent).metadata).toEqual({ finalizers: ['example.com/keep'] })
  })

  it("lets a deleted Agent go: only purko's finalizer is removed, nothing else is written", () => {
    const deleting = anAgent({}, { finalizers: ['purko.io/agent-finalizer'], deletionTimestamp: NOW })
    const plan = planned(deleting)
    expect(plan).toMatchObject({ metadata: { finalizers: [] }, status: null, identity: { writes: [] } })
    expect(planAgent(anAgent({}, { deletionTimestamp: NOW }), facts(deleting), NOW)).toBe(UNCHANGED)
  })
})
