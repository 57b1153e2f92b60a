import type { V1Secret } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/agent-changed/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { AgentSchema, type Agent } from '../../shared/schemas/agent.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team'

function anAgent(name = 'writer', spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): Agent {
  return AgentSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: { name, namespace: NS, ...metadata },
    spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude' }, ...spec },
  })
}

const provider = (name: string, namespace = 'purko-system'): LLMProvider => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name, namespace }, spec: { type: 'anthropic', model: 'claude' },
} as LLMProvider)

/** A EmbeddedKube holding the Agent as a user applied it: no identity yet, no status. */
function kubeWith(agent: Agent, extra: { providers?: LLMProvider[] } = {}): EmbeddedKube {
  return new EmbeddedKube({ agents: [agent], providers: extra.providers ?? [provider('anthropic')], identities: false })
}

const stored = (kube: EmbeddedKube, name = 'writer') => structuredClone(kube.agents.get(`${NS}/${name}`)!)
/** A user's `kubectl apply` of a changed spec: the generation moves. */
function edit(kube: EmbeddedKube, change: (spec: Agent['spec']) => Agent['spec'], name = 'writer'): void {
  const agent = stored(kube, name)
  agent.spec = change(agent.spec)
  agent.metadata.generation = (agent.metadata.generation ?? 1) + 1
  kube.putAgent(agent, { identity: false })
}
const condition = (agent: Agent, type: string) => agent.status?.conditions?.find((c) => c.type === type)

describe('agent-changed', () => {
  it('creates the ServiceAccount, Role and RoleBinding, owned by the Agent, and reports it Ready', async () => {
    const kube = kubeWith(anAgent())
    const res = await deliver(createApp(testDeps(kube)), RESOURCE_ADD, stored(kube))

    expect(res.status).toBe(202)
    expect(kube.writes).toEqual(['create ServiceAccount/agent-writer-sa', 'create Role/agent-writer-role', 'create RoleBinding/agent-writer-binding', 'status Agent/writer'])
    const sa = kube.serviceAccounts.get(`${NS}/agent-writer-sa`)!
    expect(sa.automountServiceAccountToken).toBe(false)
    expect(sa.metadata?.labels).toEqual({ 'purko.io/agent': 'writer', 'purko.io/agent-type': 'executor', 'purko.io/managed-by': 'agent-controller' })
    expect(sa.metadata?.ownerReferences).toEqual([{ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', name: 'writer', uid: stored(kube).metadata.uid, controller: true, blockOwnerDeletion: true }])
    expect(kube.roleBindings.get(`${NS}/agent-writer-binding`)?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'agent-writer-sa', namespace: NS }])
    const agent = stored(kube)
    expect(agent.status).toMatchObject({
      phase: 'Ready', message: 'Agent writer (anthropic/claude) ready with 0 tools', observedGeneration: 1,
      serviceAccountName: 'agent-writer-sa', startTime: '2026-01-01T00:00:00.000Z', lastActiveTime: '2026-01-01T00:00:00.000Z',
    })
    expect(condition(agent, 'Ready')).toMatchObject({ status: 'True', reason: 'Initialized', message: 'Agent ready: SA=agent-writer-sa, 0 tools, image=kinetic-executor:test' })
  })

  it('writes nothing on a second run, and drops the echo of its own status write without an API call', async () => {
    const kube = kubeWith(anAgent())
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))
    const writes = kube.writes.length

    // A redelivery of the original event (no status in it) re-reads and finds nothing to do.
    const again = anAgent()
    again.metadata = { ...stored(kube).metadata }
    expect((await deliver(app, RESOURCE_ADD, again)).status).toBe(202)
    expect(kube.writes.length).toBe(writes)

    const calls = kube.calls
    expect((await deliver(app, RESOURCE_UPDATE, stored(kube))).status).toBe(202)
    expect(kube.calls).toBe(calls)
  })

  it('keeps the identity up to date when the spec changes: Role rules, SA labels, and a stale default SA after switching to a custom one', async () => {
    const kube = kubeWith(anAgent())
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))

    edit(kube, (spec) => ({ ...spec, type: 'reviewer', model: { ...spec.model, credentialsSecretRef: { name: 'llm-key' } } }))
    kube.secrets.set(`${NS}/llm-key`, { metadata: { name: 'llm-key', namespace: NS }, data: { 'api-key': 'eA==' } } as V1Secret)
    kube.writes.length = 0
    await deliver(app, RESOURCE_UPDATE, stored(kube))

    expect(kube.writes).toEqual(['replace ServiceAccount/agent-writer-sa', 'replace Role/agent-writer-role', 'status Agent/writer'])
    expect(kube.serviceAccounts.get(`${NS}/agent-writer-sa`)?.metadata?.labels?.['purko.io/agent-type']).toBe('reviewer')
    expect(kube.roles.get(`${NS}/agent-writer-role`)?.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['llm-key'], verbs: ['get'] },
    ])
    expect(condition(stored(kube), 'CredentialsValid')).toMatchObject({ status: 'True', reason: 'SecretFound', message: 'Credentials loaded from llm-key' })

    edit(kube, (spec) => ({ ...spec, runtime: { serviceAccountName: 'team-bot' } }))
    kube.writes.length = 0
    await deliver(app, RESOURCE_UPDATE, stored(kube))

    expect(kube.writes).toEqual(['create ServiceAccount/team-bot', 'replace RoleBinding/agent-writer-binding', 'delete ServiceAccount/agent-writer-sa', 'status Agent/writer'])
    expect(kube.roleBindings.get(`${NS}/agent-writer-binding`)?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'team-bot', namespace: NS }])
    expect(stored(kube).status?.serviceAccountName).toBe('team-bot')
  })

  it("uses a user's own ServiceAccount without changing or deleting it", async () => {
    const kube = kubeWith(anAgent('writer', { runtime: { serviceAccountName: 'mine' } }))
    kube.serviceAccounts.set(`${NS}/mine`, { metadata: { name: 'mine', namespace: NS, resourceVersion: '1', labels: { team: 'a' } } })
    await deliver(createApp(testDeps(kube)), RESOURCE_ADD, stored(kube))

    expect(kube.writes).toEqual(['create Role/agent-writer-role', 'create RoleBinding/agent-writer-binding', 'status Agent/writer'])
    expect(kube.serviceAccounts.get(`${NS}/mine`)?.metadata?.labels).toEqual({ team: 'a' })
    expect(stored(kube).status?.serviceAccountName).toBe('mine')
  })

  it('answers 400 to a malformed CloudEvent and to data that is not an Agent', async () => {
    const app = createApp(testDeps(new EmbeddedKube()))
    const garbage = await app.request('/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(garbage.status).toBe(400)
    expect((await deliver(app, RESOURCE_UPDATE, { hello: 'world' })).status).toBe(400)
  })

  it('answers 503 during an API outage so the Broker redelivers, then converges', async () => {
    const kube = kubeWith(anAgent()).failNext('createRole', new TransientError('connection refused'))
    const app = createApp(testDeps(kube))

    expect((await deliver(app, RESOURCE_ADD, stored(kube))).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, stored(kube))).status).toBe(202)
    expect(kube.writes).toEqual(['create ServiceAccount/agent-writer-sa', 'create Role/agent-writer-role', 'create RoleBinding/agent-writer-binding', 'status Agent/writer'])
    expect(stored(kube).status?.phase).toBe('Ready')
  })

  it('reports a refused identity write on the Agent (Error, RBACFailed, one Event) instead of redelivering', async () => {
    const refused = Object.assign(new Error('Could not create Role team/agent-writer-role'), {
      cause: { code: 403, body: JSON.stringify({ message: 'roles.rbac.authorization.k8s.io "agent-writer-role" is forbidden: user is attempting to grant RBAC permissions not currently held' }) },
    })
    const kube = kubeWith(anAgent()).failNext('createRole', refused)
    const res = await deliver(createApp(testDeps(kube)), RESOURCE_ADD, stored(kube))

    expect(res.status).toBe(202)
    const agent = stored(kube)
    expect(agent.status?.phase).toBe('Error')
    expect(condition(agent, 'Ready')).toMatchObject({ status: 'False', reason: 'RBACFailed', message: expect.stringContaining('create role: roles.rbac.authorization.k8s.io "agent-writer-role" is forbidden') })
    expect(kube.events.map((e) => e.reason)).toEqual(['RBACFailed'])
  })

  it('removes purko\'s finalizer, also from an Agent being deleted, so the deletion does not hang', async () => {
    const kube = kubeWith(anAgent('writer', {}, { finalizers: ['purko.io/agent-finalizer', 'example.com/other'] }))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))
    expect(stored(kube).metadata.finalizers).toEqual(['example.com/other'])

    const kube2 = kubeWith(anAgent('writer', {}, { finalizers: ['purko.io/agent-finalizer'], deletionTimestamp: '2026-01-01T00:00:00Z' }))
    expect((await deliver(createApp(testDeps(kube2)), RESOURCE_UPDATE, stored(kube2))).status).toBe(202)
    // Its last finalizer gone, the API server completes the deletion.
    expect(kube2.agents.get(`${NS}/writer`)).toBeUndefined()
    expect(kube2.writes).toEqual(['patch Agent/writer'])
  })

  it('resets the recorded cost on the kinetic.dev/reset-cost annotation, then removes it', async () => {
    const kube = kubeWith(anAgent('writer', { guardrails: { costLimitUSD: 1 } }))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))
    const spent = stored(kube)
    await kube.replaceAgentStatus(NS, 'writer', spent.metadata.resourceVersion!, { ...spent.status, metrics: { totalInvocations: 3, totalCostUSD: 1.5 } })
    await deliver(app, RESOURCE_UPDATE, stored(kube))
    expect(condition(stored(kube), 'QuotaAvailable')).toMatchObject({ status: 'False', reason: 'CostLimitExceeded', message: 'Total cost $1.50 exceeds limit $1.00' })
    expect(kube.events.map((e) => e.reason)).toContain('CostLimitExceeded')

    const annotated = stored(kube)
    await kube.patchAgent(NS, 'writer', annotated.metadata.resourceVersion!, { metadata: { annotations: { 'kinetic.dev/reset-cost': 'INC-42' } } })
    await deliver(app, RESOURCE_UPDATE, stored(kube))

    const agent = stored(kube)
    expect(agent.metadata.annotations?.['kinetic.dev/reset-cost']).toBeUndefined()
    expect(agent.status?.metrics).toEqual({ totalInvocations: 3, totalCostUSD: 0, costResetTime: '2026-01-01T00:00:00.000Z' })
    expect(condition(agent, 'QuotaAvailable')).toMatchObject({ status: 'True', reason: 'WithinLimits' })
  })

  it('resets the cost once even when the engine writes metrics between the reset and the annotation removal', async () => {
    const kube = kubeWith(anAgent('writer', { guardrails: { costLimitUSD: 1 } }))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))
    const live = stored(kube)
    await kube.replaceAgentStatus(NS, 'writer', live.metadata.resourceVersion!, { ...live.status, metrics: { totalCostUSD: 3 } })
    await kube.patchAgent(NS, 'writer', stored(kube).metadata.resourceVersion!, { metadata: { annotations: { 'kinetic.dev/reset-cost': 'now' } } })
    // The engine records a step's cost right after agent-changed's reset lands.
    const realReplace = kube.replaceAgentStatus.bind(kube)
    kube.replaceAgentStatus = async (ns, name, rv, status) => {
      const written = await realReplace(ns, name, rv, status)
      kube.replaceAgentStatus = realReplace
      await realReplace(ns, name, written.metadata.resourceVersion!, { ...written.status, metrics: { ...written.status?.metrics, totalCostUSD: 0.25 } })
      return written
    }

    expect((await deliver(app, RESOURCE_UPDATE, stored(kube))).status).toBe(202)
    expect(stored(kube).metadata.annotations?.['kinetic.dev/reset-cost']).toBeUndefined()
    expect(stored(kube).status?.metrics?.totalCostUSD).toBe(0.25)
  })

  it('flips ModelAvailable to True when the LLMProvider appears', async () => {
    const kube = kubeWith(anAgent('writer', { model: { provider: 'team-claude', name: 'claude' } }), { providers: [] })
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))
    expect(condition(stored(kube), 'ModelAvailable')).toMatchObject({ status: 'False', reason: 'ProviderNotFound' })
    expect(stored(kube).status?.phase).toBe('Ready')

    kube.providers.set(`${NS}/team-claude`, provider('team-claude', NS))
    // Any later event about the Agent re-checks while a looked-up check fails.
    await deliver(app, RESOURCE_UPDATE, stored(kube))
    expect(condition(stored(kube), 'ModelAvailable')).toMatchObject({ status: 'True', reason: 'Configured', message: 'Model team-claude/claude configured' })
    expect(kube.events.filter((e) => e.reason === 'ProviderNotFound')).toHaveLength(1)
  })

  it('re-checks the budget when the engine\'s metrics write crosses it, without a GET when it does not', async () => {
    const kube = kubeWith(anAgent('writer', { guardrails: { costLimitUSD: 1 } }))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, stored(kube))

    let live = stored(kube)
    await kube.replaceAgentStatus(NS, 'writer', live.metadata.resourceVersion!, { ...live.status, metrics: { totalCostUSD: 0.5 } })
    const calls = kube.calls
    await deliver(app, RESOURCE_UPDATE, stored(kube))
    expect(kube.calls).toBe(calls)

    live = stored(kube)
    await kube.replaceAgentStatus(NS, 'writer', live.metadata.resourceVersion!, { ...live.status, metrics: { totalCostUSD: 1.25 } })
    await deliver(app, RESOURCE_UPDATE, stored(kube))
    expect(condition(stored(kube), 'QuotaAvailable')).toMatchObject({ status: 'False', message: 'Total cost $1.25 exceeds limit $1.00' })
  })

  describe('the recheck tick (agents-recheck PingSource)', () => {
    it('turns ModelAvailable True once the LLMProvider exists, with no event about the Agent, and leaves healthy Agents alone', async () => {
      const kube = new EmbeddedKube({
        agents: [anAgent('waiting', { model: { provider: 'team-claude', name: 'claude' } }), anAgent('fine')],
        providers: [provider('anthropic')], identities: false,
      })
      const app = createApp(testDeps(kube))
      await deliver(app, RESOURCE_ADD, stored(kube, 'waiting'))
      await deliver(app, RESOURCE_ADD, stored(kube, 'fine'))
      expect(condition(stored(kube, 'waiting'), 'ModelAvailable')).toMatchObject({ status: 'False', reason: 'ProviderNotFound' })

      kube.providers.set(`${NS}/team-claude`, provider('team-claude', NS))
      const writes = kube.writes.length
      expect((await deliver(app, PING, { reason: 'agents-recheck' })).status).toBe(202)
      expect(condition(stored(kube, 'waiting'), 'ModelAvailable')).toMatchObject({ status: 'True', reason: 'Configured' })
      expect(kube.writes.slice(writes)).toEqual(['status Agent/waiting'])
    })

    it('costs the alarm read and one LIST when every Agent is fine, and one Agent\'s outage does not stop the others', async () => {
      const kube = new EmbeddedKube({ agents: [anAgent('a'), anAgent('b')], providers: [provider('anthropic')], identities: false })
      const app = createApp(testDeps(kube))
      // Neither Agent has been reconciled yet (no event reached agent-changed): both are due.
      kube.failNext('getAgent', new TransientError('API server unavailable'))
      expect((await deliver(app, PING, {})).status).toBe(202)
      const phases = ['a', 'b'].map((n) => stored(kube, n).status?.phase)
      expect(phases.filter((p) => p === 'Ready')).toHaveLength(1)

      await deliver(app, PING, {})
      expect(['a', 'b'].map((n) => stored(kube, n).status?.phase)).toEqual(['Ready', 'Ready'])
      // While an Agent needed another look, the alarm rechecked every 5 minutes; now it goes.
      expect(kube.child('PingSource', 'kinetic-system', 'agents-recheck-alarm')).toBeDefined()
      await deliver(app, PING, {})
      expect(kube.child('PingSource', 'kinetic-system', 'agents-recheck-alarm')).toBeUndefined()
      const calls = kube.calls
      const writes = kube.writes.length
      await deliver(app, PING, {})
      expect(kube.calls - calls).toBe(2)
      expect(kube.writes.length).toBe(writes)
    })
  })

  describe('a deleted identity (agent-identities source)', () => {
    const DELETE = 'dev.knative.apiserver.resource.delete'
    const fromIdentities = { kineticsource: 'resources' }

    it('makes a hand-deleted Role again at once', async () => {
      const kube = kubeWith(anAgent())
      const app = createApp(testDeps(kube))
      await deliver(app, RESOURCE_ADD, stored(kube))
      const role = kube.roles.get(`${NS}/agent-writer-role`)!
      kube.roles.delete(`${NS}/agent-writer-role`)

      const writes = kube.writes.length
      expect((await deliver(app, DELETE, { ...role, kind: 'Role' }, fromIdentities)).status).toBe(202)
      expect(kube.writes.slice(writes)).toEqual(['create Role/agent-writer-role'])
      expect(kube.roles.get(`${NS}/agent-writer-role`)?.rules).toEqual(role.rules)
    })

    it('does nothing when the Agent itself is gone (garbage collection took its identity)', async () => {
      const kube = kubeWith(anAgent())
      const app = createApp(testDeps(kube))
      await deliver(app, RESOURCE_ADD, stored(kube))
      const sa = kube.serviceAccounts.get(`${NS}/agent-writer-sa`)!
      kube.agents.clear()
      kube.serviceAccounts.clear()

      const writes = kube.writes.length
      expect((await deliver(app, DELETE, { ...sa, kind: 'ServiceAccount' }, fromIdentities)).status).toBe(202)
      expect(kube.writes.slice(writes)).toEqual([])
    })

    it('ignores an object without the purko.io/agent label, and a delete of the Agent itself', async () => {
      const kube = kubeWith(anAgent())
      const app = createApp(testDeps(kube))
      const calls = kube.calls
      await deliver(app, DELETE, { kind: 'ServiceAccount', metadata: { name: 'other', namespace: NS } }, fromIdentities)
      await deliver(app, DELETE, stored(kube), { kineticsource: 'resources', kind: 'Agent' })
      expect(kube.calls).toBe(calls)
    })
  })
})
